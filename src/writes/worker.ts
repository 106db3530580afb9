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
 * Crash safety: a worker SIGKILLed mid-job loses its BullMQ lock; the stalled-job check of any live
 * worker puts the job back and it runs again. The `writes` row tells the rerun where the last run
 * stopped (`queued`: nothing was sent; `sending`: maybe sent, so the outcome is resolved, not resent
 * blindly). What that guarantees is in src/writes/engine.ts: never sent again while the outcome is
 * unknown, and at most once per Idempotency-Key where the server honours the key.
 *
 * Retries: one layer, BullMQ's job attempts. The worker's client retries only 429s (waits for the
 * budget). A 429 the client gave up on, or a shutdown while a job waits for a budget slot or
 * between ledger lookups, moves the job to BullMQ's delayed set (`DelayedError`: no attempt spent);
 * a final `failed` ends the job with `UnrecoverableError` (no retry); `needs_review` completes it.
 */
import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import { ApiClient, type ApiClientOptions } from '../client/client.ts';
import type { BudgetSource } from '../client/hooks.ts';
import { silentLogger, type Logger } from '../logging/logger.ts';
import type { SqlConnection } from '../mirror/sql/executor.ts';
import type { AppendedChange } from '../mirror/store.ts';
import { STREAMS } from '../streams/definitions.ts';
import { WriteEngine, type WriteProcessResult } from './engine.ts';
import { WriteIntake } from './intake.ts';
import { DEFAULT_QUEUE_NAME, DEFAULT_QUEUE_PREFIX, redisConnection, type WriteJobData, type WriteQueueLocation, type WriteRetrySchedule } from './queue.ts';
import { defaultWriteThrough, WriteStore, type WriteThroughHook } from './store.ts';

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
   */
  api: Pick<ApiClientOptions, 'baseUrl' | 'tokens' | 'timeoutMs' | 'retry'> & { budget: BudgetSource };
  /** Jobs run at once in this process. Default 4. */
  concurrency?: number;
  logger?: Logger;
  /**
   * Mirror write-through of successful responses (transaction.create -> transactions, deal.close ->
   * deals). Default: the mirror store's upsert (`MirrorStore.applyRecords`). null turns it off.
   */
  writeThrough?: WriteThroughHook | null;
  /** See WriteEngineOptions. */
  ambiguousSettleMs?: number;
  ledgerLookbackMs?: number;
  ledgerLookupWindowMs?: number;
  ledgerLookups?: number;
  /** BullMQ lock of a running job, ms; a killed worker's job is re-run after it expires. Default 30000. */
  lockDurationMs?: number;
  /** How often stalled jobs are looked for, ms. Default 30000. */
  stalledIntervalMs?: number;
  /** Times a job may stall (its worker died) before BullMQ fails it; the startup sweep re-queues it then. Default 5. */
  maxStalledCount?: number;
  /** Backoff of BullMQ retries for jobs re-queued by the sweep (new jobs take theirs from the intake). */
  retrySchedule?: WriteRetrySchedule;
  /** Run the startup sweep (re-queue `queued`/`sending` rows missing from BullMQ) before starting. Default true. */
  sweepOnStart?: boolean;
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
  /** Writes re-queued by the startup sweep. */
  readonly requeued: readonly string[];
  /** Writes the startup sweep could NOT re-queue (their `enqueue_error` says why; logged as errors). */
  readonly requeueFailed: readonly { writeId: string; error: string }[];
  stats(): WriteWorkerStats;
  /**
   * Stops taking jobs, cancels waits for a budget slot (those jobs run again later), lets requests in
   * flight finish, and closes the connections it opened. The mirror connection and the budget stay open.
   */
  close(): Promise<void>;
}

/**
 * Starts a write worker.
 * @throws when Redis cannot be reached for the startup sweep
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
    requestTimeoutMs: options.api.timeoutMs,
    ledgerLookupWindowMs: options.ledgerLookupWindowMs,
    ledgerLookups: options.ledgerLookups,
    onChanges: options.onChanges,
  });

  let requeued: string[] = [];
  let requeueFailed: { writeId: string; error: string }[] = [];
  if (options.sweepOnStart ?? true) {
    const intake = new WriteIntake({ connection: options.connection, queue: options.queue, retrySchedule: options.retrySchedule, logger });
    try {
      ({ requeued, failed: requeueFailed } = await intake.requeueMissing());
    } finally {
      await intake.close();
    }
  }

  const counters: Omit<WriteWorkerStats, 'requests'> = { finished: 0, retried: 0, delayed: 0, skipped: 0 };
  const { client: connection, owned } = redisConnection(options.queue.workerRedis ?? options.queue.redis, 'worker');
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
      lockDuration: options.lockDurationMs ?? 30_000,
      stalledInterval: options.stalledIntervalMs ?? 30_000,
      maxStalledCount: options.maxStalledCount ?? 5,
      autorun: true,
    },
  );
  worker.on('error', (error) => logger.error({ error: error.message }, 'write worker error'));
  worker.on('failed', (job, error) => {
    if (job && error.name !== 'UnrecoverableError' && /stalled/i.test(error.message)) logger.error({ writeId: job.data.writeId, error: error.message }, 'write job failed by stalling; the startup sweep re-queues it');
  });
  await worker.waitUntilReady();

  let closing: Promise<void> | undefined;
  return {
    worker,
    client,
    requeued,
    requeueFailed,
    stats: () => ({ ...counters, requests: client.stats.requests }),
    close() {
      closing ??= (async () => {
        shutdown.abort(new Error('write worker is closing'));
        await worker.close();
        await client.close();
        if (owned) await connection.quit().catch(() => connection.disconnect());
      })();
      return closing;
    },
  };
}
