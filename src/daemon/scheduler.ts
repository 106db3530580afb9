/**
 * The daemon's scheduler: when each stream runs (docs/sync.md, docs/operations.md "Schedules").
 *
 *   - Incremental sync of every stream on `sync.schedule` (a stream's `sync.streamSchedules` entry
 *     overrides it), with node-cron; a seconds field is allowed.
 *   - Reconciliation (`engine.run(stream, 'reconcile')`: a complete scan that finds records gone from
 *     the list, docs/sync.md "Leaves and deletes") of every stream on `sync.reconcileSchedule`. The engine
 *     sends its requests at the rate budget's lowest priority (`backfill`).
 *   - At start, every stream runs once at once: a backfill when it has no cursor yet (never
 *     completed a scan; an interrupted backfill resumes from its checkpoint), an incremental sync
 *     otherwise; a partitioned stream whose partitions are another stream's column, after that
 *     stream's first run.
 *
 * Adaptive polling (src/daemon/poll-backoff.ts, docs/sync.md "Adaptive polling"): each sync tick goes
 * through `tick(stream)`, which lets a stream whose last runs appended nothing rest on some ticks
 * (its interval doubles up to `maxPollFactor` ticks), unless the changelog shows a change row of the
 * stream since its last run started (a write-through, another process). Reconciliation, the start's
 * runs and `trigger` are never rested. A resting poll of a complete-scan stream (onboardings) asks
 * the engine's change probe first (`probeFirst`, src/sync/change-probe.ts), except when its last
 * complete scan is `maxScanFactor` ticks old. A complete-scan stream's sync that finds the list's
 * total fell since the previous complete scan (a record left: it counts the first miss) is followed at
 * once by the confirming scan of the two-scan rule, instead of a tick later.
 *
 * One run per stream at a time in this process: a sync tick that finds its stream running is
 * skipped (the next tick comes soon); a reconciliation that finds it running is queued and starts
 * when the current run ends, so a frequent sync never starves it. The engine's stream lease
 * (src/mirror/leases.ts; re-entrant for its holder, so no help inside one process) keeps other
 * processes out. Beside a replica, `mayRun` (the daemon's lease keeper) lets a tick run only a
 * stream whose lease this daemon holds; the others are left to the replica holding them.
 */
import { createTask, type Logger as CronLogger, type ScheduledTask } from 'node-cron';
import { cronExpressionProblem } from '../config/schema.ts';
import { silentLogger, type Logger } from '../logging/logger.ts';
import type { ChangelogActivity } from '../mirror/changelog-activity.ts';
import { DEFAULT_MAX_POLL_FACTOR, DEFAULT_MAX_SCAN_FACTOR, DEFAULT_QUIET_POLLS, PollBackoff } from './poll-backoff.ts';
import { isStreamName, STREAMS, type StreamName } from '../streams/definitions.ts';
import type { RunOptions, RunReason, RunResult } from '../sync/sync-engine.ts';

/** The part of the sync engine the scheduler drives. */
export interface StreamRunner {
  run(stream: StreamName, reason: RunReason, options?: RunOptions): Promise<RunResult>;
}

/** Construction options of a StreamScheduler: the engine, the streams, their cron schedules and metrics hooks. */
export interface StreamSchedulerOptions {
  engine: StreamRunner;
  streams: readonly StreamName[];
  /** Cron for every stream's incremental sync (config `sync.schedule`). */
  schedule: string;
  /** Per-stream overrides of `schedule` (config `sync.streamSchedules`). */
  streamSchedules?: Partial<Record<StreamName, string>>;
  /** Cron for reconciliation (config `sync.reconcileSchedule`). */
  reconcileSchedule: string;
  /** Whether a stream has a cursor (has completed a scan): decides the first run's reason. */
  hasCursor(stream: StreamName): boolean;
  logger?: Logger;
  /** Run every stream once at `start()` (default true). */
  runAtStart?: boolean;
  /** Called when a run starts (metrics). Must not throw. */
  onRunStarted?: (stream: StreamName, reason: RunReason) => void;
  /** Called when a run ends, with its wall-clock duration in ms (metrics). Must not throw. */
  onRunFinished?: (result: RunResult, durationMs: number) => void;
  /** Called when a sync tick is skipped because its stream is still running (metrics). */
  onTickSkipped?: (stream: StreamName, reason: RunReason) => void;
  /**
   * Whether this process may run `stream` now (the daemon: it holds the stream's lease). A tick of
   * a stream it may not run is left to the process that may (`standby`). Default: always.
   */
  mayRun?: (stream: StreamName) => boolean;
  /**
   * The largest interval of a quiet stream, in ticks of its schedule (config `sync.maxPollFactor`,
   * default 16); 1 polls on every tick.
   */
  maxPollFactor?: number;
  /** Quiet runs in a row before a stream's interval starts doubling (default 3). */
  quietPolls?: number;
  /**
   * The largest interval between the complete scans of a resting complete-scan stream whose polls
   * are change probes, in ticks of its schedule (config `sync.maxScanFactor`, default 16); 1: every
   * poll scans.
   */
  maxScanFactor?: number;
  /**
   * The changelog, asked on a tick that would rest a stream whether a change row of it was appended
   * since its last run started (a write-through: the stream polls at once). Without it, only the
   * stream's own runs' changes and `wake` bring it back to its schedule.
   */
  activity?: ChangelogActivity;
  /** Called when a sync tick rests a quiet stream (metrics), with its interval in ticks. Must not throw. */
  onTickRested?: (stream: StreamName, factor: number) => void;
}

