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

/**
 * One granted slot: the right to send one request. Its answer's headers go back with
 * `observe(observation, slot)`; a request that got no answer gives it back with `release`.
 * Until then the slot counts as in flight (it may still be counted by the server).
 */
export interface RateSlot {
  /** Unique within the budget. */
  readonly id: string;
  readonly priority: Priority;
}

/** How a slot ended without an answer (`RateBudget.release`). */
export interface ReleaseOutcome {
  /**
   * False when the request provably never left (a later `beforeRequest` hook threw, the connection
   * was refused): the slot is returned. True when it may have reached the server: the slot stays
   * spent until every window it could have been counted in has ended.
   */
  requestSent: boolean;
}

/** What the budget would do now, without taking a slot (`RateBudget.peek`): for readiness probes and status. */
export interface BudgetPeek {
  /** Slots that could be granted now (0 when spent or paused). */
  available: number;
  /** When a spent or paused budget grants again (ms epoch, this process's clock); now when `available` > 0. */
  nextSlotAtMs: number;
  /** A 429's pause is in force until then (ms epoch), if any. */
  pausedUntilMs: number | undefined;
  /** Requests granted and not yet answered (every process, for a shared budget). */
  inFlight: number;
  /** Whether the server's own window is followed (an answer with Remaining and Reset was seen), else the sliding log. */
  followingServerWindow: boolean;
}

/** The contract every rate budget keeps (spec §8, docs/rate-budget.md); the API client calls it around every attempt. */
export interface RateBudget {
  /**
   * Waits until one request of `priority` may be sent, then takes that slot and returns it. Sends
   * nothing while the budget is spent or paused by a 429. Rejects with the signal's reason when
   * `signal` aborts.
   */
  acquire(priority: Priority, signal?: AbortSignal, options?: AcquireOptions): Promise<RateSlot>;
  /**
   * Feeds an answer's rate-limit headers back in and ends `slot` (when given). Best-effort: never
   * waits on I/O and never throws (a shared budget sends it to Redis in the background).
   */
  observe(observation: RateLimitObservation, slot?: RateSlot): void;
  /** Ends a slot whose request got no answer (see `ReleaseOutcome`). Best-effort like `observe`. */
  release(slot: RateSlot, outcome: ReleaseOutcome): void;
  /** A 429's `Retry-After`: nothing is sent by anyone sharing this budget before `untilMs` (ms epoch). */
  pauseUntil(untilMs: number): void | Promise<void>;
  /** What the budget would do now, without taking a slot or waiting for one. */
  peek(): Promise<BudgetPeek>;
  /** Counters for metrics and benchmarks. */
  stats(): RateBudgetStats;
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
