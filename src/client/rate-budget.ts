/**
 * The rate budget contract (docs/rate-budget.md, spec §8). The API client asks the budget before
 * every attempt (its `rateBudgetHooks` layer, hooks.ts); implementations decide when. Two implementations share this contract:
 * `LocalRateBudget` (one process, in memory) and the Redis-backed budget shared by every process of
 * a deployment (src/client/redis-rate-budget.ts).
 */

/**
 * Who is asking. A free slot goes to the highest priority waiting:
 * `write` first, then `incremental` polls, then `backfill` (which also covers reconciliation).
 */
export type Priority = 'write' | 'incremental' | 'backfill';

/** Every `Priority`, highest first. */
export const PRIORITIES: readonly Priority[] = ['write', 'incremental', 'backfill'];

/** What a response's rate-limit headers said (spec §8). */
export interface RateLimitObservation {
  /** `X-RateLimit-Limit`: maximum requests per window. */
  limit?: number;
  /** `X-RateLimit-Remaining`: requests left in the current window. */
  remaining?: number;
  /** `X-RateLimit-Reset`, converted to milliseconds since the epoch. */
  resetAtMs?: number;
  /** The response's `Date` header in ms since the epoch, when present (server clock). */
  serverNowMs?: number;
}

/** Per-call options of `RateBudget.acquire`. */
export interface AcquireOptions {
  /**
   * The slot is for a retry of a request that already waited its turn: it goes to the head of its
   * priority's queue (after earlier retries), never ahead of a higher priority.
   */
  retry?: boolean;
}

/** The contract every rate budget keeps (spec §8, docs/rate-budget.md); the API client calls it around every attempt. */
export interface RateBudget {
  /**
   * Waits until one request of `priority` may be sent, then takes that slot. Sends nothing while the
   * budget is spent or paused by a 429. Rejects with the signal's reason when `signal` aborts.
   */
  acquire(priority: Priority, signal?: AbortSignal, options?: AcquireOptions): Promise<void>;
  /** Feeds the server's view back in: a window with `remaining: 0` is not used again before its reset. */
  observe(observation: RateLimitObservation): void | Promise<void>;
  /** A 429's `Retry-After`: nothing is sent by anyone sharing this budget before `untilMs` (ms epoch). */
  pauseUntil(untilMs: number): void | Promise<void>;
  /** Counters for metrics and benchmarks. */
  stats(): RateBudgetStats;
  /**
   * Without waiting or taking a slot: how long nothing may be sent because of a 429 pause or a
   * server window announced spent (`remaining: 0`), ms; 0 when not paused. The readiness probe reads it.
   */
  pausedForMs?(): number | Promise<number>;
  close?(): Promise<void>;
}

/** Counters every rate budget keeps, for metrics and benchmarks. */
export interface RateBudgetStats {
  /** Slots granted, by priority. */
  granted: Record<Priority, number>;
  /** Total time callers spent waiting in `acquire`, ms. */
  waitedMs: number;
  /** Pauses applied because of a 429. */
  pauses: number;
}
