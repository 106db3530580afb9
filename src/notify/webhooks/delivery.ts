/**
 * One webhook delivery attempt: a signed POST with undici, classified into success, retryable
 * failure, or "gone" (Standard Webhooks delivery rules; spec §6 leaves outbound events unspecified).
 *
 * Rules:
 *   - only a 2xx answer is success; the body is discarded
 *   - redirects are NOT followed: a 3xx is a failure (the receiver must be configured with its final URL)
 *   - 410 Gone means the receiver wants no more deliveries: `gone: true` (the dispatcher disables the endpoint)
 *   - every other answer, a refused connection, a reset or a timeout is a retryable failure, with the
 *     receiver's `Retry-After` (seconds or HTTP-date) when it sent one
 */
import { request, type Dispatcher } from 'undici';
import { parseRetryAfter } from '../../client/retry.ts';
import type { WebhookMessage, WebhookSigner } from './signing.ts';

/** Default time limit of one attempt, ms: connecting, sending and receiving the answer's headers and body. */
export const DEFAULT_DELIVERY_TIMEOUT_MS = 15_000;

/** Options of one `deliverWebhook` attempt. */
export interface DeliveryOptions {
  /** Time limit of the attempt, ms (default 15000). */
  timeoutMs?: number;
  /** The undici dispatcher (connection pool); the global one by default. */
  dispatcher?: Dispatcher;
  /** Aborts the attempt (shutdown); the outcome then has `aborted: true` and must not count as a failure. */
  signal?: AbortSignal;
  /** Clock for the signature timestamp and Retry-After dates (tests). */
  now?: () => Date;
}

/** A delivery the receiver answered with a 2xx. */
export interface DeliverySuccess {
  ok: true;
  /** The 2xx status. */
  status: number;
  durationMs: number;
}

/** A delivery that failed: a non-2xx answer (3xx included), no answer, or an abort; see the module rules. */
export interface DeliveryFailure {
  ok: false;
  /** The HTTP status, or null when there was no answer (refused, reset, timeout, aborted). */
  status: number | null;
  /** One line for logs and `webhooks list`, e.g. `HTTP 503`, `redirect 302 not followed`, `ECONNREFUSED ...`. */
  error: string;
  /** The receiver's Retry-After as a delay in ms, or null. */
  retryAfterMs: number | null;
  /** True on 410 Gone: stop delivering to this endpoint. */
  gone: boolean;
  /** True when `signal` aborted the attempt (shutdown), not the receiver. */
  aborted: boolean;
  durationMs: number;
}

/** What `deliverWebhook` returns; narrow on `ok`. */
export type DeliveryOutcome = DeliverySuccess | DeliveryFailure;

/**
 * Sends one signed attempt of `message` to `url`. Never throws for network or HTTP errors: they are
 * returned as a `DeliveryFailure`.
 */
export async function deliverWebhook(url: string, message: WebhookMessage, signer: WebhookSigner, options: DeliveryOptions = {}): Promise<DeliveryOutcome> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_DELIVERY_TIMEOUT_MS;
  const now = options.now ?? (() => new Date());
  const started = performance.now();
  const elapsed = () => Math.round((performance.now() - started) * 10) / 10;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  try {
    const response = await request(url, {
      method: 'POST',
      headers: signer.sign(message, now()),
      body: message.body,
      signal,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
    });
    // Drain (bounded) so the keep-alive connection can be reused; the content is not needed.
    await response.body.dump({ limit: 64 * 1024, signal }).catch(() => undefined);
    const status = response.statusCode;
    if (status >= 200 && status < 300) return { ok: true, status, durationMs: elapsed() };
    const header = (name: string) => response.headers[name];
    let error = `HTTP ${status}`;
    if (status >= 300 && status < 400) {
      const location = header('location');
      error = `redirect ${status} not followed${location ? ` (Location: ${String(location)})` : ''}; configure the final URL`;
    } else if (status === 410) {
      error = 'HTTP 410 Gone: the receiver asked for no more deliveries';
    }
    return {
      ok: false,
      status,
      error,
      retryAfterMs: parseRetryAfter(header('retry-after'), now().getTime()) ?? null,
      gone: status === 410,
      aborted: false,
      durationMs: elapsed(),
    };
  } catch (error) {
    const aborted = options.signal?.aborted === true;
    const timedOut = !aborted && timeout.aborted;
    return {
      ok: false,
      status: null,
      error: aborted ? 'aborted: the dispatcher is stopping' : timedOut ? `timed out after ${timeoutMs} ms` : describeNetworkError(error),
      retryAfterMs: null,
      gone: false,
      aborted,
      durationMs: elapsed(),
    };
  }
}

function describeNetworkError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${typeof code === 'string' ? `${code} ` : ''}${error.message}${cause}`.trim();
}
