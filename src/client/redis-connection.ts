/**
 * Connections to Redis (ioredis) for the shared rate budget and the write queue (src/writes/queue/write-queue.ts
 * re-exports these): a producer connection fails fast, a worker connection waits. Its own module,
 * without BullMQ, so that a process that only syncs loads no queue library.
 */
import { Redis } from 'ioredis';

/**
 * ioredis options of a PRODUCER connection (the intake's queue, the rate budget): commands fail at
 * once while Redis is unreachable instead of queueing in memory for ever (BullMQ's advice:
 * `enableOfflineQueue: false` for producers), a connect gives up after 2 s, and a command is retried
 * once after a reconnect; a dead socket is destroyed 200 ms after a disconnect (ioredis' 2 s timer
 * would keep an exiting process alive). The connection itself keeps reconnecting in the background.
 */
export const PRODUCER_REDIS_OPTIONS = { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000, disconnectTimeout: 200 } as const;

/**
 * ioredis options of a WORKER connection: `maxRetriesPerRequest: null`, as BullMQ requires for
 * workers (their blocking commands wait through a Redis restart).
 */
export const WORKER_REDIS_OPTIONS = { maxRetriesPerRequest: null } as const;

/**
 * An ioredis connection for BullMQ: a given client is used as it is (not ours to close); a URL opens
 * one with the options of its `role` (`PRODUCER_REDIS_OPTIONS` / `WORKER_REDIS_OPTIONS`).
 * @returns the client and whether the caller owns it (and must close it)
 */
export function redisConnection(redis: Redis | string, role: 'producer' | 'worker'): { client: Redis; owned: boolean } {
  if (typeof redis !== 'string') return { client: redis, owned: false };
  const client = new Redis(redis, role === 'worker' ? WORKER_REDIS_OPTIONS : PRODUCER_REDIS_OPTIONS);
  // Failures surface through the commands that fail; without a listener ioredis prints every reconnect error.
  client.on('error', () => undefined);
  return { client, owned: true };
}

/**
 * Connects a producer connection (`PRODUCER_REDIS_OPTIONS`) to `url` and waits until it is ready.
 * @throws the connection error (ECONNREFUSED, a timeout, NOAUTH) when Redis does not answer within
 *   the connect timeout; nothing is left open then
 */
export async function connectProducer(url: string): Promise<Redis> {
  const connectTimeoutMs = PRODUCER_REDIS_OPTIONS.connectTimeout;
  // The first connect: no retries, and our own unref'd timeout (ioredis' connect timer would keep a
  // process that is about to exit alive for its full length).
  const client = new Redis(url, { ...PRODUCER_REDIS_OPTIONS, connectTimeout: 0, lazyConnect: true, retryStrategy: () => null });
  let first: Error | undefined;
  client.on('error', (error: Error) => {
    first ??= error;
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      client.connect().then(() => client.ping()),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${connectTimeoutMs} ms`)), connectTimeoutMs);
        timer.unref();
      }),
    ]);
  } catch (error) {
    client.disconnect();
    throw first ?? error;
  } finally {
    clearTimeout(timer);
  }
  // From now on: reconnect in the background after a drop, each connect bounded.
  client.options.connectTimeout = connectTimeoutMs;
  client.options.retryStrategy = (times) => Math.min(times * 200, 2000);
  return client;
}
