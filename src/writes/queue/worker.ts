/**
 * The write worker (docs/writes.md): a BullMQ Worker running the write engine, usable inside the
 * daemon and in extra `bizops-sync worker` processes. Every process shares the one rate budget (pass a
 * `RedisRateBudget`), the queue in Redis and the `writes` table in the mirror database.
 *
 *   const worker = await startWriteWorker({
 *     connection: sqliteConnection(openMirror(path)), queue: { redis: config.redisUrl },
 *     api: { baseUrl: config.baseUrl, tokens: config.tokens, budget },
 *     concurrency: 4, logger,
 *   });
 *   ...
 *   await worker.close();
 *
 * The `writes` row is the truth; BullMQ only dispatches. Each run of a job takes the write's claim
 * on its row first (src/writes/write-store.ts), so a second run of the same write (a job re-added after
 * Redis lost it, a second worker, a replica) leaves it alone. The worker's sweeper
 * (src/writes/queue/sweeper.ts) re-queues, at start, on an interval and on every Redis reconnect, the
 * unfinished writes whose job is gone. A worker SIGKILLed mid-job leaves its claim and its job's
 * BullMQ lock (as long as the claim) to expire; a live worker's stalled check then moves the job back
 * to wait, within about two claim lengths, and the row tells the next run where the last one stopped
 * (`queued`: nothing was sent; `sending`: maybe sent, so the outcome is resolved, not resent blindly). What that guarantees
 * is in src/writes/write-engine.ts: never sent again while the outcome is unknown, and at most once per
 * Idempotency-Key where the server honours the key.
 *
 * Retries: one layer, BullMQ's job attempts. The worker's client retries only 429s (waits for the
 * budget). A 429 the client gave up on, or a shutdown while a job waits for a budget slot or
 * between ledger lookups, moves the job to BullMQ's delayed set (`DelayedError`: no attempt spent);
 * a final `failed` ends the job with `UnrecoverableError` (no retry); `needs_review` completes it.
 */
import type { RoundReports } from '../../daemon/part-supervisor.ts';
import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import { ApiClient, type ApiClientOptions } from '../../client/client.ts';
import type { BudgetSource } from '../../client/hooks.ts';
import { silentLogger, type Logger } from '../../logging/logger.ts';
import { DatabaseUnavailableError, type SqlConnection } from '../../mirror/sql/executor.ts';
import type { AppendedChange } from '../../mirror/mirror-store.ts';
import { STREAMS } from '../../streams/definitions.ts';
import { DEFAULT_CLAIM_SECONDS, WriteEngine, type WriteProcessResult } from '../write-engine.ts';
import { DEFAULT_QUEUE_NAME, DEFAULT_QUEUE_PREFIX, openWriteQueue, redisConnection, type WriteJobData, type WriteQueueLocation, type WriteRetrySchedule } from './write-queue.ts';
import { defaultWriteThrough, WriteStore, type WriteThroughHook } from '../write-store.ts';
import { DEFAULT_SWEEP_INTERVAL_MS, WriteSweeper } from './sweeper.ts';

