/**
 * Benchmark: the write-safety trials, counted as an operator would see them (docs/writes.md "What is
 * guaranteed"), on a Redis of the bench's own (killed, flushed, restarted empty) and the simulator,
 * with time scaled down (1 s windows, a 300 ms request deadline). Each figure is a count against the
 * whole of its trial; the goal of each is in its name.
 *
 * 1. Redis loses its data, then a second worker starts: of 12 `email.send`, how many were sent twice
 *    (goal 0), and how many report `succeeded` (goal 12, each over exactly one email).
 * 2. Redis loses its data under a running worker: of 30 acknowledged writes, how many are still
 *    unsent once the first sweep after Redis answered again has run (goal 0; nothing restarted).
 * 3. Redis SIGKILLed mid-run, back empty 3 s later: of 150 writes, how many were not applied exactly
 *    once (goal 0).
 * 4. `POST /writes` while Redis is down: the status answered (goal 202), and ledger entries after
 *    the client retried with the same key and Redis came back (goal 1).
 * 5. A transaction the server commits 1 s after it arrived (deadline 300 ms): ledger entries (goal 1);
 *    committed only after the re-send: the write's status (goal needs_review, never succeeded).
 *
 * Run: `npm run bench -- write-faults`, or alone `node bench/write-faults.ts` (prints JSON).
 */
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { createServer } from 'node:http';
import type { RunningSimulator } from '@bizops-sync/simulator';
import type { WriteRecord } from '../src/writes/index.ts';
import { handleWritesRequest, WriteIntake } from '../src/writes/queue/index.ts';
import { requireRedis, simulator, writeStack, writeTestBed, type WriteStack, type WriteTestBed } from '../test/writes/support.ts';
import { startOwnRedis, type OwnRedis } from '../test/writes/own-redis.ts';

async function until(probe: () => Promise<boolean> | boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe()) return true;
    await sleep(50);
  }
  return false;
}

interface Trial {
  sim: RunningSimulator;
  bed: WriteTestBed;
  redis: OwnRedis;
  stacks: WriteStack[];
}

async function trial<T>(simulatorOptions: Parameters<typeof simulator>[0], body: (t: Trial, open: (options?: Parameters<typeof writeStack>[2]) => Promise<WriteStack>) => Promise<T>): Promise<T> {
  const redis = await startOwnRedis();
  const sim = await simulator(simulatorOptions);
  const bed = await writeTestBed();
  const t: Trial = { sim, bed, redis, stacks: [] };
  const open = async (options: Parameters<typeof writeStack>[2] = {}) => {
    const stack = await writeStack(sim, bed, { redisUrl: redis.url, ...options, worker: { sweepIntervalMs: 500, claimSeconds: 2, ...options.worker } });
    t.stacks.push(stack);
    return stack;
  };
  try {
    return await body(t, open);
  } finally {
    for (const stack of t.stacks) await stack.close().catch(() => undefined);
    await sim.close();
    await bed.cleanup().catch(() => undefined);
    await redis.stop();
  }
}

async function unfinished(bed: WriteTestBed): Promise<number> {
  return Number((await bed.connection.get<{ n: number }>("SELECT COUNT(*) AS n FROM writes WHERE status IN ('queued', 'sending')"))!.n);
}

function appliedPerKey(sim: RunningSimulator, path: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const request of sim.requests) {
    if (request.method !== 'POST' || request.path !== `/api/public/v1${path}` || request.status < 200 || request.status >= 300 || !request.idempotencyKey) continue;
    counts.set(request.idempotencyKey, (counts.get(request.idempotencyKey) ?? 0) + 1);
  }
  return counts;
}

function ledgerNotOnce(sim: RunningSimulator, tag: string, count: number): number {
  const counts = new Map<string, number>();
  for (const transaction of sim.world.transactions) if (transaction.description.startsWith(tag)) counts.set(transaction.description, (counts.get(transaction.description) ?? 0) + 1);
  let wrong = count - counts.size;
  for (const value of counts.values()) if (value !== 1) wrong++;
  return wrong;
}

async function emailsAfterLoss(): Promise<{ sentTwice: number; succeeded: number }> {
  return trial({ latencyMs: 100 }, async ({ sim, bed, redis }, open) => {
    const from = sim.world.data.emailAddresses.find((address) => address.employeeId === sim.world.employeeForRole('admin').id)!.address;
    const first = await open({ limit: 3, windowMs: 1000 });
    const ids: string[] = [];
    for (let index = 0; index < 12; index++) ids.push((await first.intake.enqueueWrite('email.send', { from, to: `c${index}@example.com`, subject: 's', text: 't' })).id);
    await until(() => appliedPerKey(sim, '/emails').size >= 2, 30_000);
    await redis.flush();
    await open({ limit: 3, windowMs: 1000 });
    await until(async () => (await unfinished(bed)) === 0, 60_000);
    const sent = appliedPerKey(sim, '/emails');
    const writes = await Promise.all(ids.map(async (id) => (await first.intake.getWrite(id)) as WriteRecord));
    return {
      sentTwice: [...sent.values()].filter((count) => count > 1).length,
      succeeded: writes.filter((write) => write.status === 'succeeded' && sent.get(`bizops-sync:${write.id}`) === 1).length,
    };
  });
}