/** What `trigger` did with a request to run (`standby`: another process holds the stream's lease). */
export type TriggerOutcome = 'started' | 'skipped' | 'queued' | 'stopped' | 'standby';

/** What `tick` did: a trigger's outcome, or `rested` (a quiet stream's interval has not passed). */
export type TickOutcome = TriggerOutcome | 'rested';

interface StreamSlot {
  running: Promise<void> | null;
  reason: RunReason | null;
  /** A reconciliation asked for while the stream was running: starts when the run ends. */
  reconcileQueued: boolean;
  /** The stream's adaptive interval. */
  backoff: PollBackoff;
  /** The changelog's position when the stream's last run started (null: not read yet, or the read failed). */
  since: number | null;
}

/**
 * Checks a cron expression with node-cron (src/config/schema.ts checks the configuration the same way).
 * @param key the configuration key, for the message (e.g. `sync.streamSchedules.deals`)
 * @throws Error `<key>: "<expression>" is not a valid cron expression (<why>); ...`
 */
function assertCronExpression(expression: string, key: string): void {
  const problem = cronExpressionProblem(expression);
  if (problem) throw new Error(`${key}: ${problem}`);
}

/** Runs streams on their schedules; see the module comment. Start once, stop once. */
export class StreamScheduler {
  readonly #options: StreamSchedulerOptions;
  readonly #logger: Logger;
  readonly #slots = new Map<StreamName, StreamSlot>();
  readonly #tasks: ScheduledTask[] = [];
  readonly #abort = new AbortController();
  #state: 'new' | 'running' | 'stopped' = 'new';

