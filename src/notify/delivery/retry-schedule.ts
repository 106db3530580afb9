/**
 * When to retry a failed webhook delivery: the Standard Webhooks retry schedule
 * (https://www.standardwebhooks.com/ "Retry schedule"), with jitter, and the receiver's `Retry-After`.
 */

/**
 * Delays of the Standard Webhooks schedule, ms: attempt 1 immediately, then 5 s, 5 min, 30 min, 2 h,
 * 5 h, 10 h, 10 h after each consecutive failure: 8 attempts, about 27.5 h, after which the
 * dispatcher gives the event up (see `nextRetryDelayMs`).
 */
export const STANDARD_RETRY_SCHEDULE_MS: readonly number[] = [0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];

/** How delivery retries are spaced (see `nextRetryDelayMs`); times in ms. */
export interface WebhookRetrySchedule {
  /** Delay before attempt n+1 after n consecutive failures is `scheduleMs[n]` (the last entry repeats). Tests scale it down. */
  scheduleMs: readonly number[];
  /** Each delay is spread uniformly by ± this fraction (0.1 = ±10 %) so endpoints recovering together are not hit in lockstep. */
  jitterRatio: number;
  /** Upper bound on a receiver's `Retry-After`, ms (a bogus huge value must not stall an endpoint for ever). */
  maxRetryAfterMs: number;
  /** Random source in [0, 1) for jitter; injectable for tests. */
  random: () => number;
}

/** The production schedule: the Standard Webhooks schedule, ±10 % jitter, Retry-After capped at 24 h. */
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE: WebhookRetrySchedule = {
  scheduleMs: STANDARD_RETRY_SCHEDULE_MS,
  jitterRatio: 0.1,
  maxRetryAfterMs: 24 * 3_600_000,
  random: Math.random,
};

/**
 * Checks a schedule.
 * @throws Error naming `scheduleMs` when it is empty or holds a negative or non-finite delay
 */
export function validateSchedule(scheduleMs: readonly number[]): readonly number[] {
  if (scheduleMs.length === 0) throw new Error('scheduleMs: must hold at least one delay (ms)');
  scheduleMs.forEach((delay, index) => {
    if (!Number.isFinite(delay) || delay < 0) throw new Error(`scheduleMs[${index}]: must be a non-negative number of milliseconds, got ${String(delay)}`);
  });
  return scheduleMs;
}

/**
 * How long to wait before the next attempt, ms, after `failures` consecutive failures (≥ 1).
 *
 * The schedule's entry for that many failures, or its last entry past the end. The dispatcher
 * makes `scheduleMs.length` attempts by default (8 in production) and then gives the event up
 * (recorded in `webhook_failed_deliveries`, re-sent by `webhooks replay --failed`), so the last
 * entry repeats only for a dispatcher configured with more attempts (`maxAttempts`).
 *
 * Jitter spreads the delay by ± `jitterRatio`; the receiver's `Retry-After` wins when it asks for
 * longer (the maximum of the two is taken, capped at `maxRetryAfterMs`).
 */
export function nextRetryDelayMs(failures: number, retryAfterMs: number | null, schedule: WebhookRetrySchedule): number {
  const delays = schedule.scheduleMs;
  const index = Math.min(Math.max(failures, 1), delays.length - 1);
  const base = delays[index] ?? delays.at(-1) ?? 0;
  const jittered = base * (1 + schedule.jitterRatio * (2 * schedule.random() - 1));
  const asked = retryAfterMs === null ? 0 : Math.min(retryAfterMs, schedule.maxRetryAfterMs);
  return Math.max(0, Math.round(Math.max(jittered, asked)));
}

/**
 * How often a target taken for down (a streak of failed attempts, sink-delivery.ts
 * `STALL_AFTER_FAILURES`) is probed, ms: a tenth of how long it has been failing, within
 * `[minMs, maxMs]`. A receiver down for a minute is probed every 6 s, one down for five minutes or
 * five days every 30 s: when it answers again it gets new events within `maxMs` (plus jitter),
 * without a command. How many of its attempts failed does not count, only for how long.
 */
export interface ProbeIntervals {
  /** The shortest pause, ms (the first ones after the target is taken for down). */
  minMs: number;
  /** The longest pause, ms: a target that answers again is served within it. */
  maxMs: number;
}

/** Probes every 5 s to 30 s. */
export const DEFAULT_PROBE_INTERVALS: ProbeIntervals = { minMs: 5_000, maxMs: 30_000 };

/**
 * The pause before the next probe of a target failing for `failingForMs`, ms: `failingForMs / 10`
 * within the bounds, spread by the schedule's jitter. A `Retry-After` the receiver sent wins when it
 * asks for longer, up to twice `maxMs` (60 s by default): a receiver's deploy that answers 503 with
 * `Retry-After: 3600` is still served within a minute of answering again (its events' own retries
 * obey the full Retry-After).
 */
export function probeDelayMs(failingForMs: number, retryAfterMs: number | null, bounds: ProbeIntervals, schedule: WebhookRetrySchedule): number {
  const base = Math.min(bounds.maxMs, Math.max(bounds.minMs, failingForMs / 10));
  const jittered = base * (1 + schedule.jitterRatio * (2 * schedule.random() - 1));
  const asked = retryAfterMs === null ? 0 : Math.min(retryAfterMs, schedule.maxRetryAfterMs, 2 * bounds.maxMs);
  return Math.max(0, Math.round(Math.max(jittered, asked)));
}