async function flushUnderWorker(): Promise<number> {
  return trial({}, async ({ sim, bed, redis }, open) => {
    const stack = await open({ limit: 6, windowMs: 1000 });
    for (let index = 0; index < 30; index++) await stack.intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 100 + index, description: `flushed #${index}` });
    await until(() => sim.world.transactions.some((transaction) => transaction.description.startsWith('flushed #')), 30_000);
    await redis.flush();
    // Sent in full once the sweeps (every 0.5 s) and the budget (6 per 1 s) allow: 30 s is ample.
    await until(async () => (await unfinished(bed)) === 0, 30_000);
    return ledgerNotOnce(sim, 'flushed #', 30);
  });
}

async function killedRedis(): Promise<number> {
  return trial({ latencyMs: 20 }, async ({ sim, bed, redis }, open) => {
    const stack = await open({ limit: 60, windowMs: 1000, redisWaitMs: 60_000 });
    for (let index = 0; index < 150; index++) await stack.intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 100 + index, description: `blip #${index}` });
    await until(() => sim.world.transactions.filter((transaction) => transaction.description.startsWith('blip #')).length >= 20, 30_000);
    await redis.kill();
    await sleep(3000);
    await redis.start();
    await until(async () => (await unfinished(bed)) === 0, 60_000);
    return ledgerNotOnce(sim, 'blip #', 150);
  });
}

async function postWhileDown(): Promise<{ status: number; entries: number }> {
  return trial({}, async ({ sim, bed, redis }, open) => {
    const intake = new WriteIntake({ connection: bed.connection, queue: { redis: redis.url, prefix: bed.prefix, queueName: bed.queueName }, enqueueTimeoutMs: 500 });
    const key = 'k'.repeat(24);
    const server = createServer((request, response) => void handleWritesRequest(request, response, { intake, writeApiKey: key }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const post = () =>
      fetch(`http://127.0.0.1:${port}/writes`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'order-7' },
        body: JSON.stringify({ kind: 'transaction.create', payload: { type: 'INCOME', amount: 700, description: 'while down' } }),
      });
    await redis.kill();
    const status = (await post()).status;
    await post(); // the client's retry, same key
    await intake.close();
    server.close();
    await redis.start();
    await open();
    await until(async () => (await unfinished(bed)) === 0, 30_000);
    return { status, entries: sim.world.transactions.filter((transaction) => transaction.description === 'while down').length };
  });
}

async function lateCommits(): Promise<{ entriesWithinWindow: number; afterResendStatus: string; afterResendEntries: number }> {
  const within = await trial({}, async ({ sim, bed }, open) => {
    const stack = await open({ timeoutMs: 300, worker: { ambiguousSettleMs: 50, ledgerSettleMs: 3000, ledgerLookups: 6 } });
    sim.faults.inject({ kind: 'late-commit', ms: 1000, match: { method: 'POST', path: '/transactions' } });
    await stack.intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 7500, description: 'late' });
    await until(async () => (await unfinished(bed)) === 0, 30_000);
    return sim.world.transactions.filter((transaction) => transaction.description === 'late').length;
  });
  const after = await trial({}, async ({ sim, bed }, open) => {
    const stack = await open({ timeoutMs: 300, worker: { ambiguousSettleMs: 50, ledgerSettleMs: 500, ledgerLookups: 3 } });
    sim.faults.inject({ kind: 'late-commit', afterNextMatch: true, match: { method: 'POST', path: '/transactions' } });
    const { id } = await stack.intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 7600, description: 'late twice' });
    await until(async () => (await unfinished(bed)) === 0, 30_000);
    return { status: (await stack.intake.getWrite(id))!.status, entries: sim.world.transactions.filter((transaction) => transaction.description === 'late twice').length };
  });
  return { entriesWithinWindow: within, afterResendStatus: after.status, afterResendEntries: after.entries };
}

export async function run(): Promise<Record<string, number | string>> {
  await requireRedis();
  const emails = await emailsAfterLoss();
  const flushed = await flushUnderWorker();
  const killed = await killedRedis();
  const down = await postWhileDown();
  const late = await lateCommits();
  return {
    '1 emails sent twice of 12 (goal 0)': emails.sentTwice,
    '1 succeeded over one email, of 12 (goal 12)': emails.succeeded,
    '2 flushed under a worker: not sent once, of 30 (goal 0)': flushed,
    '3 Redis killed 3 s: not applied once, of 150 (goal 0)': killed,
    '4 POST /writes while Redis is down: status (goal 202)': down.status,
    '4 ledger entries after a same-key retry (goal 1)': down.entries,
    '5 commit 1 s late: ledger entries (goal 1)': late.entriesWithinWindow,
    '5 commit after the re-send: status (goal needs_review)': late.afterResendStatus,
    '5 commit after the re-send: ledger entries (reported)': late.afterResendEntries,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await run(), null, 2));
  process.exit(0);
}
