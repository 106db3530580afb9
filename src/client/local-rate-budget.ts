/**
 * `LocalRateBudget`: the rate budget (docs/rate-budget.md, spec §8) for one process, in memory.
 *
 *  - Once the server has answered with `X-RateLimit-Remaining` and `-Reset`, it follows the server's
 *    own window (server-window.ts): spends what the server says remains, minus the requests in
 *    flight, never more than `limit` of its own per window (a ceiling), and resumes when the window
 *    has surely ended, plus a small margin.
 *  - Before that (or with a server that sends no such headers), a sliding-window log of grant times
 *    keeps any span of `windowMs + safetyMarginMs` to `limit` grants.
 *  - `pauseUntil(ms)` (a 429's `Retry-After`) blocks every `acquire` until then.
 *
 * `acquire` returns a slot; its answer's headers come back with `observe(observation, slot)`, or
 * `release(slot, { requestSent })` when no answer came. Waiters are served strictly by priority
 * (`write` > `incremental` > `backfill`), first come first served within a priority, except that a
 * retry goes to the head of its priority's queue (after earlier retries). `acquire` honours an
 * AbortSignal.
 */
import { type AcquireOptions, type BudgetPeek, type Priority, type RateBudget, type RateBudgetStats, type RateLimitObservation, type RateSlot, type ReleaseOutcome } from './rate-budget.ts';
import { defaultResumeMarginMs, effectiveWindowMs, emptyWindowState, forgetWindow, observeWindow, spendUnanswered, windowAllowance, windowEndBoundMs, type ServerWindowState } from './server-window.ts';
import { WaitingLine } from './waiting-line.ts';

/** Construction options of a LocalRateBudget: `limit` requests per `windowMs` ms, plus margins (ms). */
export interface LocalRateBudgetOptions {
  /** Requests allowed per window (spec §8: 60 per minute by default). Positive integer. */
  limit: number;
  /** Window length, ms. Default 60000; replaced by the length learned from the server's resets. Tests scale it down. */
  windowMs?: number;
  /**
   * Sliding-log pacing only (before the server's window is known): added to the window to cover
   * network latency, ms. Default: 2% of the window, at least 50 ms and at most 250 ms.
   */
  safetyMarginMs?: number;
  /** Added to the end of a spent server window before resuming, ms. Default 1% of the window, 5..100 ms. */
  resumeMarginMs?: number;
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
  /** Slots granted and not yet answered, lost ones included until their window ended. */
  inFlight: number;
  /** The server window's length in use, ms (learned from its resets, else configured). */
  serverWindowMs: number;
}

function positiveInteger(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
    throw new RangeError(`LocalRateBudget option ${field} must be a positive integer, got ${String(value)}`);
  }
  return value;
}

function marginOption(value: number, field: string): number {
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`LocalRateBudget option ${field} must be a number >= 0, got ${String(value)}`);
  return value;
}

/** The in-memory rate budget of one process (spec §8), as this module's header describes. */
export class LocalRateBudget implements RateBudget {
  readonly limit: number;
  readonly windowMs: number;
  readonly safetyMarginMs: number;
  readonly resumeMarginMs: number;

  /** Grant times (ms epoch), ascending; entries older than the sliding window are pruned. */
  private readonly grantLog: number[] = [];
  private readonly line = new WaitingLine();
  private pausedUntilMs = 0;
  /** What the server's answers taught (server-window.ts). */
  private readonly window: ServerWindowState = emptyWindowState();
  /** Slots granted and not answered yet: id -> when granted (ms epoch); one never ended lapses after `slotTtlMs`. */
  private readonly inFlight = new Map<string, number>();
  /** Lost slots (sent, no answer): each counts as in flight until this time (ms epoch). */
  private lostUntil: number[] = [];
  private slotSequence = 0;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly counters: RateBudgetStats = { granted: { write: 0, incremental: 0, backfill: 0 }, waitedMs: 0, pauses: 0 };

