/**
 * The write queue on BullMQ (docs/writes.md; bullmq + ioredis). One job per write; the job id
 * IS the write id, so adding a write twice is one job. The job carries only the write's id and kind:
 * the `writes` row in the mirror is the source of truth for the payload and the status.
 */
import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { redisConnection } from '../../client/redis-connection.ts';

// The Redis connections live apart (no BullMQ) so that a sync, which shares the rate budget in Redis, never loads the queue.
export { connectProducer, PRODUCER_REDIS_OPTIONS, redisConnection, WORKER_REDIS_OPTIONS } from '../../client/redis-connection.ts';

/** Default BullMQ queue name (the daemon and CLI use a per-deployment name: `deploymentQueueName`). */
export const DEFAULT_QUEUE_NAME = 'bizops-writes';
/** Default BullMQ key prefix (`bizops`): Redis keys are `bizops:<queue name>:...`. */
export const DEFAULT_QUEUE_PREFIX = 'bizops';

/**
 * The queue of one connection: `bizops-writes.<companyId>.<api host>`, so that workers of another
 * company or another API (staging next to production) on the same Redis never take its jobs. A named
 * connection other than `default` appends `.<connection>`: two connections on one company keep their
 * writes in their own mirrors, so each needs its own queue (a worker reads the write from its file).
 */
export function deploymentQueueName(config: { companyId: string; baseUrl: string; connection?: string }): string {
  const host = new URL(config.baseUrl).host.replace(/[^A-Za-z0-9.-]/g, '_');
  const base = `bizops-writes.${config.companyId.replace(/[^A-Za-z0-9.-]/g, '_')}.${host}`;
  return config.connection === undefined || config.connection === 'default' ? base : `${base}.${config.connection}`;
}

/** Where the queue lives. Tests give each run its own `prefix`. */
export interface WriteQueueLocation {
  /** An ioredis client (shared, not closed by us) or a `redis://` URL (a connection we own). Producers (the intake) use it. */
  redis: Redis | string;
  /**
   * The workers' connection: a `redis://` URL (the worker opens its own with `WORKER_REDIS_OPTIONS`)
   * or a client made with them. Default: `redis`.
   */
  workerRedis?: Redis | string;
  /** Default `bizops-writes`. */
  queueName?: string;
  /** BullMQ key prefix; default `bizops`. */
  prefix?: string;
}

/** The data of a write job. */
export interface WriteJobData {
  writeId: string;
  kind: string;
}

/**
 * BullMQ retries of a write job. The processor throws (and so asks for a retry) only when sending
 * again is provably safe for the kind (src/writes/write-engine.ts); every other outcome completes the job.
 */
export interface WriteRetrySchedule {
  /** Job attempts in all, the first included. Default 8. */
  attempts?: number;
  /** First backoff delay, ms, doubled each retry. Default 1000. */
  backoffMs?: number;
}

/**
 * BullMQ options of the job for write `writeId`: job id = write id (so adding it twice is one job),
 * `schedule.attempts` attempts (default 8) with exponential backoff from `schedule.backoffMs` ms
 * (default 1000); completed jobs kept up to 24 h (at most 10,000), failed jobs 7 days.
 */
export function writeJobOptions(writeId: string, schedule: WriteRetrySchedule = {}): JobsOptions {
  return {
    jobId: writeId,
    attempts: schedule.attempts ?? 8,
    backoff: { type: 'exponential', delay: schedule.backoffMs ?? 1000 },
    // Finished jobs are kept a while for inspection; the `writes` row keeps the outcome for good.
    removeOnComplete: { age: 24 * 3600, count: 10_000 },
    removeOnFail: { age: 7 * 24 * 3600 },
  };
}

/** Opens the write queue (producer side) on its connection (`client`); `close()` closes both (the connection only when it opened it). */
export function openWriteQueue(location: WriteQueueLocation): { queue: Queue<WriteJobData>; client: Redis; close(): Promise<void> } {
  const { client, owned } = redisConnection(location.redis, 'producer');
  const queue = new Queue<WriteJobData>(location.queueName ?? DEFAULT_QUEUE_NAME, {
    connection: client,
    prefix: location.prefix ?? DEFAULT_QUEUE_PREFIX,
  });
  // Connection errors surface through the command that fails (the intake notes them on the row); without a
  // listener BullMQ prints each one as a raw stack trace.
  queue.on('error', () => undefined);
  return {
    queue,
    client,
    async close() {
      await queue.close();
      if (owned) await client.quit().catch(() => client.disconnect());
    },
  };
}
