/**
 * The sweeper (docs/writes.md "The sweeper"): the `writes` table is the truth, BullMQ only
 * dispatches, so every process that runs writes (a `worker`, the daemon) checks on an interval, and
 * whenever its Redis connection comes back, that every unfinished write nobody holds a claim on has a
 * job that will run:
 *
 * - a `queued` or `sending` row whose job is missing (Redis lost it: restarted without persistence,
 *   a failover, a flush) or finished (BullMQ gave up on a stalled job) is queued again;
 * - a row whose claim expired (its holder died) is queued again the same way when its job is missing
 *   or finished; a dead holder's job still `active` is left to BullMQ's stalled check, which moves it
 *   back to wait once its lock lapses (the lock lasts as long as the claim: src/writes/queue/worker.ts).
 *   Either way the run that takes it resolves it from its status (`sending`: by the kind's rule for
 *   ambiguous outcomes, never a blind re-send; src/writes/write-engine.ts).
 *
 * Rows a live run holds are left alone. Queueing is idempotent (job id = write id), so sweeps in
 * several processes at once are harmless. No restart is ever needed for an acknowledged write to be sent.
 *
 *   const sweeper = new WriteSweeper({ store, queue, intervalMs: 5000, redis: producerConnection, logger });
 *   await sweeper.sweep();   // the start-up sweep: throws when Redis does not answer
 *   sweeper.start();         // then on an interval and on every reconnect
 *   await sweeper.stop();
 */
import type { Queue } from 'bullmq';
import type { RoundReports } from '../../daemon/part-supervisor.ts';
import type { Redis } from 'ioredis';
import { silentLogger, type Logger } from '../../logging/logger.ts';
import { writeJobOptions, type WriteJobData, type WriteRetrySchedule } from './write-queue.ts';
import type { WriteStore } from '../write-store.ts';

/** BullMQ job states in which the job will still run: the write needs no re-queue. */
const PENDING_JOB_STATES: ReadonlySet<string> = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children']);

/** Default interval between two sweeps, ms (config `writes.sweepSeconds`). */
export const DEFAULT_SWEEP_INTERVAL_MS = 5000;

/** Rows whose job state is asked at once (one Redis round trip for them all: the commands are pipelined). */
const STATE_BATCH = 100;

/** What one sweep did. */
export interface SweepResult {
  /** Writes queued again. */
  requeued: string[];
  /** Writes that could NOT be queued again (their `enqueue_error` says why; logged as errors). */
  failed: { writeId: string; error: string }[];
}

/** Construction options of a WriteSweeper. */
export interface WriteSweeperOptions {
  store: WriteStore;
  /** The producer side of the write queue (the sweeper does not close it). */
  queue: Queue<WriteJobData>;
  retrySchedule?: WriteRetrySchedule;
  /** Between two sweeps after `start()`, ms. Default 5000. */
  intervalMs?: number;
  /** Redis connections whose `ready` (a reconnect) triggers a sweep. */
  reconnects?: readonly Redis[];
  logger?: Logger;
  /** Told how each background sweep went (the daemon's `writes` part: src/daemon/part-supervisor.ts). */
  rounds?: RoundReports;
}

/** Queues again the unfinished writes whose job is gone, as this module's header describes. */
export class WriteSweeper {
  private readonly store: WriteStore;
  private readonly queue: Queue<WriteJobData>;
  private readonly retrySchedule: WriteRetrySchedule;
  private readonly intervalMs: number;
  private readonly reconnects: readonly Redis[];
  private readonly logger: Logger;
  private readonly rounds: RoundReports | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<SweepResult> | undefined;
  private again = false;
  private stopped = false;
  /** True while the last background sweep failed (its error logged once per outage). */
  private failing = false;
  private readonly onReady = () => this.trigger();
  /** Counters since construction: sweeps run and writes queued again. */
  readonly stats = { sweeps: 0, requeued: 0 };

  /** @throws RangeError when `intervalMs` is not a positive number */
  constructor(options: WriteSweeperOptions) {
    this.store = options.store;
    this.queue = options.queue;
    this.retrySchedule = options.retrySchedule ?? {};
    this.intervalMs = options.intervalMs ?? DEFAULT_SWEEP_INTERVAL_MS;
    if (!(Number.isFinite(this.intervalMs) && this.intervalMs > 0)) throw new RangeError(`sweep interval must be a positive number of ms, got ${String(options.intervalMs)}`);
    this.reconnects = options.reconnects ?? [];
    this.logger = options.logger ?? silentLogger;
    this.rounds = options.rounds;
  }

