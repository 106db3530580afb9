/**
 * The retry layer (docs/rate-budget.md "Retries", docs/writes.md "Retry safety", spec §7 and §8): a
 * wrapper around one attempt of a request, in the manner of Octokit's retry plugin. `p-retry`
 * supplies the exponential backoff with jitter; the policy here decides WHAT is retried:
 *
 *   'safe'         reads and idempotent writes: 5xx, any ConnectionError, a body that is not JSON
 *   'unsent-only'  non-idempotent writes: only a ConnectionError whose request provably never reached
 *                  the server (`requestSent: false`)
 *   'none'         nothing
 *
 * Every policy retries a 429 (the server did not process the request): `onRateLimit` hears how long
 * nothing should be sent (the `Retry-After`; the rate budget's hook pauses every caller sharing it),
 * then the request goes again. 429s count against their own, larger cap and do not grow the backoff
 * of the other failures. A 429 without `Retry-After` asks for an exponential backoff instead.
 */
import pRetry from 'p-retry';
import type { Logger } from '../logging/logger.ts';
import { BizopsApiError, ConnectionError, MalformedResponseError, RateLimitError, ServerError, type RequestDescription } from './api-errors.ts';
import type { RetryEvent } from './hooks.ts';

/** Which failures of a request may be sent again (module comment). */
export type RetryPolicy = 'safe' | 'unsent-only' | 'none';

/** Retry caps and the backoff bounds (ms); 429s have their own cap. */
export interface RetryOptions {
  /** Retries after failures other than 429, at most. Default 5. */
  maxRetries?: number;
  /** First backoff delay, ms (then doubled each retry, times a random factor in [1, 2)). Default 500. */
  minTimeoutMs?: number;
  /** Longest backoff delay, ms. Default 30000. */
  maxTimeoutMs?: number;
  /** Retries after a 429, at most (a separate cap). Default 10. */
  maxRateLimitRetries?: number;
}

/** Options of `withRetry`: the policy, the request it names, and the hooks it tells. */
export interface WithRetryOptions extends RetryOptions {
  policy: RetryPolicy;
  /** Names the request in log lines and in an abort error. */
  request: RequestDescription;
  signal?: AbortSignal;
  logger?: Logger;
  /** A 429 will be retried after `delayMs`: nothing should be sent before (the rate budget pauses). */
  onRateLimit?: (event: { error: RateLimitError; delayMs: number }) => Promise<void>;
  /** Before each retry. */
  onRetry?: (event: RetryEvent) => void;
}

const DEFAULTS = { maxRetries: 5, minTimeoutMs: 500, maxTimeoutMs: 30_000, maxRateLimitRetries: 10 } as const;

/**
 * Parses a `Retry-After` header (RFC 9110 §10.2.3): delay-seconds (spec §7 sends seconds) or an
 * HTTP date.
 * @param headerValue the header as received; the first value is used when repeated
 * @param nowMs "now" in ms epoch: the response's `Date` (server clock) when known, else our clock
 * @returns milliseconds to wait (>= 0), or undefined when the header is absent or unreadable
 */
