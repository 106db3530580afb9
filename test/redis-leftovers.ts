/**
 * The suite removes what it leaves in Redis (vitest `globalSetup`: `teardown` runs once every test
 * file is done). Tests that make their own Redis keys use a prefix of their own and delete it; the
 * daemons and commands the tests start use the product's keys, named after the simulator they talk
 * to: its write queue `bizops:bizops-writes.<company>.127.0.0.1_<port>...` (BullMQ keeps a queue's
 * `meta`, `id` and `events` for ever) and its rate budget `bizops:rate:{company:<id>@127.0.0.1:<port>}:...`
 * (which expire on their own). A key naming a loopback port nothing listens on any more belongs to
 * a simulator that is gone: it is deleted. A simulator still running (another run's, on the same
 * Redis database) keeps its keys.
 */
import { connect } from 'node:net';
import { Redis } from 'ioredis';

/** A loopback host and port in a key name: `127.0.0.1:4010`, `127.0.0.1_4010`, `localhost:4010`. */
const LOOPBACK_PORT = /(?:127\.0\.0\.1|localhost)[:_](\d{2,5})\b/;

/** True when something accepts a TCP connection on 127.0.0.1:`port` now. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const done = (open: boolean) => {
      socket.destroy();
      resolve(open);
    };
    socket.setTimeout(1000, () => done(true));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * Deletes the keys under `prefix` (default `bizops:`) that name a loopback port nothing listens on.
 * @returns the keys deleted
 */
export async function removeLeftoverKeys(redisUrl: string, prefix = 'bizops:'): Promise<string[]> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
  } catch {
    return [];
  }
  const open = new Map<number, Promise<boolean>>();
  const deleted: string[] = [];
  try {
    for await (const keys of redis.scanStream({ match: `${prefix}*`, count: 1000 }) as AsyncIterable<string[]>) {
      const gone: string[] = [];
      for (const key of keys) {
        const port = LOOPBACK_PORT.exec(key)?.[1];
        if (port === undefined) continue;
        if (!open.has(Number(port))) open.set(Number(port), listening(Number(port)));
        if (!(await open.get(Number(port)))) gone.push(key);
      }
      if (gone.length > 0) await redis.del(...gone);
      deleted.push(...gone);
    }
  } finally {
    redis.disconnect();
  }
  return deleted;
}

/** vitest's global teardown: the tests' Redis (`REDIS_URL`, README "Development") without the keys of simulators gone. */
export async function teardown(): Promise<void> {
  await removeLeftoverKeys(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
}
