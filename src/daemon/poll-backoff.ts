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
 *     neither quiet nor a change.
 *
 * The state is in memory: a restarted daemon polls every stream on its schedule again, and backs off
 * anew after `quietPolls` quiet runs (docs/decisions.md).
 */

/** Default largest interval, in ticks of the stream's schedule: 16 × 30 s = 8 minutes on the default schedule. */
export const DEFAULT_MAX_POLL_FACTOR = 16;

/** Default number of quiet runs in a row before the interval starts doubling. */
export const DEFAULT_QUIET_POLLS = 3;

/** What the backoff reads of a finished run. */
export interface PollOutcome {
  status: string;
  /** Changelog rows the run appended. */
  changes: number;
  /** How the scan ended (absent unless it paged to its end): its mode and the list's total. */
  scan?: { mode: 'incremental' | 'complete'; total: number };
}

/** One stream's adaptive interval; see the module comment. */
export class PollBackoff {
  readonly #maxFactor: number;
  readonly #quietPolls: number;
  /** Succeeded runs in a row that appended nothing. */
  #quietRuns = 0;
  /** The list total of the last complete scan, to tell a record leaving the list. */
  #lastCompleteTotal: number | undefined;
  /** Ticks since the last run started (or since the state was made). */
  #ticksSincePoll = 0;

  /**
   * @param maxFactor the largest interval in ticks (an integer >= 1; 1 turns the backoff off)
   * @param quietPolls quiet runs in a row before the interval doubles (an integer >= 1)
   * @throws RangeError naming the parameter when either is not an integer >= 1
   */
  constructor(maxFactor = DEFAULT_MAX_POLL_FACTOR, quietPolls = DEFAULT_QUIET_POLLS) {
    if (!Number.isInteger(maxFactor) || maxFactor < 1) throw new RangeError(`maxFactor: must be an integer >= 1, got ${maxFactor}`);
    if (!Number.isInteger(quietPolls) || quietPolls < 1) throw new RangeError(`quietPolls: must be an integer >= 1, got ${quietPolls}`);
    this.#maxFactor = maxFactor;
    this.#quietPolls = quietPolls;
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
    return this.#ticksSincePoll >= this.factor;
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
    }
    if (outcome.changes > 0 || totalMoved) this.wake();
    else this.#quietRuns += 1;
  }

  /** Back to the schedule: the next tick polls, and so does every tick until the stream is quiet again. */
  wake(): void {
    this.#quietRuns = 0;
    this.#ticksSincePoll = Number.MAX_SAFE_INTEGER - 1;
  }
}
