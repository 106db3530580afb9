/**
 * Shared wiring of the write tests: a real Redis (unique queue prefix per test, removed afterwards),
 * the simulator over real HTTP, a real SQLite file in a temp dir.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { openMirror, type MirrorDatabase } from '../../src/mirror/database.ts';
import { startSimulator, type RunningSimulator, type SimulatorOptions } from '../../src/simulator/index.ts';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** The largest number of timestamps (ms) inside any window of `windowMs` (a half-open span [t, t + windowMs)). */
export function maxInAnyWindow(timestamps: readonly number[], windowMs: number): number {
  const sorted = [...timestamps].sort((a, b) => a - b);
  let max = 0;
  let start = 0;
  for (let end = 0; end < sorted.length; end++) {
    while (sorted[end]! - sorted[start]! >= windowMs) start++;
    max = Math.max(max, end - start + 1);
  }
  return max;
}

/** A world for one test: temp dir + SQLite mirror + unique Redis prefix; `cleanup` removes all of it. */
export interface WriteTestBed {
  dir: string;
  dbPath: string;
  db: MirrorDatabase;
  /** BullMQ prefix and rate-budget prefix unique to this test. */
  prefix: string;
  budgetPrefix: string;
  queueName: string;
  cleanup(): Promise<void>;
}

export function writeTestBed(): WriteTestBed {
  const dir = mkdtempSync(join(tmpdir(), 'bizops-writes-'));
  const dbPath = join(dir, 'mirror.db');
  const db = openMirror(dbPath);
  const id = randomUUID().slice(0, 8);
  const prefix = `test-writes-${id}`;
  const budgetPrefix = `test-rate-${id}`;
  return {
    dir,
    dbPath,
    db,
    prefix,
    budgetPrefix,
    queueName: 'writes',
    async cleanup() {
      db.close();
      rmSync(dir, { recursive: true, force: true });
      await deleteKeys(`${prefix}:*`);
      await deleteKeys(`${budgetPrefix}:*`);
    },
  };
}

/** Deletes every Redis key matching `pattern`. */
export async function deleteKeys(pattern: string): Promise<void> {
  const redis = new Redis(REDIS_URL);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/** Counts Redis keys matching `pattern`. */
export async function countKeys(pattern: string): Promise<number> {
  const redis = new Redis(REDIS_URL);
  try {
    let cursor = '0';
    let count = 0;
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      count += keys.length;
    } while (cursor !== '0');
    return count;
  } finally {
    redis.disconnect();
  }
}

/** A simulator; the rate limit is off unless asked for. */
export function simulator(options: SimulatorOptions = {}): Promise<RunningSimulator> {
  return startSimulator({ rateLimit: false, size: { transactions: 50, deals: 20, onboardings: 5, customers: 10 }, ...options });
}

/** Polls `check` every 25 ms until it returns true, or fails after `timeoutMs`. */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}
