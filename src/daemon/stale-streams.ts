/**
 * The daemon's watch for stale streams (docs/operations.md "Operational events"): no run reveals
 * that a stream has not succeeded for a while (a hung run, ticks skipped behind a long scan, runs
 * that keep failing), so a timer asks src/sync/stream-conditions.ts `checkStale` for each stream the
 * daemon runs (holds the lease of), and a stream past its threshold gets one `stream.stale` event.
 *
 * A stream's threshold is `staleAfterSchedules` times its schedule's interval (the longest gap
 * between the schedule's next ten ticks, so an irregular schedule counts its longest pause), and at
 * least `staleMinimumSeconds`: with the default 30 s schedule, 10 × 30 s = 300 s. A quiet stream that
 * adaptive polling rests (poll-backoff.ts: polled every `factor` ticks) is allowed its rest on top,
 * `(factor - 1)` intervals: its last success is that old by plan, not because it fell behind. The
 * watch checks every quarter of the smallest base threshold, at least once a second and at most
 * every 30 s.
 */
import { createTask } from 'node-cron';
import type { AppendedChange } from '../mirror/mirror-store.ts';
import { silentLogger, type Logger } from '../logging/logger.ts';
import type { StreamName } from '../streams/definitions.ts';
import type { StreamConditions } from '../sync/stream-conditions.ts';
import type { RoundReports } from './part-supervisor.ts';

/** Ticks of a schedule looked at to find its interval. */
const TICKS_LOOKED_AT = 10;

/**
 * The longest gap between the next ten ticks of cron `expression` (node-cron syntax, seconds field
 * allowed), ms.
 * @throws Error when the expression is not a valid cron expression
 */
export function scheduleIntervalMs(expression: string): number {
  const task = createTask(expression, () => undefined);
  try {
    const ticks = task.getNextRuns(TICKS_LOOKED_AT + 1).map((date) => date.getTime());
    let longest = 0;
    for (let index = 1; index < ticks.length; index += 1) longest = Math.max(longest, ticks[index]! - ticks[index - 1]!);
    return longest;
  } finally {
    void task.destroy();
  }
}

/** Options of `StaleStreamWatch`. */
export interface StaleStreamWatchOptions {
  conditions: Pick<StreamConditions, 'checkStale'>;
  /** The streams watched, each with its cron schedule (`sync.streamSchedules` or `sync.schedule`). */
  streams: readonly { stream: StreamName; schedule: string }[];
  /** Intervals of its schedule without a success that make a stream stale (config `sync.staleAfterSchedules`). */
  staleAfterSchedules: number;
  /** The least time without a success that makes a stream stale, seconds (config `sync.staleMinimumSeconds`). */
  staleMinimumSeconds: number;
  /**
   * The stream's polling interval now, in ticks of its schedule (the scheduler's `pollFactor`: 1 on
   * every tick, more while adaptive polling rests a quiet stream). Default: always 1.
   */
  pollFactor?: (stream: StreamName) => number;
  /** Whether this daemon runs `stream` now (holds its lease): a replica's streams are its own to watch. Default: always. */
  mayCheck?: (stream: StreamName) => boolean;
  /** Hears the events appended (the webhook dispatcher, metrics). */
  onChanges?: (changes: readonly AppendedChange[]) => void;
  logger?: Logger;
  /** Told how each check of every stream went (the first stream that could not be checked, or none: the daemon's `stale-watch` part). */
  rounds?: RoundReports;
}

/** Checks the watched streams for staleness on a timer (module comment). */
export class StaleStreamWatch {
  readonly #options: StaleStreamWatchOptions;
  readonly #logger: Logger;
  /** Each stream's threshold on every tick (no rest allowed), ms. */
  readonly #baseMs: ReadonlyMap<StreamName, number>;
  /** Each stream's schedule interval, ms. */
  readonly #intervalMs: ReadonlyMap<StreamName, number>;
  readonly #everyMs: number;
  #startedAt = new Date();
  #timer: NodeJS.Timeout | undefined;
  #checking: Promise<void> | undefined;

  /** @throws RangeError when `staleAfterSchedules` is not positive or `staleMinimumSeconds` negative */
  constructor(options: StaleStreamWatchOptions) {
    if (!(options.staleAfterSchedules > 0)) throw new RangeError(`staleAfterSchedules must be a positive number, got ${String(options.staleAfterSchedules)}`);
    if (!(options.staleMinimumSeconds >= 0)) throw new RangeError(`staleMinimumSeconds must be >= 0, got ${String(options.staleMinimumSeconds)}`);
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    this.#intervalMs = new Map(options.streams.map(({ stream, schedule }) => [stream, scheduleIntervalMs(schedule)] as const));
    this.#baseMs = new Map([...this.#intervalMs].map(([stream, intervalMs]) => [stream, Math.max(options.staleAfterSchedules * intervalMs, options.staleMinimumSeconds * 1000)] as const));
    const smallest = Math.min(...this.#baseMs.values());
    this.#everyMs = Math.min(30_000, Math.max(1_000, Math.floor(smallest / 4)));
  }

  /** The stream's threshold now, ms: the base, plus the rest adaptive polling gives it now; undefined for a stream not watched. */
  thresholdMs(stream: StreamName): number | undefined {
    const base = this.#baseMs.get(stream);
    if (base === undefined) return undefined;
    const factor = Math.max(1, this.#options.pollFactor?.(stream) ?? 1);
    return base + (factor - 1) * this.#intervalMs.get(stream)!;
  }

  /** The stream's threshold now, seconds (the `bizops_stream_stale_after_seconds` gauge). */
  thresholdSeconds(stream: StreamName): number | undefined {
    const ms = this.thresholdMs(stream);
    return ms === undefined ? undefined : ms / 1000;
  }

  /** Starts checking; a stream that never succeeded counts from now. */
  start(): void {
    if (this.#timer) return;
    this.#startedAt = new Date();
    this.#timer = setInterval(() => void this.check(), this.#everyMs);
    this.#timer.unref();
  }

  /** Stops checking and waits for a check in progress. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#checking;
  }

  /** Checks every watched stream once (one check at a time). Never throws: a mirror that cannot be read is warned about. */
  check(now: Date = new Date()): Promise<void> {
    this.#checking ??= this.#checkAll(now).finally(() => {
      this.#checking = undefined;
    });
    return this.#checking;
  }

  async #checkAll(now: Date): Promise<void> {
    let failed: Error | undefined;
    for (const stream of this.#baseMs.keys()) {
      if (this.#options.mayCheck && !this.#options.mayCheck(stream)) continue;
      const thresholdMs = this.thresholdMs(stream)!;
      try {
        const appended = await this.#options.conditions.checkStale(stream, thresholdMs, this.#startedAt, now);
        if (appended) {
          this.#logger.warn({ stream, event: appended.type, seq: appended.seq, staleAfterSeconds: thresholdMs / 1000 }, `no successful run of ${stream} for ${thresholdMs / 1000} s: ${appended.type}`);
          this.#options.onChanges?.([appended]);
        }
      } catch (error) {
        failed ??= new Error(`${stream}: ${(error as Error).message}`, { cause: error });
        this.#logger.warn({ stream, err: { message: (error as Error).message } }, 'could not check the stream for staleness');
      }
    }
    if (failed) this.#options.rounds?.failing(failed);
    else this.#options.rounds?.working();
  }
}
