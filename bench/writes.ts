/**
 * Benchmark: the write queue against the simulator's own rate limit, time scaled down.
 *
 * 1. Throughput as a share of the rate limit, with 1 and with 3 worker PROCESSES (each a child
 *    process running test/writes/fixtures/worker-process.ts) sharing one Redis rate budget:
 *    240 `transaction.create` writes are accepted first, then the processes start. The steady-state
 *    share is (writes after the first window) / (time from the first to the last request x limit /
 *    window): the first window's burst is free and is not counted. Goal >= 0.9. The same run reports
 *    429s (goal 0) and the most requests in any window (goal <= the limit).
 * 2. Priority: a backfill load (8 loops of `backfill`-priority GET /transactions through an ApiClient
 *    whose RedisRateBudget instance is separate from the worker's, as another process's would be)
 *    keeps the budget saturated; 10 writes are enqueued at random moments. The wait of each write in
 *    budget slots is the number of backfill requests that reached the server between its enqueue and
 *    its own request. Goal: the next slot or the one after (max <= 1).
 *
 * Run alone: `node bench/writes.ts` (prints JSON).
 */
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { ApiClient } from '../src/client/client.ts';
import { RedisRateBudget } from '../src/client/redis-rate-budget.ts';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { startWriteWorker, WriteIntake } from '../src/writes/index.ts';
import { maxInAnyWindow, REDIS_URL, spawnWorkerProcess, writeTestBed, type WorkerProcess } from '../test/writes/support.ts';

const THROUGHPUT_WRITES = 240;
const THROUGHPUT_LIMIT = 40;
const THROUGHPUT_WINDOW_MS = 2000;
const SAFETY_MARGIN_MS = 100;

const PRIORITY_LIMIT = 10;
const PRIORITY_WINDOW_MS = 1000;
const PRIORITY_SAMPLES = 10;
const BACKFILL_LOOPS = 8;

interface ThroughputResult {
  share: number;
  tooManyRequests: number;
  maxInWindow: number;
  seconds: number;
}

async function throughput(processCount: number): Promise<ThroughputResult> {
  const simulator = await startSimulator({ rateLimit: { limit: THROUGHPUT_LIMIT, windowMs: THROUGHPUT_WINDOW_MS }, size: { transactions: 100, deals: 10, onboardings: 5, customers: 10 } });
  const bed = writeTestBed();
  const queue = { redis: REDIS_URL, prefix: bed.prefix, queueName: bed.queueName };
  const intake = new WriteIntake({ db: bed.db, queue });
  const workers: WorkerProcess[] = [];
  try {
    for (let index = 0; index < THROUGHPUT_WRITES; index++) {
      await intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 100 + index, description: `bench #${index}` });
    }
    const started = performance.now();
    for (let index = 0; index < processCount; index++) {
      workers.push(
        await spawnWorkerProcess({
          baseUrl: simulator.url,
          tokens: { default: simulator.tokens.admin },
          dbPath: bed.dbPath,
          redisUrl: REDIS_URL,
          prefix: bed.prefix,
          queueName: bed.queueName,
          budgetPrefix: bed.budgetPrefix,
          limit: THROUGHPUT_LIMIT,
          windowMs: THROUGHPUT_WINDOW_MS,
          safetyMarginMs: SAFETY_MARGIN_MS,
          concurrency: 12,
        }),
      );
    }
    const unfinished = bed.db.prepare("SELECT COUNT(*) AS n FROM writes WHERE status IN ('queued', 'sending')");
    while ((unfinished.get() as { n: number }).n > 0) await new Promise((resolve) => setTimeout(resolve, 200));
    const seconds = (performance.now() - started) / 1000;
    const arrivals = simulator.requests.filter((request) => request.company === 'A').map((request) => request.at);
    const first = Math.min(...arrivals);
    const last = Math.max(...arrivals);
    const share = (arrivals.length - THROUGHPUT_LIMIT) / (((last - first) / THROUGHPUT_WINDOW_MS) * THROUGHPUT_LIMIT);
    return {
      share: Number(share.toFixed(3)),
      tooManyRequests: simulator.requests.filter((request) => request.status === 429).length,
      maxInWindow: maxInAnyWindow(arrivals, THROUGHPUT_WINDOW_MS),
      seconds: Number(seconds.toFixed(1)),
    };
  } finally {
    await Promise.all(workers.map((worker) => worker.stop().catch(() => worker.kill())));
    await intake.close();
    await simulator.close();
    await bed.cleanup();
  }
}