  /** @throws RangeError when `limit`, `windowMs` or a margin is not a valid number. */
  constructor(options: LocalRateBudgetOptions) {
    this.limit = positiveInteger(options.limit, 'limit');
    this.windowMs = positiveInteger(options.windowMs ?? 60_000, 'windowMs');
    this.safetyMarginMs = marginOption(options.safetyMarginMs ?? Math.min(250, Math.max(50, Math.round(this.windowMs * 0.02))), 'safetyMarginMs');
    this.resumeMarginMs = marginOption(options.resumeMarginMs ?? defaultResumeMarginMs(this.windowMs), 'resumeMarginMs');
  }

  /** The span no more than `limit` grants may share in sliding-log pacing, ms. */
  private get slidingWindowMs(): number {
    return this.windowMs + this.safetyMarginMs;
  }

  private get effectiveLimit(): number {
    return Math.min(this.limit, this.window.serverLimit ?? this.limit);
  }

  /**
   * Waits for a slot, then takes it. Rejects with `signal.reason` when the signal aborts first, and
   * with an Error when the budget is closed.
   */
  acquire(priority: Priority, signal?: AbortSignal, options: AcquireOptions = {}): Promise<RateSlot> {
    const refusal = WaitingLine.refusal(priority, this.closed, signal);
    if (refusal) return Promise.reject(refusal.reason);
    const slot = this.line.join(priority, signal, options, () => this.pump());
    this.pump();
    return slot;
  }

  /**
   * An answer's rate-limit headers (spec §8), ending `slot`. With `remaining` and `resetAtMs` the
   * server's window is followed (server-window.ts). `remaining: 0` without a reset blocks for a
   * full window. A lower `limit` than ours is adopted. Never throws.
   */
  observe(observation: RateLimitObservation, slot?: RateSlot): void {
    const now = Date.now();
    if (slot) this.inFlight.delete(slot.id);
    const { remaining, resetAtMs } = observation;
    if (remaining !== undefined && resetAtMs !== undefined) {
      observeWindow(this.window, { remaining, resetAtMs, limit: observation.limit, serverNowMs: observation.serverNowMs }, now);
    } else {
      if (observation.limit !== undefined && Number.isInteger(observation.limit) && observation.limit > 0) this.window.serverLimit = observation.limit;
      if (observation.serverNowMs !== undefined && Number.isFinite(observation.serverNowMs)) {
        const sample = observation.serverNowMs - now;
        this.window.clockOffsetMs = Math.max(this.window.clockOffsetMs ?? sample, sample);
      }
      if (remaining === 0) this.pausedUntilMs = Math.max(this.pausedUntilMs, now + this.slidingWindowMs);
    }
    this.pump();
  }

  /**
   * Ends a slot whose request got no answer. Not sent: the slot is free again. Maybe sent: it is
   * spent in the current server window and stays in flight for one more window.
   */
  release(slot: RateSlot, outcome: ReleaseOutcome): void {
    if (!this.inFlight.delete(slot.id)) return;
    if (outcome.requestSent) {
      spendUnanswered(this.window);
      this.lostUntil.push(Date.now() + effectiveWindowMs(this.window, this.windowMs) + this.resumeMarginMs);
    } else {
      const at = this.grantLog.lastIndexOf(this.grantLog.at(-1) ?? -1);
      if (at >= 0) this.grantLog.splice(at, 1);
    }
    this.pump();
  }

  /**
   * How far the server's clock is ahead of ours (negative: behind), ms, or undefined before any
   * `Date` header was seen: the largest (Date − our clock at receipt), a lower bound (the header is
   * truncated to the second and the response took time to arrive).
   */
  serverClockOffsetMs(): number | undefined {
    return this.window.clockOffsetMs;
  }

  /** Blocks every `acquire` until `untilMs` (ms epoch), e.g. after a 429's `Retry-After`; forgets the learned window (a 429 proves it wrong). */
  pauseUntil(untilMs: number): void {
    if (!Number.isFinite(untilMs)) return;
    this.counters.pauses++;
    if (untilMs > this.pausedUntilMs) this.pausedUntilMs = untilMs;
    forgetWindow(this.window);
    this.pump();
  }