  /**
   * Validates every schedule without starting anything.
   * @throws Error naming the configuration key when a cron expression is invalid or a stream is
   *   listed twice
   */
  constructor(options: StreamSchedulerOptions) {
    this.#options = options;
    this.#logger = (options.logger ?? silentLogger).child({ component: 'scheduler' });
    assertCronExpression(options.schedule, 'sync.schedule');
    assertCronExpression(options.reconcileSchedule, 'sync.reconcileSchedule');
    for (const [stream, expression] of Object.entries(options.streamSchedules ?? {})) {
      if (expression !== undefined) assertCronExpression(expression, `sync.streamSchedules.${stream}`);
    }
    for (const stream of options.streams) {
      if (this.#slots.has(stream)) throw new Error(`sync.streams: "${stream}" is listed twice`);
      this.#slots.set(stream, {
        running: null,
        reason: null,
        reconcileQueued: false,
        backoff: new PollBackoff({
          maxFactor: options.maxPollFactor ?? DEFAULT_MAX_POLL_FACTOR,
          quietPolls: options.quietPolls ?? DEFAULT_QUIET_POLLS,
          maxScanFactor: options.maxScanFactor ?? DEFAULT_MAX_SCAN_FACTOR,
        }),
        since: null,
      });
    }
  }

  /** The cron expression of a stream's incremental sync. */
  scheduleOf(stream: StreamName): string {
    return this.#options.streamSchedules?.[stream] ?? this.#options.schedule;
  }

  /**
   * Starts the cron tasks and (unless `runAtStart` is false) the first run of every stream.
   * @throws Error when called twice or after `stop()`
   */
  start(): void {
    if (this.#state !== 'new') throw new Error(`StreamScheduler.start: already ${this.#state}`);
    this.#state = 'running';
    const cronLogger = toCronLogger(this.#logger);
    for (const stream of this.#slots.keys()) {
      const task = createTask(this.scheduleOf(stream), () => void this.tick(stream), { name: `sync:${stream}`, logger: cronLogger });
      this.#tasks.push(task);
    }
    const reconcile = createTask(
      this.#options.reconcileSchedule,
      () => {
        for (const stream of this.#slots.keys()) void this.trigger(stream, 'reconcile');
      },
      { name: 'reconcile', logger: cronLogger },
    );
    this.#tasks.push(reconcile);
    for (const task of this.#tasks) void task.start();
    this.#logger.info(
      {
        streams: Object.fromEntries([...this.#slots.keys()].map((stream) => [stream, this.scheduleOf(stream)])),
        reconcileSchedule: this.#options.reconcileSchedule,
      },
      'scheduler started',
    );
    if (this.#options.runAtStart ?? true) {
      const first = (stream: StreamName) => void this.trigger(stream, this.#options.hasCursor(stream) ? 'sync' : 'backfill');
      const waiting: { stream: StreamName; source: StreamName }[] = [];
      for (const stream of this.#slots.keys()) {
        // A partitioned stream whose values are another scheduled stream's column starts after that
        // stream's first run (docs/sync.md "Partitioned streams"): on a new mirror it has none before.
        const values = STREAMS[stream].partitions?.values;
        const source = values?.from === 'stream' ? values.stream : undefined;
        if (source !== undefined && isStreamName(source) && this.#slots.has(source)) waiting.push({ stream, source });
        else first(stream);
      }
      for (const { stream, source } of waiting) {
        const sourceRun = this.#slots.get(source)?.running;
        if (sourceRun) void sourceRun.then(() => first(stream));
        else first(stream);
      }
    }
  }

  /**
   * Asks for one run of `stream` now.
   * @returns `started`; `skipped` (the stream is running: a sync tick waits for the next tick, a
   *   reconciliation while a reconciliation runs is not needed twice); `queued` (a reconciliation
   *   while a sync or backfill runs: it starts when that run ends); `stopped` (after `stop()`)
   * @throws Error for a stream this scheduler does not run
   */
  trigger(stream: StreamName, reason: RunReason): TriggerOutcome {
    const slot = this.#slot(stream);
    if (this.#state !== 'running') return 'stopped';
    if (this.#options.mayRun && !this.#options.mayRun(stream)) {
      this.#logger.debug({ stream, reason }, 'tick left to the replica holding the stream\'s lease');
      return 'standby';
    }
    if (slot.running) {
      if (reason === 'reconcile' && slot.reason !== 'reconcile') {
        slot.reconcileQueued = true;
        this.#logger.info({ stream, running: slot.reason }, 'reconciliation queued: the stream is running; it starts when that run ends');
        return 'queued';
      }
      this.#logger.debug({ stream, running: slot.reason, reason }, 'tick skipped: the stream is still running');
      this.#options.onTickSkipped?.(stream, reason);
      return 'skipped';
    }
    slot.reason = reason;
    slot.running = this.#runOnce(stream, reason).finally(() => {
      slot.running = null;
      slot.reason = null;
      if (slot.reconcileQueued && this.#state === 'running') {
        slot.reconcileQueued = false;
        this.trigger(stream, 'reconcile');
      }
    });
    return 'started';
  }

  /**
   * One tick of `stream`'s sync schedule (node-cron calls it; tests call it to drive the schedule
   * without a clock): a sync run unless the stream is quiet and its interval has not passed
   * (`rested`). A quiet stream whose changelog shows a change row since its last run started (a
   * write-through) is woken and runs.
   * @throws Error for a stream this scheduler does not run
   */
  async tick(stream: StreamName): Promise<TickOutcome> {
    const slot = this.#slot(stream);
    if (this.#state === 'running' && !slot.running && (this.#options.mayRun?.(stream) ?? true) && !slot.backoff.tick()) {
      if (!(await this.#touched(stream, slot))) {
        this.#logger.debug({ stream, factor: slot.backoff.factor }, 'tick rested: the stream has been quiet');
        this.#options.onTickRested?.(stream, slot.backoff.factor);
        return 'rested';
      }
      this.#logger.debug({ stream }, 'quiet stream woken: a change row of it was appended since its last run');
      slot.backoff.wake();
    }
    return this.trigger(stream, 'sync');
  }

  /**
   * Brings a quiet stream back to its schedule: its next tick runs (a change of it seen elsewhere).
   * @throws Error for a stream this scheduler does not run
   */
  wake(stream: StreamName): void {
    this.#slot(stream).backoff.wake();
  }

  /** A stream's polling interval now, in ticks of its schedule (1: every tick). */
  pollFactor(stream: StreamName): number {
    return this.#slot(stream).backoff.factor;
  }

  /** The streams running now, with why. */
  activeRuns(): { stream: StreamName; reason: RunReason }[] {
    return [...this.#slots.entries()].filter(([, slot]) => slot.reason !== null).map(([stream, slot]) => ({ stream, reason: slot.reason! }));
  }

  /** Resolves when no run is in progress (queued reconciliations included). */
  async idle(): Promise<void> {
    for (;;) {
      const running = [...this.#slots.values()].map((slot) => slot.running).filter((run): run is Promise<void> => run !== null);
      if (running.length === 0) return;
      await Promise.allSettled(running);
    }
  }

  /**
   * Stops the cron tasks, aborts every run in progress (the engine keeps its checkpoint: the next
   * start resumes it) and waits for them to end. Queued reconciliations are dropped. Safe to call twice.
   */
  async stop(): Promise<void> {
    if (this.#state === 'stopped') return;
    this.#state = 'stopped';
    await Promise.allSettled(this.#tasks.map(async (task) => task.destroy()));
    for (const slot of this.#slots.values()) slot.reconcileQueued = false;
    this.#abort.abort(new Error('the daemon is stopping'));
    await this.idle();
    this.#logger.debug('scheduler stopped');
  }

  #slot(stream: StreamName): StreamSlot {
    const slot = this.#slots.get(stream);
    if (!slot) throw new Error(`stream "${stream}" is not scheduled; scheduled: ${[...this.#slots.keys()].join(', ')}`);
    return slot;
  }

  /** Whether the changelog holds a change row of `stream` appended since its last run started; true when unsure (a failed read polls). */
  async #touched(stream: StreamName, slot: StreamSlot): Promise<boolean> {
    const activity = this.#options.activity;
    if (!activity) return false;
    if (slot.since === null) return true;
    try {
      const { touched, position } = await activity.touchedSince(stream, slot.since);
      // Rows of other streams are passed over once; this stream's rows wake it (its next run reads the position anew).
      if (!touched) slot.since = position;
      return touched;
    } catch (error) {
      this.#logger.warn({ stream, err: error }, 'could not read the changelog to decide whether a quiet stream changed; polling it');
      return true;
    }
  }

  async #runOnce(stream: StreamName, reason: RunReason): Promise<void> {
    const slot = this.#slot(stream);
    const probeFirst = reason === 'sync' && slot.backoff.probesNext();
    const previousTotal = slot.backoff.lastCompleteTotal;
    const result = await this.#runEngine(stream, slot, reason, probeFirst ? { probeFirst } : {});
    // A complete-scan stream's sync found the list shorter than its previous scan (a record left:
    // this scan counted its first miss): the second complete scan of the two-scan rule runs now, not
    // a tick (or a resting interval) later (docs/sync.md "Change probe").
    const total = result.scan?.mode === 'complete' ? result.scan.total : undefined;
    if (reason === 'sync' && STREAMS[stream].request.cursor === 'complete-scan' && result.status === 'succeeded' && total !== undefined && previousTotal !== undefined && total < previousTotal && result.tombstones === 0 && this.#state === 'running') {
      this.#logger.debug({ stream, total, previousTotal }, 'a record left the list: the confirming complete scan runs at once');
      await this.#runEngine(stream, slot, reason, {});
    }
  }

  /** One engine run of `stream`: counted as a poll, read by its backoff, reported to `onRunFinished`. */
  async #runEngine(stream: StreamName, slot: StreamSlot, reason: RunReason, runOptions: { probeFirst?: boolean }): Promise<RunResult> {
    slot.backoff.polled();
    const started = performance.now();
    this.#options.onRunStarted?.(stream, reason);
    // Read beside the run, not before it (on SQLite the read runs at once when the file is free):
    // the run starts exactly as it would without adaptive polling.
    const position = this.#options.activity?.position().catch((error: unknown) => {
      this.#logger.warn({ stream, err: error }, 'could not read the changelog position; the stream polls on its schedule until it is read');
      return null;
    });
    let result: RunResult;
    try {
      result = await this.#options.engine.run(stream, reason, { signal: this.#abort.signal, ...runOptions });
    } catch (error) {
      // The engine reports API failures as results; a throw is a bug or a database failure.
      const err = error instanceof Error ? error : new Error(String(error));
      this.#logger.error({ stream, reason, err }, 'run threw; the next tick tries again');
      result = { stream, reason, mode: 'complete', status: 'failed', resumed: false, pages: 0, records: 0, changes: 0, tombstones: 0, rejected: 0, driftStepBacks: 0, error: err };
    }
    slot.since = position === undefined ? null : await position;
    slot.backoff.record(result);
    this.#options.onRunFinished?.(result, performance.now() - started);
    return result;
  }
}

/** node-cron's logger interface on top of pino (missed executions and task errors reach our logs). */
function toCronLogger(logger: Logger): CronLogger {
  return {
    info: (message) => logger.debug({ source: 'node-cron' }, message),
    warn: (message) => logger.warn({ source: 'node-cron' }, message),
    error: (message, err) => logger.error({ source: 'node-cron', err: err ?? message }, typeof message === 'string' ? message : message.message),
    debug: (message) => logger.debug({ source: 'node-cron' }, typeof message === 'string' ? message : message.message),
  };
}