/** Options of `startWriteWorker`: the mirror connection, the queue, how to reach the API, and BullMQ tuning. */
export interface WriteWorkerOptions {
  /**
   * The mirror's connection (the `writes` table, the changelog, the stream tables for write-through);
   * SQLite: `sqliteConnection(handle)`, best on a handle of its own. Stays the caller's.
   */
  connection: SqlConnection;
  queue: WriteQueueLocation;
  /**
   * How to reach the API. The worker builds its own ApiClient on `budget` (so that closing the
   * worker cancels only its own waits for a slot); `budget` stays the caller's (shared by every
   * client of the process). A function gives the budget per token name (config `rateLimit.scope: 'token'`).
   * `requestDeadlineMs` (config `api.requestDeadlineSeconds`) bounds each whole request, as for the
   * sync, and the ledger lookups of an ambiguous write span it.
   */
  api: Pick<ApiClientOptions, 'baseUrl' | 'tokens' | 'timeoutMs' | 'requestDeadlineMs' | 'retry' | 'describeToken'> & { budget: BudgetSource };
  /** Jobs run at once in this process. Default 4. */
  concurrency?: number;
  logger?: Logger;
  /**
   * Mirror write-through of successful responses (transaction.create -> transactions, deal.close ->
   * deals). Default: the mirror store's upsert (`MirrorStore.applyRecords`). null turns it off.
   */
  writeThrough?: WriteThroughHook | null;
  /** See WriteEngineOptions (`ledgerSettleMs`: config `writes.ledgerSettleSeconds`; `claimSeconds`: `writes.claimSeconds`). */
  ambiguousSettleMs?: number;
  ledgerLookbackMs?: number;
  ledgerSettleMs?: number;
  ledgerLookups?: number;
  claimSeconds?: number;
  /**
   * BullMQ lock of a running job, ms (renewed every half of it); a killed worker's job is found
   * stalled and run again once it lapses. Default: the claim's length (`claimSeconds`, 30 s unless
   * set), so a dead holder's write is taken over when its claim expires, not later.
   */
  lockDurationMs?: number;
  /** How often stalled jobs are looked for, ms. Default: the claim's length, as `lockDurationMs`. */
  stalledIntervalMs?: number;
  /** Times a job may stall (its worker died) before BullMQ fails it; the sweeper re-queues it then. Default 5. */
  maxStalledCount?: number;
  /** Backoff of BullMQ retries for jobs re-queued by the sweeper (new jobs take theirs from the intake). */
  retrySchedule?: WriteRetrySchedule;
  /**
   * The sweeper (src/writes/queue/sweeper.ts): a sweep before the worker starts, then every
   * `sweepIntervalMs` (config `writes.sweepSeconds`, default 5000) and on every Redis reconnect.
   * `sweep: false` turns it off (tests of the queue alone).
   */
  sweep?: boolean;
  sweepIntervalMs?: number;
  /** Told how each background sweep went (the daemon's `writes` part reports them: src/daemon/part-supervisor.ts `RoundReports`). */
  sweepRounds?: RoundReports;
  /** Hears every change row appended (to wake the webhook dispatcher). */
  onChanges?: (changes: AppendedChange[]) => void;
}

/** Counters of one write worker since it started (`WriteWorkerHandle.stats()`). */
export interface WriteWorkerStats {
  /** Jobs by what the engine did. */
  finished: number;
  retried: number;
  /** Jobs put back in BullMQ's delayed set without spending an attempt (429, shutdown during a wait). */
  delayed: number;
  skipped: number;
  /** Requests this worker's client sent (ledger lookups included). */
  requests: number;
}

/** A running write worker, as `startWriteWorker` returns it. */
export interface WriteWorkerHandle {
  readonly worker: Worker<WriteJobData>;
  /** The worker's own API client (tests read its stats). */
  readonly client: ApiClient;
  /** Writes re-queued by the start-up sweep. */
  readonly requeued: readonly string[];
  /** Writes the start-up sweep could NOT re-queue (their `enqueue_error` says why; logged as errors). */
  readonly requeueFailed: readonly { writeId: string; error: string }[];
  /** The worker's sweeper (null when `sweep: false`). */
  readonly sweeper: WriteSweeper | null;
  stats(): WriteWorkerStats;
  /**
   * Stops taking jobs, cancels waits for a budget slot (those jobs run again later), lets requests in
   * flight finish, and closes the connections it opened. The mirror connection and the budget stay open.
   */
  close(): Promise<void>;
}

/**
 * Starts a write worker. Its start-up sweep runs before it takes jobs; when the mirror's database
 * goes away during that sweep (`DatabaseUnavailableError`: a PostgreSQL restart or failover after the
 * mirror was opened), the worker starts anyway, with a warning, and the sweep runs again at its
 * interval (docs/writes.md "The sweeper").
 * @throws when Redis cannot be reached for the start-up sweep, or the sweep fails otherwise
 */
