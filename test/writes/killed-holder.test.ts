/**
 * A worker killed (SIGKILL) while its write's request is on the wire: the write is taken over when
 * its claim expires, not when BullMQ's own lock on the job would. The job's lock lasts as long as the
 * claim (`claimSeconds`), so a live worker's stalled check moves the dead holder's job back to wait
 * within about two claim lengths, and the run that takes it resolves the `sending` row by its kind's
 * rule (deal.close: idempotent, sent again). Found by the fault soak (seed 750530519 on PostgreSQL):
 * a deal.close in flight in a daemon killed with `kill -9` stayed `sending` for BullMQ's fixed 30 s
 * lock plus its 30 s stalled check, past the soak's wait, though its claim lasted 2 s.
 *
 * Real parts: worker processes (fixtures/worker-process.ts) on the test Redis, the simulator over
 * HTTP behind a proxy that holds the first close's answer (so the kill lands while the request is
 * in flight, on a condition), and the mirror on SQLite or PostgreSQL (the `postgres` project).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { WriteIntake } from '../../src/writes/queue/index.ts';
import { waitFor } from '../helpers.ts';
import { startHoldingProxy, type HoldingProxy } from './holding-proxy.ts';
import { REDIS_URL, simulator, spawnWorkerProcess, writeTestBed, type WorkerProcess, type WriteTestBed } from './support.ts';
import type { WorkerProcessOptions } from './fixtures/worker-process.ts';

const CLAIM_SECONDS = 2;

let sim: RunningSimulator | undefined;
let bed: WriteTestBed | undefined;
let intake: WriteIntake | undefined;
let proxy: HoldingProxy | undefined;
let redis: Redis | undefined;
const processes: WorkerProcess[] = [];

afterEach(async () => {
  proxy?.release();
  await Promise.all(processes.splice(0).map((worker) => worker.kill().catch(() => undefined)));
  redis?.disconnect();
  await intake?.close();
  await proxy?.close();
  await sim?.close();
  await bed?.cleanup();
  sim = bed = intake = proxy = redis = undefined;
});

describe('a write whose worker is killed mid-request', () => {
  it('is taken over when its claim expires: the job lock lasts the claim length, not 30 s', { timeout: 120_000 }, async () => {
    sim = await simulator();
    bed = await writeTestBed();
    intake = new WriteIntake({ connection: bed.connection, queue: { redis: REDIS_URL, prefix: bed.prefix, queueName: bed.queueName }, retrySchedule: { attempts: 6, backoffMs: 50 } });
    const closePath = /^\/api\/public\/v1\/deals\/[^/]+\/close$/;
    proxy = await startHoldingProxy(sim.url, (request) => request.method === 'POST' && closePath.test(request.url ?? ''), 1);
    redis = new Redis(REDIS_URL);
    // No lockDurationMs nor stalledIntervalMs: the worker's defaults are what is tested.
    const options: WorkerProcessOptions = {
      baseUrl: proxy.url,
      tokens: { default: sim.tokens.admin },
      dbPath: bed.dbPath,
      redisUrl: REDIS_URL,
      prefix: bed.prefix,
      queueName: bed.queueName,
      budgetPrefix: bed.budgetPrefix,
      limit: 1000,
      windowMs: 1000,
      concurrency: 1,
      claimSeconds: CLAIM_SECONDS,
    };
    const doomed = await spawnWorkerProcess(options);
    processes.push(doomed);
    const deal = sim.world.deals.find((candidate) => candidate.status === 'OPEN')!;
    const reason = 'closed by a worker killed mid-request';
    const { id } = await intake.enqueueWrite('deal.close', { dealId: deal.id, status: 'WON', reason });

    // The server applied the close; its answer is held, so the request is in flight in the worker.
    await waitFor(() => proxy!.held.length === 1, 'the close to reach the server');
    expect((await intake.getWrite(id))!.status).toBe('sending');
    const lockKey = `${bed.prefix}:${bed.queueName}:${id}:lock`;
    const lockMs = await redis.pttl(lockKey);
    // The running job's BullMQ lock expires within one claim length (it was 30 s, whatever the claim).
    expect(lockMs).toBeGreaterThan(0);
    expect(lockMs).toBeLessThanOrEqual(CLAIM_SECONDS * 1000);

    await doomed.kill();
    processes.splice(processes.indexOf(doomed), 1);
    proxy.release();
    const closesBefore = sim.requests.filter((request) => request.method === 'POST' && closePath.test(request.path)).length;
    expect(closesBefore).toBe(1);

    const survivor = await spawnWorkerProcess(options);
    processes.push(survivor);
    await waitFor(async () => !['queued', 'sending'].includes((await intake!.getWrite(id))!.status), `write ${id} to finish`, 90_000, 100);
    const stats = await survivor.stop();
    processes.splice(processes.indexOf(survivor), 1);

    const write = (await intake.getWrite(id))!;
    expect(write.status).toBe('succeeded');
    // The survivor ran the dead holder's job and sent it again, as an idempotent kind's ambiguous
    // outcome allows: two closes, one state.
    expect(stats.finished).toBe(1);
    expect(sim.requests.filter((request) => request.method === 'POST' && closePath.test(request.path) && request.status === 200)).toHaveLength(2);
    const closed = sim.world.deals.find((candidate) => candidate.id === deal.id)!;
    expect(closed.status).toBe('WON');
    expect(closed.wonLostReason).toBe(reason);
  });
});
