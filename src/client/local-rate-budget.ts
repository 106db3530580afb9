/**
 * `LocalRateBudget`: the rate budget (docs/rate-budget.md, spec §8) for one process, in memory.
 *
 * It paces BEFORE the limit instead of reacting to 429s:
 *  - a sliding-window log of grant times guarantees that no span of `windowMs + safetyMarginMs` holds
 *    more than `limit` grants (the margin absorbs network latency between our clock and the server's);
 *  - the server's own view is obeyed: after `observe({ remaining: 0, resetAtMs })` nothing is granted
 *    until that reset, and a positive `remaining` is counted down by each grant in the same window;
 *  - `pauseUntil(ms)` (a 429's `Retry-After`) blocks every `acquire` until then.
 *
 * Waiters are served strictly by priority (`write` > `incremental` > `backfill`), first come first
 * served within a priority, except that a retry goes to the head of its priority's queue (after
 * earlier retries). `acquire` honours an AbortSignal.
 */
import { PRIORITIES, type AcquireOptions, type Priority, type RateBudget, type RateBudgetStats, type RateLimitObservation } from './rate-budget.ts';

/** Construction options of a LocalRateBudget: `limit` requests per `windowMs` ms, plus a latency margin (ms). */
export interface LocalRateBudgetOptions {
  /** Requests allowed per window (spec §8: 60 per minute by default). Positive integer. */
  limit: number;
  /** Window length, ms. Default 60000. Tests scale it down. */
  windowMs?: number;
  /**
   * Added to the window (and to a server-announced reset) to cover network latency, ms.
   * Default: 2% of the window, at least 50 ms and at most 250 ms.
   */
  safetyMarginMs?: number;
}

/** `stats()` of a `LocalRateBudget`: the contract's counters plus what is waiting now. */
export interface LocalRateBudgetStats extends RateBudgetStats {
  /** Callers waiting in `acquire`, by priority. */
  waiting: Record<Priority, number>;
  /** Grants inside the current sliding window. */
  grantedInWindow: number;
  /** When sends may resume after a 429 or a spent server window (ms epoch), if that is in the future. */
  blockedUntilMs: number | undefined;
  /** Estimated server clock − our clock, ms (see `LocalRateBudget.serverClockOffsetMs`). */
  serverClockOffsetMs: number | undefined;
}

interface Waiter {
  priority: Priority;
  /** A retry: queued ahead of the first waiter that is not one. */
  retry: boolean;
  enqueuedAtMs: number;
  resolve: () => void;
  reject: (reason: unknown) => void;
  cleanup: () => void;
}

/** The server's allowance for its current window, translated to our clock. */
interface ServerWindow {
  /** `X-RateLimit-Reset` as the server sent it (ms epoch, server clock): identifies the window. */
  serverResetAtMs: number | undefined;
  /** When the window ends on our clock, margin included (ms epoch). */
  endsAtMs: number;
  /** Requests the server will still accept in it, minus our grants since. */
  remaining: number;
}

/** Clock samples kept: enough for a sample near a whole second, few enough to follow a clock step. */
const CLOCK_SAMPLES_KEPT = 64;

function positiveInteger(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
    throw new RangeError(`LocalRateBudget option ${field} must be a positive integer, got ${String(value)}`);
  }
  return value;
}

/** The in-memory rate budget of one process (spec §8), pacing before the limit as this module's header describes. */
export class LocalRateBudget implements RateBudget {
  readonly limit: number;
  readonly windowMs: number;
  readonly safetyMarginMs: number;

  /** Grant times (ms epoch), ascending; entries older than the effective window are pruned. */
  private readonly grantLog: number[] = [];
  private readonly queues: Record<Priority, Waiter[]> = { write: [], incremental: [], backfill: [] };
  private pausedUntilMs = 0;
  private serverWindow: ServerWindow | undefined;
  /** The server's `X-RateLimit-Limit` when lower than ours. */
  private serverLimit: number | undefined;
  /** Recent samples of (server Date − our clock), ms; see `serverClockOffsetMs`. */
  private readonly clockSamples: number[] = [];
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly counters: RateBudgetStats = { granted: { write: 0, incremental: 0, backfill: 0 }, waitedMs: 0, pauses: 0 };

