/**
 * The hook points of the API client, in the manner of Octokit's `hook.before/after/error/wrap`:
 * layers are sets of hooks registered around the one request function (http-transport.ts), never code in
 * callers. The client runs, for every attempt of a request:
 *
 *   beforeRequest   every layer in order (client layers, then the request's own), then the HTTP send
 *   afterResponse   every layer, with any response (2xx or not), before its status is mapped
 *   onNoResponse    when the attempt got no answer: a later `beforeRequest` threw (nothing sent), or
 *                   the request failed without a response (it may have reached the server)
 *   onRateLimit     when a 429 will be retried: how long nothing should be sent
 *   onRetry         before each retry (logs, counters)
 *
 * The rate budget is such a layer (`rateBudgetHooks`: a slot before each attempt, the server's
 * headers after it, a pause on a 429), and so is anything a caller needs at the moment a request
 * goes out: the write worker marks a write `sending` in a `beforeRequest` it passes with that one
 * request, after the budget granted the slot and before the bytes leave.
 */
import type { RateLimitError, RequestDescription } from './api-errors.ts';
import type { HttpResponse } from './http-transport.ts';
import type { Priority, RateBudget, RateLimitObservation, RateSlot } from './rate-budget.ts';

/** What a hook knows of the attempt it runs around. */
export interface AttemptContext {
  /** `GET /transactions?limit=100&offset=200`: how the request is named in logs and errors. */
  request: RequestDescription;
  priority: Priority;
  /** The token NAME the request acts with (config `tokens`), never the token. */
  token: string;
  /** Which attempt this is, from 1; a retry is any attempt above 1. */
  attempt: number;
  /** The caller's signal: aborting it cancels the wait and the request. */
  signal: AbortSignal | undefined;
}

/** A response as `afterResponse` sees it: any status, the rate-limit headers already parsed (spec §8). */
export interface ObservedResponse {
  status: number;
  headers: HttpResponse['headers'];
  rateLimit: RateLimitObservation;
}

/** What `onRetry` hears before each retry. */
export interface RetryEvent {
  /** The attempt that failed, from 1. */
  attempt: number;
  error: unknown;
  /** How long before the next attempt, ms (for a 429: the pause asked of `onRateLimit`). */
  delayMs: number;
  /** True when the failure was a 429. */
  rateLimited: boolean;
}

/** One layer of the client: any of the four hook points. Each may be async; a throw from `beforeRequest` cancels the attempt. */
export interface RequestHooks {
  beforeRequest?(context: AttemptContext): void | Promise<void>;
  afterResponse?(context: AttemptContext, response: ObservedResponse): void | Promise<void>;
  /** The attempt ended without an answer; `requestSent` false when it provably never left. Must not throw. */
  onNoResponse?(context: AttemptContext, event: { error: unknown; requestSent: boolean }): void;
  onRateLimit?(context: AttemptContext, event: { error: RateLimitError; delayMs: number }): void | Promise<void>;
  onRetry?(context: AttemptContext, event: RetryEvent): void;
}

/** Which rate budget a request spends: one for all (company scope), or one per token NAME (`rateLimit.scope: token`). */
export type BudgetSource = RateBudget | ((tokenName: string) => RateBudget);

/**
 * The rate budget as a layer (docs/rate-budget.md): before each attempt, a slot of the request's
 * priority from the budget of its token (a retry goes to the head of its priority's queue); after
 * each response, the server's rate-limit headers end the slot (best-effort: never waits on Redis);
 * an attempt without an answer releases it; on a 429, a pause of every process sharing the budget.
 * @param options.waitSignal cancels waits for a slot only, never a request already sent (a closing
 *   write worker must not turn a write in flight into an ambiguous one)
 */
export function rateBudgetHooks(source: BudgetSource, options: { waitSignal?: AbortSignal } = {}): RequestHooks {
  const budgetFor = (context: AttemptContext): RateBudget => (typeof source === 'function' ? source(context.token) : source);
  /** The slot each attempt holds, keyed by the attempt's context object. */
  const slots = new WeakMap<AttemptContext, RateSlot>();
  return {
    async beforeRequest(context) {
      const signals = [context.signal, options.waitSignal].filter((signal): signal is AbortSignal => signal !== undefined);
      const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
      const slot = await budgetFor(context).acquire(context.priority, signal, { retry: context.attempt > 1 });
      if (slot) slots.set(context, slot);
    },
    afterResponse(context, response) {
      const slot = slots.get(context);
      slots.delete(context);
      budgetFor(context).observe(response.rateLimit, slot);
    },
    onNoResponse(context, event) {
      const slot = slots.get(context);
      slots.delete(context);
      if (slot) budgetFor(context).release(slot, { requestSent: event.requestSent });
    },
    async onRateLimit(context, event) {
      await budgetFor(context).pauseUntil(Date.now() + event.delayMs);
    },
  };
}
