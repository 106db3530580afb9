/**
 * The `writes` table is the truth, Redis only dispatches: each test runs its OWN Redis (a free port,
 * no persistence) and loses it the way an operator does (a flush, a SIGKILL and an empty restart,
 * an outage during POST /writes), against the simulator over HTTP and a real mirror. What must be
 * mid-run when Redis goes is held there by a proxy that keeps chosen answers until the test lets
 * them go (holding-proxy.ts), not by a latency. Nothing waits on time except the outage itself;
 * every assertion is a count or a state.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import type { WriteRecord } from '../../src/writes/index.ts';
import { handleWritesRequest, WriteIntake } from '../../src/writes/queue/index.ts';
import { runCli, waitFor } from '../helpers.ts';
import { startHoldingProxy, type HoldingProxy } from './holding-proxy.ts';
import { startOwnRedis, type OwnRedis } from './own-redis.ts';
import { simulator, writeStack, writeTestBed, type WriteStack, type WriteTestBed } from './support.ts';

let redis: OwnRedis;
let sim: RunningSimulator;
let bed: WriteTestBed;
const proxies: HoldingProxy[] = [];
const stacks: WriteStack[] = [];

beforeEach(async () => {
  redis = await startOwnRedis();
  bed = await writeTestBed();
});

afterEach(async () => {
  for (const proxy of proxies) proxy.release(); // a worker closes only once its requests in flight are answered
  for (const stack of stacks.splice(0)) await stack.close().catch(() => undefined);
  for (const proxy of proxies.splice(0)) await proxy.close();
  await sim?.close();
  await bed?.cleanup();
  await redis?.stop();
});

async function open(options: Parameters<typeof writeStack>[2] = {}): Promise<WriteStack> {
  const stack = await writeStack(sim, bed, { redisUrl: redis.url, ...options, worker: { sweepIntervalMs: 200, claimSeconds: 2, ...options.worker } });
  stacks.push(stack);
  return stack;
}

/** A proxy in front of the simulator holding the answers of the first `count` requests `hold` picks (holding-proxy.ts). */
async function holdingProxy(hold: (request: IncomingMessage) => boolean, count = 1): Promise<HoldingProxy> {
  const proxy = await startHoldingProxy(sim.url, hold, count);
  proxies.push(proxy);
  return proxy;
}

async function allFinished(stack: WriteStack, ids: readonly string[], timeoutMs = 60_000): Promise<WriteRecord[]> {
  const unfinished = "SELECT COUNT(*) AS n FROM writes WHERE status IN ('queued', 'sending')";
  await waitFor(async () => Number((await bed.connection.get<{ n: number }>(unfinished))!.n) === 0, `${ids.length} writes to finish`, timeoutMs, 100);
  return Promise.all(ids.map(async (id) => (await stack.intake.getWrite(id))!));
}

/** 2xx answers of POST `path` per write (by its Idempotency-Key header). */
function appliedPerWrite(path: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const request of sim.requests) {
    if (request.method !== 'POST' || request.path !== `/api/public/v1${path}` || request.status < 200 || request.status >= 300 || !request.idempotencyKey) continue;
    counts.set(request.idempotencyKey, (counts.get(request.idempotencyKey) ?? 0) + 1);
  }
  return counts;
}

function ledgerCounts(tag: string): number[] {
  const counts = new Map<string, number>();
  for (const transaction of sim.world.transactions) if (transaction.description.startsWith(tag)) counts.set(transaction.description, (counts.get(transaction.description) ?? 0) + 1);
  return [...counts.values()];
}