  /** @throws RangeError when `limit`, `windowMs` or `safetyMarginMs` is not a valid number. */
  constructor(options: LocalRateBudgetOptions) {
    this.limit = positiveInteger(options.limit, 'limit');
    this.windowMs = positiveInteger(options.windowMs ?? 60_000, 'windowMs');
    const margin = options.safetyMarginMs ?? Math.min(250, Math.max(50, Math.round(this.windowMs * 0.02)));
    if (!Number.isFinite(margin) || margin < 0) {
      throw new RangeError(`LocalRateBudget option safetyMarginMs must be a number >= 0, got ${String(margin)}`);
    }
    this.safetyMarginMs = margin;
  }

  /** The span no more than `limit` grants may share, ms. */
  private get effectiveWindowMs(): number {
    return this.windowMs + this.safetyMarginMs;
  }

  private get effectiveLimit(): number {
    return Math.min(this.limit, this.serverLimit ?? this.limit);
  }

  /**
   * Waits for a slot, then takes it. Rejects with `signal.reason` when the signal aborts first, and
   * with an Error when the budget is closed.
   */
  acquire(priority: Priority, signal?: AbortSignal, options: AcquireOptions = {}): Promise<void> {
    if (!PRIORITIES.includes(priority)) {
      return Promise.reject(new TypeError(`priority must be one of ${PRIORITIES.join(', ')}, got ${String(priority)}`));
    }
    if (this.closed) return Promise.reject(new Error('rate budget is closed'));
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        priority,
        retry: options.retry === true,
        enqueuedAtMs: Date.now(),
        resolve,
        reject,
        cleanup: () => signal?.removeEventListener('abort', onAbort),
      };
      const onAbort = () => {
        const queue = this.queues[priority];
        const index = queue.indexOf(waiter);
        if (index >= 0) queue.splice(index, 1);
        reject(signal?.reason);
        this.pump();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const queue = this.queues[priority];
      const firstFresh = waiter.retry ? queue.findIndex((queued) => !queued.retry) : -1;
      if (firstFresh >= 0) queue.splice(firstFresh, 0, waiter);
      else queue.push(waiter);
      this.pump();
    });
  }

  /**
   * Takes the server's rate-limit headers into account (spec §8). `remaining: 0` blocks every grant
   * until `resetAtMs` (server clock, converted to ours with `serverClockOffsetMs`, plus the safety
   * margin; a full window from now when the reset is unknown). A positive `remaining` is counted
   * down by our grants in that window. A lower `limit` than ours is adopted.
   */
  observe(observation: RateLimitObservation): void {
    const now = Date.now();
    if (observation.limit !== undefined && Number.isInteger(observation.limit) && observation.limit > 0 && observation.limit < this.limit) {
      this.serverLimit = observation.limit;
    }
    if (observation.serverNowMs !== undefined && Number.isFinite(observation.serverNowMs)) this.recordClockSample(observation.serverNowMs - now);
    const remaining = observation.remaining;
    if (remaining === undefined || !Number.isFinite(remaining)) return;
    let endsAtMs: number;
    if (observation.resetAtMs !== undefined && Number.isFinite(observation.resetAtMs)) {
      endsAtMs = observation.resetAtMs - (this.serverClockOffsetMs() ?? 0) + this.safetyMarginMs;
    } else {
      if (remaining > 0) return; // no window to count down in
      endsAtMs = now + this.effectiveWindowMs;
    }
    if (endsAtMs <= now) return;
    const current = this.serverWindow && this.serverWindow.endsAtMs > now ? this.serverWindow : undefined;
    const sameWindow = current !== undefined && observation.resetAtMs !== undefined && current.serverResetAtMs === observation.resetAtMs;
    if (sameWindow) {
      current.remaining = Math.min(current.remaining, Math.max(0, remaining));
      // Every estimate is safe (see serverClockOffsetMs), so the tightest one wins.
      current.endsAtMs = Math.min(current.endsAtMs, endsAtMs);
    } else if (current === undefined || endsAtMs >= current.endsAtMs) {
      // A newer window; an older window's observation arriving late is ignored.
      this.serverWindow = { serverResetAtMs: observation.resetAtMs, endsAtMs, remaining: Math.max(0, remaining) };
    }
    this.pump();
  }

  /**
   * How far the server's clock is ahead of ours (negative: behind), ms, or undefined before any
   * `Date` header was seen. Each sample (Date − our clock at receipt) is at most the true offset,
   * because the Date header is truncated to the second and the response took time to arrive, so
   * the largest recent sample is a safe estimate that tightens as responses come in; converting a
   * reset with it never ends a window early.
   */
  serverClockOffsetMs(): number | undefined {
    return this.clockSamples.length > 0 ? Math.max(...this.clockSamples) : undefined;
  }

  private recordClockSample(sampleMs: number): void {
    this.clockSamples.push(sampleMs);
    if (this.clockSamples.length > CLOCK_SAMPLES_KEPT) this.clockSamples.shift();
  }

  /** Blocks every `acquire` until `untilMs` (ms epoch), e.g. after a 429's `Retry-After`. */
  pauseUntil(untilMs: number): void {
    if (!Number.isFinite(untilMs)) return;
    this.counters.pauses++;
    if (untilMs > this.pausedUntilMs) this.pausedUntilMs = untilMs;
    this.pump();
  }

  stats(): LocalRateBudgetStats {
    const now = Date.now();
    this.prune(now);
    const blockedUntil = this.blockedUntil(now);
    return {
      granted: { ...this.counters.granted },
      waitedMs: this.counters.waitedMs,
      pauses: this.counters.pauses,
      waiting: { write: this.queues.write.length, incremental: this.queues.incremental.length, backfill: this.queues.backfill.length },
      grantedInWindow: this.grantLog.length,
      blockedUntilMs: blockedUntil > now ? blockedUntil : undefined,
      serverClockOffsetMs: this.serverClockOffsetMs(),
    };
  }

  /** Rejects every waiter and stops the timer. Later `acquire` calls reject. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (const priority of PRIORITIES) {
      for (const waiter of this.queues[priority].splice(0)) {
        waiter.cleanup();
        waiter.reject(new Error('rate budget is closed'));
      }
    }
  }

  /** See RateBudget.pausedForMs: the 429 pause or spent server window still ahead, ms. */
  pausedForMs(): number {
    const now = Date.now();
    return Math.max(0, this.blockedUntil(now) - now);
  }

  private prune(now: number): void {
    const horizon = now - this.effectiveWindowMs;
    let stale = 0;
    while (stale < this.grantLog.length && (this.grantLog[stale] as number) <= horizon) stale++;
    if (stale > 0) this.grantLog.splice(0, stale);
    if (this.serverWindow && this.serverWindow.endsAtMs <= now) this.serverWindow = undefined;
  }

  /** Until when a 429 pause or a spent server window forbids sending (ms epoch; 0 when never). */
  private blockedUntil(now: number): number {
    let until = this.pausedUntilMs;
    const server = this.serverWindow;
    if (server && server.remaining <= 0 && server.endsAtMs > now) until = Math.max(until, server.endsAtMs);
    return until;
  }

  /** The earliest time (ms epoch) the next grant may happen. */
  private nextGrantAt(now: number): number {
    this.prune(now);
    let at = Math.max(now, this.blockedUntil(now));
    const limit = this.effectiveLimit;
    if (this.grantLog.length >= limit) {
      const oldestThatCounts = this.grantLog[this.grantLog.length - limit] as number;
      at = Math.max(at, oldestThatCounts + this.effectiveWindowMs + 1);
    }
    return at;
  }

  private nextWaiter(): Waiter | undefined {
    for (const priority of PRIORITIES) {
      const waiter = this.queues[priority][0];
      if (waiter) return waiter;
    }
    return undefined;
  }

  /** Grants as many slots as allowed now, then sleeps until the next one can be granted. */
  private pump(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.closed) return;
    for (;;) {
      const waiter = this.nextWaiter();
      if (!waiter) return;
      const now = Date.now();
      const at = this.nextGrantAt(now);
      if (at > now) {
        this.timer = setTimeout(() => this.pump(), at - now);
        return;
      }
      this.queues[waiter.priority].shift();
      this.grantLog.push(now);
      if (this.serverWindow) this.serverWindow.remaining--;
      this.counters.granted[waiter.priority]++;
      this.counters.waitedMs += now - waiter.enqueuedAtMs;
      waiter.cleanup();
      waiter.resolve();
    }
  }
}