export async function startWriteWorker(options: WriteWorkerOptions): Promise<WriteWorkerHandle> {
  const logger = options.logger ?? silentLogger;
  const shutdown = new AbortController();
  // Closing cancels waits for a budget slot only: a write already sent finishes, never turning ambiguous.
  // One retry layer for writes: BullMQ's job attempts (with backoff). The client retries only 429s,
  // which are waits for the budget, never attempts the server processed.
  const client = new ApiClient({ ...options.api, retry: { ...options.api.retry, maxRetries: 0 }, budgetWaitSignal: shutdown.signal, logger });
  const store = new WriteStore(options.connection);
  const engine = new WriteEngine({
    store,
    client,
    logger,
    writeThrough: options.writeThrough === undefined ? defaultWriteThrough(STREAMS) : options.writeThrough,
    ambiguousSettleMs: options.ambiguousSettleMs,
    ledgerLookbackMs: options.ledgerLookbackMs,
    requestDeadlineMs: options.api.requestDeadlineMs,
    ledgerSettleMs: options.ledgerSettleMs,
    ledgerLookups: options.ledgerLookups,
    claimSeconds: options.claimSeconds,
    onChanges: options.onChanges,
  });

  const { client: connection, owned } = redisConnection(options.queue.workerRedis ?? options.queue.redis, 'worker');
  let requeued: string[] = [];
  let requeueFailed: { writeId: string; error: string }[] = [];
  let sweeper: WriteSweeper | null = null;
  let producer: ReturnType<typeof openWriteQueue> | undefined;
  if (options.sweep ?? true) {
    producer = openWriteQueue(options.queue);
    sweeper = new WriteSweeper({
      store,
      queue: producer.queue,
      retrySchedule: options.retrySchedule,
      intervalMs: options.sweepIntervalMs,
      ...(options.sweepRounds ? { rounds: options.sweepRounds } : {}),
      // A reconnect of either connection may follow a Redis restart that lost every job.
      reconnects: [connection, producer.client],
      logger,
    });
    try {
      ({ requeued, failed: requeueFailed } = await sweeper.sweep());
    } catch (error) {
      if (error instanceof DatabaseUnavailableError) {
        logger.warn({ err: error, sweepSeconds: (options.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS) / 1000 }, "the start-up sweep could not read the mirror (its database went away); the worker starts, and the sweep runs again at its interval");
      } else {
        await producer.close();
        if (owned) connection.disconnect();
        throw error;
      }
    }
  }

  const counters: Omit<WriteWorkerStats, 'requests'> = { finished: 0, retried: 0, delayed: 0, skipped: 0 };
  const claimMs = Math.round((options.claimSeconds ?? DEFAULT_CLAIM_SECONDS) * 1000);
  const worker = new Worker<WriteJobData>(
    options.queue.queueName ?? DEFAULT_QUEUE_NAME,
    async (job: Job<WriteJobData>, token?: string) => {
      const result: WriteProcessResult = await engine.process(job.data.writeId, {
        run: job.attemptsMade + 1,
        maxRuns: job.opts.attempts ?? 1,
        signal: shutdown.signal,
      });
      if (result.action === 'delay') {
        // A wait, not a failure: back to BullMQ's delayed set; no job attempt is spent.
        counters.delayed++;
        logger.info({ writeId: job.data.writeId, delayMs: result.delayMs, reason: result.reason }, 'write delayed');
        await job.moveToDelayed(Date.now() + result.delayMs, token);
        throw new DelayedError(result.reason);
      }
      if (result.action === 'retry') {
        counters.retried++;
        logger.info({ writeId: job.data.writeId, attempt: job.attemptsMade + 1, reason: result.reason }, 'write will be retried');
        throw new Error(result.reason);
      }
      if (result.action === 'skipped') {
        counters.skipped++;
        return { skipped: result.reason };
      }
      counters.finished++;
      // A write that failed ends its job as failed in BullMQ, never retried there (needs_review
      // completes it: the outcome is recorded and waits for a person, not for BullMQ).
      if (result.write.status === 'failed') throw new UnrecoverableError(`write failed: ${result.write.outcome ?? ''}`);
      return { status: result.write.status };
    },
    {
      connection,
      prefix: options.queue.prefix ?? DEFAULT_QUEUE_PREFIX,
      concurrency: options.concurrency ?? 4,
      // The job's lock lasts as long as the write's claim, and stalled jobs are looked for as often:
      // a killed holder's job runs again within about two claim lengths of its death (its lock
      // lapses, then the next stalled check moves it back to wait), as its claim promises.
      lockDuration: options.lockDurationMs ?? claimMs,
      stalledInterval: options.stalledIntervalMs ?? claimMs,
      maxStalledCount: options.maxStalledCount ?? 5,
      autorun: true,
    },
  );
  worker.on('error', (error) => logger.error({ error: error.message }, 'write worker error'));
  worker.on('failed', (job, error) => {
    if (job && error.name !== 'UnrecoverableError' && /stalled/i.test(error.message)) logger.error({ writeId: job.data.writeId, error: error.message }, 'write job failed by stalling; the sweeper re-queues it');
  });
  await worker.waitUntilReady();
  sweeper?.start();

  let closing: Promise<void> | undefined;
  return {
    worker,
    client,
    requeued,
    requeueFailed,
    sweeper,
    stats: () => ({ ...counters, requests: client.stats.requests }),
    close() {
      closing ??= (async () => {
        shutdown.abort(new Error('write worker is closing'));
        await sweeper?.stop();
        await worker.close();
        await client.close();
        await producer?.close();
        if (owned) await connection.quit().catch(() => connection.disconnect());
      })();
      return closing;
    },
  };
}