describe('Redis loses its data', () => {
  it('then a second worker starts (8 email.send): none sent twice, every outcome true', { timeout: 120_000 }, async () => {
    sim = await simulator();
    // The first three emails reach the server, but their answers are held until the test releases them:
    // those writes are in flight in the first worker when Redis loses their jobs, and stay so while the
    // second worker runs everything Redis forgot.
    const proxy = await holdingProxy((request) => request.method === 'POST' && request.url === '/api/public/v1/emails', 3);
    const from = sim.world.data.emailAddresses.find((address) => address.employeeId === sim.world.employeeForRole('admin').id)!.address;
    // Few slots (the fourth write waits for one), and a request deadline far beyond the hold: the held answers arrive, never time out.
    const settings = { limit: 3, windowMs: 1000, timeoutMs: 120_000, baseUrl: proxy.url };
    const first = await open(settings);
    const ids: string[] = [];
    for (let index = 0; index < 8; index++) {
      ids.push((await first.intake.enqueueWrite('email.send', { from, to: `customer${index}@example.com`, subject: `Invoice ${index}`, text: 'Attached.' })).id);
    }
    await waitFor(() => proxy.held.length === 3, 'three emails in flight');
    const inFlight = ids.filter((id) => proxy.held.includes(`bizops-sync:${id}`));
    expect(inFlight).toHaveLength(3);
    await redis.flush();
    const second = await open(settings);
    // Everything but the writes in flight is run to its end (by either worker) while those stay in flight.
    const others = ids.filter((id) => !inFlight.includes(id));
    await waitFor(async () => (await Promise.all(others.map((id) => second.intake.getWrite(id)))).every((write) => write && !['queued', 'sending'].includes(write.status)), 'the other five writes to finish', 60_000, 100);
    proxy.release();
    const writes = await allFinished(second, ids);
    const sent = appliedPerWrite('/emails');
    expect([...sent.values()].filter((count) => count > 1)).toEqual([]);
    for (const write of writes) {
      // Every outcome true: `succeeded`, over exactly one email sent.
      expect({ id: write.id, status: write.status, outcome: write.outcome }).toEqual({ id: write.id, status: 'succeeded', outcome: expect.any(String) });
      expect(sent.get(`bizops-sync:${write.id}`)).toBe(1);
    }
  });

  it('under a running worker (15 writes): all sent once by the sweeper, nothing restarted', { timeout: 120_000 }, async () => {
    sim = await simulator();
    // The first write's answer is held until Redis has lost the jobs: the worker is mid-run when it does.
    const proxy = await holdingProxy((request) => request.method === 'POST');
    const stack = await open({ limit: 6, windowMs: 1000, timeoutMs: 30_000, baseUrl: proxy.url });
    const ids: string[] = [];
    for (let index = 0; index < 15; index++) ids.push((await stack.intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 100 + index, description: `flushed #${index}` })).id);
    await waitFor(() => proxy.held.length === 1, 'the first write in flight');
    await redis.flush();
    proxy.release();
    const writes = await allFinished(stack, ids);
    expect(writes.filter((write) => write.status !== 'succeeded')).toEqual([]);
    expect(ledgerCounts('flushed #')).toEqual(Array(15).fill(1));
    expect(stack.worker.sweeper!.stats.requeued).toBeGreaterThan(0);
  });
});

