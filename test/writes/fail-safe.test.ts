/**
 * Writes fail safe, against the simulator over HTTP, real Redis, real SQLite:
 * - a POST /transactions the server commits AFTER the client's timeout (the `slow-commit` fault: it
 *   commits once the client has given up) is found by the ledger lookups spread over the window,
 *   not sent again: exactly one transaction exists, the write is succeeded (or needs_review), never two;
 * - every request of a write carries the same Idempotency-Key, derived from the write id;
 * - a worker stopped (in process, and a worker PROCESS given SIGTERM) while its write waits for a
 *   budget slot spends no BullMQ attempt and does not fail the write: the job is delayed, and a
 *   worker started later sends it once.
 * Time is scaled down (a 300 ms request deadline, a 3 s lookup window); no timing assertion.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { RedisRateBudget } from '../../src/client/redis-rate-budget.ts';
import { idempotencyKeyHeader } from '../../src/writes/write-engine.ts';
import { waitFor } from '../helpers.ts';
import { REDIS_URL, simulator, spawnWorkerProcess, writeStack, writeTestBed, type WriteStack, type WriteTestBed } from './support.ts';

let sim: RunningSimulator;
let bed: WriteTestBed;
const stacks: WriteStack[] = [];

beforeEach(async () => {
  sim = await simulator();
  bed = await writeTestBed();
});

afterEach(async () => {
  for (const stack of stacks.splice(0)) await stack.close();
  await sim?.close();
  await bed?.cleanup();
});

async function open(options: Parameters<typeof writeStack>[2] = {}): Promise<WriteStack> {
  const stack = await writeStack(sim, bed, options);
  stacks.push(stack);
  return stack;
}

function transactionPosts() {
  return sim.requests.filter((request) => request.method === 'POST' && request.path === '/api/public/v1/transactions');
}

describe('a slow commit (the server commits after the client gave up)', () => {
  it('is found by the spread ledger lookups, not sent again: one transaction, never two', async () => {
    const stack = await open({ timeoutMs: 300, worker: { ambiguousSettleMs: 50, ledgerSettleMs: 3000, ledgerLookups: 6 } });
    // Commits 500 ms after the client's timeout closed the connection: later than the first lookup.
    sim.faults.inject({ kind: 'slow-commit', ms: 500, match: { method: 'POST', path: '/transactions' } });
    const description = `Slow commit ${Date.now()}`;
    const { id } = await stack.intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 4200, description });
    const write = await stack.finished(id, 20_000);
    expect(sim.world.transactions.filter((transaction) => transaction.description === description)).toHaveLength(1);
    expect(['succeeded', 'needs_review']).toContain(write.status);
    expect(transactionPosts()).toHaveLength(1);
    if (write.status === 'succeeded') expect(write.outcome).toMatch(/found in the ledger after an ambiguous outcome/);
  });
});

describe('the Idempotency-Key header', () => {
  it('is the same on every request of a write, derived from its id', async () => {
    const stack = await open();
    sim.faults.inject({ kind: 'status', status: 500, match: { method: 'POST', path: '/transactions' } });
    const { id } = await stack.intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 1300, description: `Key ${Date.now()}` });
    expect((await stack.finished(id)).status).toBe('succeeded');
    const keys = transactionPosts().map((request) => request.idempotencyKey);
    expect(keys).toEqual([idempotencyKeyHeader(id), idempotencyKeyHeader(id)]);
  });
});

describe('a worker stopped while its write waits for a budget slot', () => {
  it('spends no job attempt and does not fail the write; a later worker sends it once', async () => {
    const first = await open({ limit: 1, windowMs: 60_000 });
    await first.budget.acquire('write'); // the window's only slot is taken
    const { id } = await first.intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 800, description: `Shutdown ${Date.now()}` });
    await waitFor(() => (first.budget.stats() as { waiting: Record<string, number> }).waiting.write === 1, 'the write to wait for a budget slot');

    await first.worker.close(); // what SIGTERM does
    const job = await first.intake.queue.getJob(id);
    expect(await job!.getState()).toBe('delayed');
    expect(job!.attemptsMade).toBe(0);
    expect(await first.intake.getWrite(id)).toMatchObject({ status: 'queued', attempts: 0 });
    expect(transactionPosts()).toHaveLength(0);

    await first.budget.reset();
    const second = await open();
    const write = await second.finished(id, 15_000);
    expect(write).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(transactionPosts()).toHaveLength(1);
  });
});

describe('SIGTERM to a worker process while its write waits for a budget slot', () => {
  it('the job goes back delayed with no attempt spent; the write is not failed and completes after a restart', { timeout: 40_000 }, async () => {
    const spent = new RedisRateBudget({ redis: REDIS_URL, key: 'company:A', limit: 1, windowMs: 60_000, prefix: bed.budgetPrefix });
    await spent.acquire('backfill'); // a backfill took the window's only slot
    const worker = await spawnWorkerProcess({
      baseUrl: sim.url,
      tokens: { default: String(sim.tokens.admin) },
      dbPath: bed.dbPath,
      redisUrl: REDIS_URL,
      prefix: bed.prefix,
      queueName: bed.queueName,
      budgetPrefix: bed.budgetPrefix,
      limit: 1,
      windowMs: 60_000,
      concurrency: 1,
    });
    const stack = await open({ worker: { concurrency: 1 } });
    await stack.worker.close(); // this test's own worker stays out: only the process takes the job
    const { id } = await stack.intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 900, description: `SIGTERM ${Date.now()}` });
    await waitFor(async () => (await (await stack.intake.queue.getJob(id))?.getState()) === 'active', 'the worker process to take the job and wait for a slot');

    const stats = await worker.stop();
    expect(stats.delayed).toBe(1);
    const job = await stack.intake.queue.getJob(id);
    expect(await job!.getState()).toBe('delayed');
    expect(job!.attemptsMade).toBe(0);
    expect(await stack.intake.getWrite(id)).toMatchObject({ status: 'queued', attempts: 0 });
    expect(transactionPosts()).toHaveLength(0);

    await spent.reset();
    await spent.close();
    const restarted = await open();
    expect(await restarted.finished(id, 15_000)).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(transactionPosts()).toHaveLength(1);
  });
});
