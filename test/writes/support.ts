/**
 * Shared wiring of the write tests: a real Redis (unique queue prefix per test, removed afterwards),
 * the simulator over real HTTP, a real mirror (a SQLite file in a temp dir, or a fresh PostgreSQL
 * schema under BIZOPS_TEST_MIRROR=postgres: test/test-mirror.ts).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { beforeAll } from 'vitest';
import { RedisRateBudget } from '../../src/client/redis-rate-budget.ts';
import { openMirrorConnection } from '../../src/mirror/open.ts';
import type { SqlConnection } from '../../src/mirror/sql/executor.ts';
import { startSimulator, type RunningSimulator, type SimulatorOptions } from '@bizops-sync/simulator';
import type { WriteRecord } from '../../src/writes/index.ts';
import { connectProducer, startWriteWorker, WriteIntake, type WriteWorkerHandle, type WriteWorkerOptions } from '../../src/writes/queue/index.ts';
import { fixtureEnv, waitFor } from '../helpers.ts';
import { testMirrorLocation } from '../test-mirror.ts';
import type { WorkerProcessOptions } from './fixtures/worker-process.ts';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * Fails within seconds, naming REDIS_URL, when Redis does not answer: every test file importing this
 * module runs it first (below), instead of hanging on ioredis' offline queue; so does bench/writes.ts.
 * @throws Error `these tests need Redis: REDIS_URL (...) does not answer (...)`
 */
export async function requireRedis(): Promise<void> {
  try {
    const client = await connectProducer(REDIS_URL);
    client.disconnect();
  } catch (error) {
    throw new Error(`these tests need Redis: REDIS_URL (${REDIS_URL}) does not answer (${(error as Error).message}); start Redis (redis-server) or set REDIS_URL`, { cause: error });
  }
}
// Under vitest only: bench/writes.ts imports this module too, and calls requireRedis itself.
if (process.env.VITEST) beforeAll(requireRedis);

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

/** A world for one test: temp dir + mirror + unique Redis prefix; `cleanup` removes all of it. */
export interface WriteTestBed {
  dir: string;
  /** Where the mirror is: a file in `dir`, or a PostgreSQL URL (`testMirrorLocation`). */
  dbPath: string;
  /** The mirror's connection: the intake, the worker and the stores use it, and tests read state through it. */
  connection: SqlConnection;
  /** BullMQ prefix and rate-budget prefix unique to this test. */
  prefix: string;
  budgetPrefix: string;
  queueName: string;
  cleanup(): Promise<void>;
}

/** A fresh test bed (the mirror migrated). */
export async function writeTestBed(): Promise<WriteTestBed> {
  const dir = mkdtempSync(join(tmpdir(), 'bizops-writes-'));
  const dbPath = testMirrorLocation(join(dir, 'mirror.db'));
  const connection = await openMirrorConnection(dbPath);
  const id = randomUUID().slice(0, 8);
  const prefix = `test-writes-${id}`;
  const budgetPrefix = `test-rate-${id}`;
  return {
    dir,
    dbPath,
    connection,
    prefix,
    budgetPrefix,
    queueName: 'writes',
    async cleanup() {
      await connection.close();
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

/** Intake + worker + Redis budget against `sim`, with test-speed timings; `close` stops them (not the bed). */
export interface WriteStack {
  intake: WriteIntake;
  worker: WriteWorkerHandle;
  budget: RedisRateBudget;
  finished(id: string, timeoutMs?: number): Promise<WriteRecord>;
  close(): Promise<void>;
}

export async function writeStack(
  sim: RunningSimulator,
  bed: WriteTestBed,
  options: {
    limit?: number;
    windowMs?: number;
    timeoutMs?: number;
    worker?: Partial<WriteWorkerOptions>;
    tokens?: Record<string, string>;
    redisUrl?: string;
    redisWaitMs?: number;
    /** Where the worker sends its requests (a proxy in front of `sim`); default `sim.url`. */
    baseUrl?: string;
  } = {},
): Promise<WriteStack> {
  const redisUrl = options.redisUrl ?? REDIS_URL;
  const queue = { redis: redisUrl, prefix: bed.prefix, queueName: bed.queueName };
  const tokens = options.tokens ?? { default: sim.tokens.admin, employee: sim.tokens.employee };
  const intake = new WriteIntake({ connection: bed.connection, queue, tokenNames: Object.keys(tokens), retrySchedule: { attempts: 6, backoffMs: 50 } });
  const budget = new RedisRateBudget({
    redis: redisUrl,
    key: 'company:A',
    limit: options.limit ?? 1000,
    windowMs: options.windowMs ?? 1000,
    prefix: bed.budgetPrefix,
    redisWaitMs: options.redisWaitMs,
  });
  const worker = await startWriteWorker({
    connection: bed.connection,
    queue,
    api: {
      baseUrl: options.baseUrl ?? sim.url,
      tokens,
      budget,
      timeoutMs: options.timeoutMs ?? 5000,
      requestDeadlineMs: options.timeoutMs ?? 2000,
      retry: { minTimeoutMs: 20, maxTimeoutMs: 100, maxRetries: 3 },
    },
    concurrency: 4,
    ambiguousSettleMs: 50,
    ledgerSettleMs: 200,
    retrySchedule: { attempts: 6, backoffMs: 50 },
    ...options.worker,
  });
  return {
    intake,
    worker,
    budget,
    async finished(id, timeoutMs = 10_000) {
      let write: WriteRecord | undefined;
      await waitFor(async () => {
        write = await intake.getWrite(id);
        return write !== undefined && !['queued', 'sending'].includes(write.status);
      }, `write ${id} to finish`, timeoutMs);
      return write!;
    },
    async close() {
      await worker.close();
      await intake.close();
      await budget.close();
    },
  };
}

/** A worker running in a child process (fixtures/worker-process.ts). */
export interface WorkerProcess {
  pid: number;
  /** Graceful stop (SIGTERM); resolves with the worker's stats. */
  stop(): Promise<WorkerProcessStats>;
  /** SIGKILL: no cleanup at all. Resolves when the process is gone. */
  kill(): Promise<void>;
}

export interface WorkerProcessStats {
  finished: number;
  retried: number;
  delayed: number;
  skipped: number;
  requests: number;
  budget: { granted: Record<string, number>; waitedMs: number; pauses: number };
  byStatus: Record<string, number>;
}

const WORKER_SCRIPT = fileURLToPath(new URL('./fixtures/worker-process.ts', import.meta.url));

/** Starts a worker process and resolves once it takes jobs. */
export function spawnWorkerProcess(options: WorkerProcessOptions): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [WORKER_SCRIPT, JSON.stringify(options)], { env: fixtureEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    if (process.env.BIZOPS_TEST_WORKER_STDERR) process.stderr.write(chunk);
  });
  const lines = createInterface({ input: child.stdout });
  const messages: Record<string, unknown>[] = [];
  const waiters: (() => void)[] = [];
  lines.on('line', (line) => {
    try {
      messages.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      return;
    }
    for (const wake of waiters.splice(0)) wake();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const next = (key: string) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const check = () => {
        const found = messages.find((message) => key in message);
        if (found) resolve(found);
        else waiters.push(check);
      };
      check();
      void exited.then((code) => reject(new Error(`worker process exited (code ${code}) before "${key}": ${stderr.slice(-2000)}`)));
    });
  return next('ready').then(() => ({
    pid: child.pid!,
    async stop() {
      child.kill('SIGTERM');
      const message = await next('stats');
      await exited;
      return message.stats as WorkerProcessStats;
    },
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
  }));
}
