/**
 * Adaptive polling (docs/sync.md "Adaptive polling"): a stream whose polls keep finding nothing is
 * polled on fewer of its schedule's ticks, and on every tick again from the first change.
 *
 * Counted in ticks of the stream's own schedule, never in time, so the rule is the same for a
 * 1-second and a 30-second schedule and a test drives it tick by tick:
 *
 *   - a run that appended change rows (records created, updated, tombstoned) brings the stream
 *     back to its schedule: it polls on every tick; so does a complete scan whose list total differs
 *     from the previous complete scan's (a record left the list: the first scan missing it appends
 *     nothing under the two-scan rule, and the second, which tombstones it, comes on the next tick);
 *   - after `quietPolls` succeeded runs in a row that appended nothing, the interval doubles with
 *     each further quiet run (2, 4, 8, ... ticks), up to `maxFactor` ticks;
 *   - `wake()` (a write-through or any other process's change touched the stream) brings it back to
 *     its schedule at once: the next tick polls;
 *   - a run that did not succeed (failed, busy, interrupted, unsupported) changes nothing: it is
 *     neither quiet nor a change;
 *   - a resting poll of a complete-scan stream is a change probe (`probesNext`, src/sync/change-probe.ts):
 *     two requests of one item instead of the whole list, which scans only when the list moved; a
 *     complete scan still comes at least every `maxScanFactor` ticks, for what the probe cannot see.
 *
 * The state is in memory: a restarted daemon polls every stream on its schedule again, and backs off
 * anew after `quietPolls` quiet runs (docs/decisions.md).
 */

/** Default largest interval, in ticks of the stream's schedule: 4 × 30 s = 2 minutes on the default schedule. */
export const DEFAULT_MAX_POLL_FACTOR = 4;

/**
 * Default largest interval between the complete scans of a resting complete-scan stream whose polls
 * are change probes, in ticks: 16 × 30 s = 8 minutes on the default schedule.
 */
export const DEFAULT_MAX_SCAN_FACTOR = 16;

/** Default number of quiet runs in a row before the interval starts doubling. */
export const DEFAULT_QUIET_POLLS = 3;

/** What the backoff reads of a finished run. */
export interface PollOutcome {
  status: string;
  /** Changelog rows the run appended. */
  changes: number;
  /** How the scan ended (absent unless it paged to its end): its mode and the list's total. */
  scan?: { mode: 'incremental' | 'complete'; total: number };
  /** Listed records the run left as a write-through wrote them (docs/sync.md "Write-throughs during a run"): the next tick reads them again. */
  keptWrittenThrough?: number;
}

/** The largest intervals of a PollBackoff, in ticks of the stream's schedule. */
export interface PollBackoffLimits {
  /** The largest interval between polls (an integer >= 1; 1 turns the backoff off). Default `DEFAULT_MAX_POLL_FACTOR`. */
  maxFactor?: number;
  /** Quiet runs in a row before the interval doubles (an integer >= 1). Default `DEFAULT_QUIET_POLLS`. */
  quietPolls?: number;
  /**
   * The largest interval between complete scans while a probe stands in for the resting polls (an
   * integer >= 1; 1: every poll scans, no probe). Default `DEFAULT_MAX_SCAN_FACTOR`.
   */
  maxScanFactor?: number;
}

/** One stream's adaptive interval; see the module comment. */
export class PollBackoff {
  readonly #maxFactor: number;
  readonly #quietPolls: number;
  readonly #maxScanFactor: number;
  /** Succeeded runs in a row that appended nothing. */
  #quietRuns = 0;
  /** The list total of the last complete scan, to tell a record leaving the list. */
  #lastCompleteTotal: number | undefined;
  /** Ticks since the last run started (or since the state was made). */
  #ticksSincePoll = 0;
  /** Ticks since the last complete scan that succeeded started (none yet: as good as forever). */
  #ticksSinceScan = Number.MAX_SAFE_INTEGER - 1;

  /** @throws RangeError naming the limit when one is not an integer >= 1 */
  constructor(limits: PollBackoffLimits = {}) {
    const { maxFactor = DEFAULT_MAX_POLL_FACTOR, quietPolls = DEFAULT_QUIET_POLLS, maxScanFactor = DEFAULT_MAX_SCAN_FACTOR } = limits;
    for (const [name, value] of Object.entries({ maxFactor, quietPolls, maxScanFactor })) {
      if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name}: must be an integer >= 1, got ${value}`);
    }
    this.#maxFactor = maxFactor;
    this.#quietPolls = quietPolls;
    this.#maxScanFactor = maxScanFactor;
  }

  /** The list total of the last complete scan that succeeded (undefined before one). */
  get lastCompleteTotal(): number | undefined {
    return this.#lastCompleteTotal;
  }

  /** The interval now, in ticks of the stream's schedule: 1 (every tick) up to `maxFactor`. */
  get factor(): number {
    const doublings = this.#quietRuns - this.#quietPolls + 1;
    if (doublings <= 0) return 1;
    // 2 ** 30 already exceeds any sensible factor; keeps the power finite for long quiet spells.
    return Math.min(this.#maxFactor, 2 ** Math.min(doublings, 30));
  }

  /**
   * One tick of the stream's schedule.
   * @returns true when this tick polls (the interval has passed since the last run started), false when it rests
   */
  tick(): boolean {
    this.#ticksSincePoll += 1;
    this.#ticksSinceScan += 1;
    return this.#ticksSincePoll >= this.factor;
  }

  /**
   * Whether the poll starting now may be a change probe (for a complete-scan stream; others ignore
   * it): the stream rests (its interval is over 1 tick) and its last complete scan started fewer
   * than `maxScanFactor` ticks ago.
   */
  probesNext(): boolean {
    return this.factor > 1 && this.#ticksSinceScan < this.#maxScanFactor;
  }

  /** A run of the stream started (from a tick, the start, a lease taken over or a reconciliation): the interval counts from here. */
  polled(): void {
    this.#ticksSincePoll = 0;
  }

  /** Reads a finished run: a change resets the interval, a quiet success counts towards backing off. */
  record(outcome: PollOutcome): void {
    if (outcome.status !== 'succeeded') return;
    let totalMoved = false;
    if (outcome.scan?.mode === 'complete') {
      totalMoved = this.#lastCompleteTotal !== undefined && this.#lastCompleteTotal !== outcome.scan.total;
      this.#lastCompleteTotal = outcome.scan.total;
      // Counted from the run's start, like the interval.
      this.#ticksSinceScan = this.#ticksSincePoll;
    }
    if (outcome.changes > 0 || totalMoved || (outcome.keptWrittenThrough ?? 0) > 0) this.wake();
    else this.#quietRuns += 1;
  }

  /** Back to the schedule: the next tick polls, and so does every tick until the stream is quiet again. */
  wake(): void {
    this.#quietRuns = 0;
    this.#ticksSincePoll = Number.MAX_SAFE_INTEGER - 1;
  }
}