export function parseRetryAfter(headerValue: string | readonly string[] | null | undefined, nowMs: number): number | undefined {
  const raw = Array.isArray(headerValue) ? headerValue[0] : headerValue;
  if (typeof raw !== 'string') return undefined;
  const text = raw.trim();
  if (text === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  if (/^-/.test(text)) return undefined;
  const dateMs = Date.parse(text);
  if (!Number.isFinite(dateMs)) return undefined;
  return Math.max(0, dateMs - nowMs);
}

/**
 * True when `error` may be retried under `policy` (429s aside: every policy retries those).
 */
export function isRetryable(error: unknown, policy: RetryPolicy): boolean {
  if (error instanceof RateLimitError) return true;
  if (policy === 'none') return false;
  if (error instanceof ConnectionError) return policy === 'safe' || !error.requestSent;
  if (policy !== 'safe') return false;
  return error instanceof ServerError || error instanceof MalformedResponseError;
}

/** True when a failed attempt may have been processed by the server (anything but unsent or 429). */
function mayHaveBeenProcessed(error: unknown): boolean {
  if (error instanceof ConnectionError) return error.requestSent;
  if (error instanceof RateLimitError) return false;
  return true;
}

/** Exponential backoff with jitter (the same curve p-retry uses), ms. `retry` counts from 0. */
function backoffDelayMs(retry: number, minTimeoutMs: number, maxTimeoutMs: number): number {
  return Math.min(maxTimeoutMs, Math.round(minTimeoutMs * 2 ** retry * (1 + Math.random())));
}

function reasonOf(error: unknown): string {
  if (error instanceof ConnectionError) return `${error.code ?? 'connection error'}`;
  if (error instanceof BizopsApiError) return error.status !== undefined ? `HTTP ${error.status}` : error.name;
  return error instanceof Error ? error.name : 'error';
}

/**
 * Runs `operation` (one attempt: acquire the budget, send, map the response) until it succeeds or
 * the policy gives up.
 * @returns the operation's result
 * @throws the last attempt's error when it is not retryable or the caps are spent; a `ConnectionError`
 *   of code `ABORTED` when `signal` aborts (its `requestSent` is true when any attempt may have
 *   been processed by the server)
 */
export async function withRetry<T>(operation: (attempt: number) => Promise<T>, options: WithRetryOptions): Promise<T> {
  const maxRetries = options.maxRetries ?? DEFAULTS.maxRetries;
  const minTimeoutMs = options.minTimeoutMs ?? DEFAULTS.minTimeoutMs;
  const maxTimeoutMs = options.maxTimeoutMs ?? DEFAULTS.maxTimeoutMs;
  const maxRateLimitRetries = options.maxRateLimitRetries ?? DEFAULTS.maxRateLimitRetries;
  const { policy, signal, logger, request } = options;
  let rateLimitRetries = 0;
  let processed = false;

  const attempt = async (attemptNumber: number): Promise<T> => {
    try {
      return await operation(attemptNumber);
    } catch (error) {
      if (mayHaveBeenProcessed(error)) processed = true;
      throw error;
    }
  };

  const announce = (event: RetryEvent): void => {
    logger?.warn(
      {
        method: request.method,
        path: request.path,
        attempt: event.attempt,
        delayMs: event.delayMs,
        reason: reasonOf(event.error),
        error: event.error instanceof Error ? event.error.message : String(event.error),
      },
      event.rateLimited ? 'rate limited (429): pausing the rate budget, then retrying' : 'API request failed: retrying',
    );
    options.onRetry?.(event);
  };

  try {
    return await pRetry(attempt, {
      // Our own caps decide (shouldRetry); p-retry supplies the backoff curve, jitter and abort.
      retries: Number.POSITIVE_INFINITY,
      factor: 2,
      minTimeout: minTimeoutMs,
      maxTimeout: maxTimeoutMs,
      randomize: true,
      signal,
      // A 429 neither spends a normal retry nor grows the backoff: the budget's pause is the wait.
      shouldConsumeRetry: ({ error }) => !(error instanceof RateLimitError),
      shouldRetry: async ({ error, attemptNumber, retriesConsumed, retryDelay }) => {
        if (error instanceof RateLimitError) {
          if (rateLimitRetries >= maxRateLimitRetries) return false;
          const retryAfterMs = error.retryAfter !== undefined && error.retryAfter > 0 ? Math.round(error.retryAfter * 1000) : undefined;
          const delayMs = retryAfterMs ?? backoffDelayMs(rateLimitRetries, minTimeoutMs, maxTimeoutMs);
          rateLimitRetries++;
          await options.onRateLimit?.({ error, delayMs });
          announce({ attempt: attemptNumber, error, delayMs, rateLimited: true });
          return true;
        }
        if (!isRetryable(error, policy) || retriesConsumed >= maxRetries) return false;
        announce({ attempt: attemptNumber, error, delayMs: retryDelay, rateLimited: false });
        return true;
      },
    });
  } catch (error) {
    if (signal?.aborted) {
      if (error instanceof ConnectionError && error.code === 'ABORTED' && error.requestSent === processed) throw error;
      throw new ConnectionError({ message: 'request aborted (ABORTED)', code: 'ABORTED', requestSent: processed, request, cause: signal.reason });
    }
    throw error;
  }
}