describe('Redis SIGKILLed mid-run, back empty later', () => {
  it('150 writes and a one-off backfill: every write sent once, the backfill survives the outage', { timeout: 180_000 }, async () => {
    sim = await simulator({ size: { transactions: 1000, deals: 20, onboardings: 5, customers: 10 }, latencyMs: 20 });
    // The answers of the 10th write and of the backfill's 3rd page are held until Redis is dead: both
    // are mid-run when it dies, and ask the budget for their next request during the outage.
    let writesSent = 0;
    let pagesAsked = 0;
    const writesProxy = await holdingProxy((request) => request.method === 'POST' && ++writesSent === 10);
    const pagesProxy = await holdingProxy((request) => request.method === 'GET' && (request.url ?? '').startsWith('/api/public/v1/transactions') && ++pagesAsked === 3);
    const stack = await open({ limit: 60, windowMs: 1000, redisWaitMs: 60_000, timeoutMs: 30_000, baseUrl: writesProxy.url });
    const ids: string[] = [];
    for (let index = 0; index < 150; index++) ids.push((await stack.intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 100 + index, description: `blip #${index}` })).id);
    const backfill = runCli(['backfill', '--stream', 'transactions', '--no-progress'], {
      PATH: process.env.PATH,
      BIZOPS_BASE_URL: pagesProxy.url,
      BIZOPS_TOKEN: String(sim.tokens.admin),
      BIZOPS_DB: bed.dbPath.startsWith('postgres') ? undefined : bed.dbPath,
      BIZOPS_DATABASE_URL: bed.dbPath.startsWith('postgres') ? bed.dbPath : undefined,
      REDIS_URL: redis.url,
      BIZOPS_RATE_LIMIT_PER_MIN: '60',
      BIZOPS_RATE_WINDOW_MS: '1000',
      // The outage below (3 s: the trial's 20 s scaled down) stays well inside this wait for Redis.
      BIZOPS_REDIS_WAIT_SECONDS: '60',
      BIZOPS_LOG_LEVEL: 'warn',
    });
    const pages = () => sim.requests.filter((request) => request.method === 'GET' && request.path === '/api/public/v1/transactions').length;
    await waitFor(() => writesProxy.held.length === 1 && pagesProxy.held.length === 1, 'a write and a page of the backfill in flight', 60_000);
    await redis.kill();
    writesProxy.release();
    pagesProxy.release();
    await sleep(3000); // the outage (scaled down from 20 s)
    const pagesBeforeRedis = pages();
    await redis.start();
    const result = await backfill;
    expect(result.code, result.stderr).toBe(0);
    // The backfill ran across the outage: it went on asking for pages once Redis was back.
    expect(pages()).toBeGreaterThan(pagesBeforeRedis);
    const writes = await allFinished(stack, ids, 120_000);
    expect(writes.filter((write) => write.status !== 'succeeded')).toEqual([]);
    expect(ledgerCounts('blip #')).toEqual(Array(150).fill(1));
  });
});

describe('POST /writes while Redis is down', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    server = undefined;
  });

  it('a stored write is accepted, never "not accepted"; a retry with the same key lands on it; it is sent once after Redis returns', { timeout: 60_000 }, async () => {
    sim = await simulator();
    const intake = new WriteIntake({ connection: bed.connection, queue: { redis: redis.url, prefix: bed.prefix, queueName: bed.queueName }, tokenNames: ['default'], enqueueTimeoutMs: 500 });
    const writeApiKey = 'k'.repeat(24);
    server = createServer((request, response) => void handleWritesRequest(request, response, { intake, writeApiKey }));
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const address = server.address() as { port: number };
    const post = () =>
      fetch(`http://127.0.0.1:${address.port}/writes`, {
        method: 'POST',
        headers: { authorization: `Bearer ${writeApiKey}`, 'content-type': 'application/json', 'idempotency-key': 'order-7' },
        body: JSON.stringify({ kind: 'transaction.create', payload: { type: 'INCOME', amount: 700, description: 'ordered while Redis was down' } }),
      });
    await redis.kill();
    const first = await post();
    const firstBody = (await first.json()) as { write: { id: string; status: string; enqueueError?: string } };
    expect(first.status).toBe(202);
    expect(firstBody.write).toMatchObject({ status: 'queued', enqueueError: expect.any(String) });
    const retry = await post();
    expect(retry.status).toBe(200);
    expect(((await retry.json()) as { write: { id: string } }).write.id).toBe(firstBody.write.id);
    await intake.close();

    await redis.start();
    const stack = await open();
    const write = await stack.finished(firstBody.write.id, 30_000);
    expect(write.status).toBe('succeeded');
    expect(sim.world.transactions.filter((transaction) => transaction.description === 'ordered while Redis was down')).toHaveLength(1);
  });
});
