/**
 * One webhook delivery attempt: a signed POST with undici, classified into success, retryable
 * failure, or "gone" (Standard Webhooks delivery rules; spec §6 leaves outbound events unspecified).
 *
 * Rules:
 *   - only a 2xx answer is success; the first 1 KiB of the answer's body is kept for the attempt's
 *     record (`webhooks attempts`), the rest is read and discarded
 *   - redirects are NOT followed: a 3xx is a failure (the receiver must be configured with its final URL)
 *   - 410 Gone means the receiver wants no more deliveries: `gone: true` (the dispatcher disables the endpoint)
 *   - every other answer, a refused connection, a reset or a timeout is a retryable failure, with the
 *     receiver's `Retry-After` (seconds or HTTP-date) when it sent one
 *   - the URL is used whole: its query as configured, its user and password (`https://user:pass@...`)
 *     as `Authorization: Basic` (undici would drop them); they are masked in the outcome's error and
 *     answer, which are kept and shown
 */
import { request, type Dispatcher } from 'undici';
import { parseRetryAfter } from '../../client/retry.ts';
import { maskSecrets } from '../../logging/mask.ts';
import { urlCredentials } from '../../logging/mask-url.ts';
import { describeError, type DeliveryOutcome } from '../delivery/sink-kind.ts';
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

/** Bytes of an answer's body kept with an attempt (`DeliveryOutcome.response`). */
export const RESPONSE_EXCERPT_BYTES = 1024;

/** Most bytes of an answer's body read (to reuse the connection); a longer body closes it. */
const MAX_DRAIN_BYTES = 64 * 1024;

/** What `deliverWebhook` returns (src/notify/delivery/sink-kind.ts); narrow on `ok`. */
export type { DeliveryFailure, DeliveryOutcome, DeliverySuccess } from '../delivery/sink-kind.ts';

/**
 * Sends one signed attempt of `message` to `url`. Never throws for network or HTTP errors: they are
 * returned as a `DeliveryFailure`.
 */
export async function deliverWebhook(url: string, message: WebhookMessage, signer: WebhookSigner, options: DeliveryOptions = {}): Promise<DeliveryOutcome> {
  return withoutUrlCredentials(await sendOnce(url, message, signer, options), url);
}

/** `deliverWebhook` before its outcome's text is masked. */
async function sendOnce(url: string, message: WebhookMessage, signer: WebhookSigner, options: DeliveryOptions): Promise<DeliveryOutcome> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_DELIVERY_TIMEOUT_MS;
  const now = options.now ?? (() => new Date());
  const started = performance.now();
  const elapsed = () => Math.round((performance.now() - started) * 10) / 10;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  try {
    const target = withBasicAuthentication(url);
    const response = await request(target.url, {
      method: 'POST',
      headers: { ...signer.sign(message, now()), ...target.headers },
      body: message.body,
      signal,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
    });
    // Read (bounded) so the keep-alive connection can be reused; the first 1 KiB is kept.
    const excerpt = await readExcerpt(response.body);
    const status = response.statusCode;
    if (status >= 200 && status < 300) return { ok: true, status, durationMs: elapsed(), response: excerpt };
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
      response: excerpt,
    };
  } catch (error) {
    const aborted = options.signal?.aborted === true;
    const timedOut = !aborted && timeout.aborted;
    return {
      ok: false,
      status: null,
      error: aborted ? 'aborted: the dispatcher is stopping' : timedOut ? `timed out after ${timeoutMs} ms` : describeError(error),
      retryAfterMs: null,
      gone: false,
      aborted,
      durationMs: elapsed(),
      response: null,
    };
  }
}

/** The URL to request and its `Authorization: Basic` header when it holds a user or a password (then taken out of the URL). */
function withBasicAuthentication(url: string): { url: string; headers: Record<string, string> } {
  if (!url.includes('@')) return { url, headers: {} };
  const parsed = new URL(url);
  if (parsed.username === '' && parsed.password === '') return { url, headers: {} };
  const credentials = `${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}`;
  parsed.username = '';
  parsed.password = '';
  return { url: parsed.toString(), headers: { authorization: `Basic ${Buffer.from(credentials).toString('base64')}` } };
}

/**
 * The outcome with the URL's credentials (`urlCredentials`: the whole URL, its user, password and
 * query values) masked in its error and the receiver's answer, which are stored and shown
 * (`webhooks attempts`, the console): a redirect's `Location` or an answer echoing the token
 * must not carry it there.
 */
function withoutUrlCredentials(outcome: DeliveryOutcome, url: string): DeliveryOutcome {
  const secrets = urlCredentials(url);
  if (secrets.length === 0) return outcome;
  const response = outcome.response === null ? null : maskSecrets(outcome.response, secrets);
  return outcome.ok ? { ...outcome, response: response ?? '' } : { ...outcome, error: maskSecrets(outcome.error, secrets), response };
}

/**
 * The first `RESPONSE_EXCERPT_BYTES` of a body, reading on to at most 64 KiB so that the connection
 * can be reused (a longer body, or one that fails midway, is abandoned: the connection closes).
 */
async function readExcerpt(body: AsyncIterable<Buffer> & { destroy(): unknown }): Promise<string> {
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let read = 0;
  try {
    for await (const chunk of body) {
      if (keptBytes < RESPONSE_EXCERPT_BYTES) {
        const part = chunk.subarray(0, RESPONSE_EXCERPT_BYTES - keptBytes);
        kept.push(part);
        keptBytes += part.length;
      }
      read += chunk.length;
      if (read > MAX_DRAIN_BYTES) {
        body.destroy();
        break;
      }
    }
  } catch {
    // The answer's status already counts; a body cut short only shortens the excerpt.
  }
  return Buffer.concat(kept).toString('utf8');
}