  /** Sweeps on the interval and on every reconnect of the given connections, until `stop()`. */
  start(): void {
    if (this.timer || this.stopped) return;
    this.timer = setInterval(() => this.trigger(), this.intervalMs);
    this.timer.unref();
    for (const redis of this.reconnects) redis.on('ready', this.onReady);
  }

  /** Stops the interval and waits for a sweep in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    for (const redis of this.reconnects) redis.off('ready', this.onReady);
    await this.running?.catch(() => undefined);
  }

  /**
   * A sweep in the background (errors logged, once per outage; each outcome told to `rounds`); one
   * more after the current when one runs.
   */
  trigger(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.sweep().then(
      () => {
        if (this.failing) this.logger.info('write sweep works again');
        this.failing = false;
        this.rounds?.working();
      },
      (error: unknown) => {
        this.rounds?.failing(error);
        if (!this.failing) this.logger.warn({ error: error instanceof Error ? error.message : String(error) }, 'write sweep failed (Redis or the mirror did not answer); it runs again on the next interval or reconnect');
        this.failing = true;
      },
    );
  }

  /**
   * One sweep (sweeps never overlap: a call during one waits for it, then runs again).
   * @throws the Redis or database error when either does not answer (nothing is lost: the next sweep tries again)
   */
  async sweep(): Promise<SweepResult> {
    while (this.running) await this.running.catch(() => undefined);
    this.running = this.sweepOnce();
    try {
      return await this.running;
    } finally {
      this.running = undefined;
      if (this.again && !this.stopped) {
        this.again = false;
        this.trigger();
      }
    }
  }

  private async sweepOnce(): Promise<SweepResult> {
    this.stats.sweeps++;
    const requeued: string[] = [];
    const failed: SweepResult['failed'] = [];
    const writes = await this.store.unclaimed();
    for (let start = 0; start < writes.length; start += STATE_BATCH) {
      const batch = writes.slice(start, start + STATE_BATCH);
      const states = await Promise.all(batch.map((write) => this.queue.getJobState(write.id)));
      for (const [index, write] of batch.entries()) {
        const state = states[index]!;
        if (PENDING_JOB_STATES.has(state)) {
          if (write.enqueueError !== null) await this.store.setEnqueueError(write.id, null);
          continue;
        }
        // Finished or taken by a run since the list was read: nothing to do.
        const current = await this.store.get(write.id);
        if (!current || (current.status !== 'queued' && current.status !== 'sending') || (current.claimToken !== null && current.claimToken !== write.claimToken)) continue;
        const error = await this.requeue(write.id, write.kind, state);
        if (error === undefined) {
          await this.store.setEnqueueError(write.id, null);
          requeued.push(write.id);
          this.logger.warn({ writeId: write.id, kind: write.kind, status: write.status, jobState: state }, 'write queued again by the sweeper');
        } else {
          await this.store.setEnqueueError(write.id, error);
          failed.push({ writeId: write.id, error });
          this.logger.error({ writeId: write.id, kind: write.kind, status: write.status, jobState: state, error }, 'write NOT queued again by the sweeper');
        }
      }
    }
    this.stats.requeued += requeued.length;
    return { requeued, failed };
  }

  /**
   * Removes the finished job still holding the write's id (BullMQ ignores an `add` whose job id
   * exists), adds it again and checks it is pending.
   * @returns undefined when queued, else why not
   */
  private async requeue(writeId: string, kind: string, state: string): Promise<string | undefined> {
    try {
      if (state !== 'unknown') await (await this.queue.getJob(writeId))?.remove();
      await this.queue.add('write', { writeId, kind }, writeJobOptions(writeId, this.retrySchedule));
      const after = await this.queue.getJobState(writeId);
      if (!PENDING_JOB_STATES.has(after)) throw new Error(`its job is still ${after} after the add`);
      return undefined;
    } catch (error) {
      return `could not re-queue (job ${state === 'unknown' ? 'missing' : state}): ${error instanceof Error ? error.message : String(error)}`;
    }
  }
}
