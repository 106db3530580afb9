/**
 * The suite's Redis teardown (test/redis-leftovers.ts): the keys of a simulator that is gone are
 * deleted, those of one still listening, and every other key, are kept.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:net';
import { Redis } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { removeLeftoverKeys } from './redis-leftovers.ts';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const servers: Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

/** A port something listens on (`close` false), or one nothing listens on any more. */
async function port(close: boolean): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: number } = server.address() as { port: number };
  if (close) await new Promise((resolve) => server.close(resolve));
  else servers.push(server);
  return number;
}

it('deletes the queue and budget keys of a simulator that is gone, keeps those of one still listening and any other key', async () => {
  const [gone, alive] = [await port(true), await port(false)];
  const prefix = `test:leftovers:${randomUUID()}:`;
  const keys = {
    goneQueue: `${prefix}bizops-writes.default.127.0.0.1_${gone}:meta`,
    goneBudget: `${prefix}rate:{company:default@127.0.0.1:${gone}}:epoch`,
    aliveQueue: `${prefix}bizops-writes.default.127.0.0.1_${alive}:meta`,
    other: `${prefix}bizops-writes.default.api.example.com:meta`,
  };
  const redis = new Redis(REDIS_URL);
  try {
    for (const key of Object.values(keys)) await redis.set(key, '1');
    expect((await removeLeftoverKeys(REDIS_URL, prefix)).sort()).toEqual([keys.goneBudget, keys.goneQueue].sort());
    expect((await redis.keys(`${prefix}*`)).sort()).toEqual([keys.aliveQueue, keys.other].sort());
    await redis.del(keys.aliveQueue, keys.other);
  } finally {
    redis.disconnect();
  }
});