interface PriorityResult {
  maxSlots: number;
  meanSlots: number;
  backfillRequests: number;
}

async function priority(): Promise<PriorityResult> {
  const simulator: RunningSimulator = await startSimulator({
    rateLimit: { limit: PRIORITY_LIMIT, windowMs: PRIORITY_WINDOW_MS },
    size: { transactions: 100, deals: 10, onboardings: 5, customers: 10 },
  });
  const bed = writeTestBed();
  const queue = { redis: REDIS_URL, prefix: bed.prefix, queueName: bed.queueName };
  const budgetOptions = { redis: REDIS_URL, key: 'company:A', limit: PRIORITY_LIMIT, windowMs: PRIORITY_WINDOW_MS, prefix: bed.budgetPrefix };
  const backfillBudget = new RedisRateBudget(budgetOptions);
  const writeBudget = new RedisRateBudget(budgetOptions);
  const backfillClient = new ApiClient({ baseUrl: simulator.url, tokens: { default: simulator.tokens.admin }, budget: backfillBudget });
  const intake = new WriteIntake({ db: bed.db, queue });
  const worker = await startWriteWorker({ db: bed.db, queue, api: { baseUrl: simulator.url, tokens: { default: simulator.tokens.admin }, budget: writeBudget }, concurrency: 2 });
  const stop = new AbortController();
  const page = z.looseObject({});
  const loops = Array.from({ length: BACKFILL_LOOPS }, async (_, loop) => {
    let offset = loop * 10;
    while (!stop.signal.aborted) {
      try {
        await backfillClient.request({ method: 'GET', path: '/transactions', query: { limit: 100, offset: offset % 100 }, contentSchema: page, priority: 'backfill', retry: 'safe', signal: stop.signal });
      } catch {
        // aborted at the end
      }
      offset += 10;
    }
  });
  const slots: number[] = [];
  try {
    // Let the backfill fill the budget first.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    for (let sample = 0; sample < PRIORITY_SAMPLES; sample++) {
      await new Promise((resolve) => setTimeout(resolve, 700 + Math.random() * 600));
      const enqueuedAt = Date.now();
      const { id } = await intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 500 + sample, description: `priority #${sample}` });
      while (intake.getWrite(id)?.status !== 'succeeded') await new Promise((resolve) => setTimeout(resolve, 20));
      const arrived = simulator.requests.find((request) => request.method === 'POST' && request.at >= enqueuedAt)!.at;
      slots.push(simulator.requests.filter((request) => request.method === 'GET' && request.at > enqueuedAt && request.at < arrived).length);
    }
  } finally {
    stop.abort();
    await Promise.all(loops);
    await worker.close();
    await intake.close();
    await backfillClient.close();
    await backfillBudget.close();
    await writeBudget.close();
    await simulator.close();
    await bed.cleanup();
  }
  return {
    maxSlots: Math.max(...slots),
    meanSlots: Number((slots.reduce((sum, n) => sum + n, 0) / slots.length).toFixed(2)),
    backfillRequests: simulator.requests.filter((request) => request.method === 'GET').length,
  };
}

export async function run(): Promise<Record<string, number | string>> {
  const one = await throughput(1);
  const three = await throughput(3);
  const waits = await priority();
  return {
    'scaled limit (requests / window ms)': `${THROUGHPUT_LIMIT} / ${THROUGHPUT_WINDOW_MS}`,
    'throughput share, 1 process (goal >= 0.9)': one.share,
    'throughput share, 3 processes (goal >= 0.9)': three.share,
    '429s, 1 process (goal 0)': one.tooManyRequests,
    '429s, 3 processes (goal 0)': three.tooManyRequests,
    'max requests in a window / limit, 3 processes': Number((three.maxInWindow / THROUGHPUT_LIMIT).toFixed(3)),
    [`wall time for ${THROUGHPUT_WRITES} writes, 1 / 3 processes (s)`]: `${one.seconds} / ${three.seconds}`,
    'write wait during backfill, max (slots; goal <= 1)': waits.maxSlots,
    'write wait during backfill, mean (slots)': waits.meanSlots,
    'backfill requests sent meanwhile': waits.backfillRequests,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const figures = await run();
  console.log(JSON.stringify(figures, null, 2));
}