  /** What `acquire` would do now, without taking a slot. */
  async peek(): Promise<BudgetPeek> {
    const now = Date.now();
    const { slots, at } = this.allowance(now);
    return {
      available: slots,
      nextSlotAtMs: slots > 0 ? now : at,
      pausedUntilMs: this.pausedUntilMs > now ? this.pausedUntilMs : undefined,
      inFlight: this.inFlightCount(now),
      followingServerWindow: this.window.resetAtMs !== undefined,
    };
  }

  stats(): LocalRateBudgetStats {
    const now = Date.now();
    this.prune(now);
    const { slots, at } = this.allowance(now);
    return {
      granted: { ...this.counters.granted },
      waitedMs: this.counters.waitedMs,
      pauses: this.counters.pauses,
      waiting: this.line.counts(),
      grantedInWindow: this.grantLog.length,
      blockedUntilMs: slots <= 0 && at > now ? at : undefined,
      serverClockOffsetMs: this.serverClockOffsetMs(),
      inFlight: this.inFlightCount(now),
      serverWindowMs: effectiveWindowMs(this.window, this.windowMs),
    };
  }

  /** Rejects every waiter and stops the timer. Later `acquire` calls reject. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.line.rejectAll(new Error('rate budget is closed'));
  }

  private prune(now: number): void {
    const horizon = now - this.slidingWindowMs;
    let stale = 0;
    while (stale < this.grantLog.length && (this.grantLog[stale] as number) <= horizon) stale++;
    if (stale > 0) this.grantLog.splice(0, stale);
    if (this.lostUntil.length > 0) this.lostUntil = this.lostUntil.filter((until) => until > now);
    // A slot nobody ended (a caller that never observed nor released) stops counting after two windows and a minute.
    const lapse = now - (2 * this.windowMs + 60_000);
    for (const [id, grantedAt] of this.inFlight) if (grantedAt <= lapse) this.inFlight.delete(id);
  }

  private inFlightCount(now: number): number {
    this.prune(now);
    return this.inFlight.size + this.lostUntil.length;
  }

  /** How many slots may be granted at `now`, else when to look again (ms epoch). */
  private allowance(now: number): { slots: number; at: number } {
    const inFlight = this.inFlightCount(now);
    if (this.pausedUntilMs > now) return { slots: 0, at: this.pausedUntilMs };
    const server = windowAllowance(this.window, now, inFlight, { limit: this.limit, windowMs: this.windowMs, resumeMarginMs: this.resumeMarginMs });
    if (server) return { slots: server.slots, at: server.resumeAtMs };
    const limit = this.effectiveLimit;
    if (this.grantLog.length < limit) return { slots: limit - this.grantLog.length, at: now };
    const oldestThatCounts = this.grantLog[this.grantLog.length - limit] as number;
    return { slots: 0, at: oldestThatCounts + this.slidingWindowMs + 1 };
  }

  /** The end of the server window being spent, on our clock (ms epoch), for tests and status; undefined before any answer. */
  serverWindowEndMs(): number | undefined {
    return windowEndBoundMs(this.window, this.windowMs);
  }

  /** Grants as many slots as allowed now, then sleeps until the next one can be granted (or an answer comes). */
  private pump(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.closed) return;
    for (;;) {
      const waiter = this.line.head();
      if (!waiter) return;
      const now = Date.now();
      const { slots, at } = this.allowance(now);
      if (slots <= 0) {
        this.timer = setTimeout(() => this.pump(), Math.max(1, at - now));
        return;
      }
      this.grantLog.push(now);
      const slot: RateSlot = { id: String(++this.slotSequence), priority: waiter.priority };
      this.inFlight.set(slot.id, now);
      this.counters.granted[waiter.priority]++;
      this.counters.waitedMs += now - waiter.enqueuedAtMs;
      this.line.grant(waiter.priority, slot);
    }
  }
}
