/**
 * Outcomes the write engine must get right (docs/writes.md): responses lost after the write
 * committed, 409 on a second clock-in, 5xx, idempotency keys, Redis refusing a job, and a write left
 * `sending` by a dead worker, a mirror write-through that fails. Real simulator over HTTP, real
 * Redis, real SQLite.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { STREAMS } from '../../src/streams/definitions.ts';
import { IdempotencyConflictError, WriteStore } from '../../src/writes/index.ts';
import { WriteIntake } from '../../src/writes/queue/index.ts';
import { waitFor } from '../helpers.ts';
import { simulator, writeStack, writeTestBed, REDIS_URL, type WriteStack, type WriteTestBed } from './support.ts';

let sim: RunningSimulator;
let bed: WriteTestBed;
let stack: WriteStack;

beforeEach(async () => {
  sim = await simulator();
  bed = await writeTestBed();
  stack = await writeStack(sim, bed);
});

afterEach(async () => {
  await stack?.close();
  await sim?.close();
  await bed?.cleanup();
});

function posts(path: string): number {
  return sim.requests.filter((request) => request.method === 'POST' && request.path === `/api/public/v1${path}`).length;
}

function adminAddress(): string {
  return sim.world.data.emailAddresses.find((address) => address.employeeId === sim.world.employeeForRole('admin').id)!.address;
}

describe('the mirror write-through', () => {
  it('a write-through that fails halfway is undone alone: the outcome and its change row stand, the half-written record does not', async () => {
    await stack.close();
    stack = await writeStack(sim, bed, {
      worker: {
        // Writes the record and its change row, then fails: everything it wrote must be rolled back.
        writeThrough: async (mirror, stream, record) => {
          await mirror.applyRecords(STREAMS[stream], [record]);
          throw new Error('the mirror refused the record');
        },
      },
    });
    const description = `Write-through refused ${Date.now()}`;
    const { id } = await stack.intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 4200, description, date: '2026-04-02' });
    const write = await stack.finished(id);
    expect(write).toMatchObject({ status: 'succeeded', remoteId: expect.any(String) });
    expect(sim.world.transactions.filter((transaction) => transaction.description === description)).toHaveLength(1);
    expect((await bed.connection.all("SELECT type FROM changes WHERE stream = 'writes' AND record_id = ?", [id]))).toEqual([{ type: 'write.succeeded' }]);
    expect((await bed.connection.get('SELECT COUNT(*) AS n FROM transactions WHERE id = ?', [write.remoteId]))).toEqual({ n: 0 });
    expect((await bed.connection.get("SELECT COUNT(*) AS n FROM changes WHERE stream = 'transactions' AND record_id = ?", [write.remoteId]))).toEqual({ n: 0 });
  });
});

describe('a response lost after the write committed', () => {
  it('transaction.create: reconciled from the ledger, exactly one transaction, never re-sent', async () => {
    sim.faults.inject({ kind: 'lose-response-after-commit', match: { method: 'POST', path: '/transactions' } });
    const description = `Lost response ${Date.now()}`;
    const { id } = await stack.intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 9900, description, date: '2026-04-01' });
    const write = await stack.finished(id);
    expect(write.status).toBe('succeeded');
    expect(write.outcome).toMatch(/found in the ledger after an ambiguous outcome/);
    const matching = sim.world.transactions.filter((transaction) => transaction.description === description);
    expect(matching).toHaveLength(1);
    expect(write.remoteId).toBe(matching[0]!.id);
    expect(posts('/transactions')).toBe(1);
    expect(write.attempts).toBe(1);
    // Written through from the ledger item, with its change row.
    expect((await bed.connection.get('SELECT amount FROM transactions WHERE id = ?', [write.remoteId]))).toEqual({ amount: 9900 });
    expect((await bed.connection.get("SELECT type FROM changes WHERE stream = 'writes' AND record_id = ?", [id]))).toEqual({ type: 'write.succeeded' });
  });

  it('email.send: not sent again; parked as needs_review with a status saying why', async () => {
    sim.faults.inject({ kind: 'lose-response-after-commit', match: { method: 'POST', path: '/emails' } });
    const { id } = await stack.intake.enqueueWrite('email.send', { from: adminAddress(), to: 'guest@example.org', subject: 'Lost once', text: 'Hello' });
    const write = await stack.finished(id);
    expect(write.status).toBe('needs_review');
    expect(write.outcome).toMatch(/not sent again/);
    expect(write.error).toMatch(/outcome is unknown/);
    // Its queue job is done: a completed job never runs again, so no retry can be pending.
    await waitFor(async () => (await stack.intake.queue.getJob(id))?.getState().then((state) => state === 'completed'), `write ${id}'s job to complete`);
    expect(posts('/emails')).toBe(1);
    expect(sim.world.data.emails.filter((email) => email.subject === 'Lost once')).toHaveLength(1);
    expect((await bed.connection.get("SELECT type FROM changes WHERE stream = 'writes' AND record_id = ?", [id]))).toEqual({ type: 'write.needs_review' });
  });

  it('domain.purchase: never sent again after sending', async () => {
    sim.faults.inject({ kind: 'lose-response-after-commit', match: { method: 'POST', path: '/domains' } });
    const { id } = await stack.intake.enqueueWrite('domain.purchase', { domain: 'lost-answer.com', expectedPriceMax: 2000 });
    const write = await stack.finished(id);
    expect(write.status).toBe('needs_review');
    expect(write.outcome).toMatch(/never sent again/);
    await waitFor(async () => (await stack.intake.queue.getJob(id))?.getState().then((state) => state === 'completed'), `write ${id}'s job to complete`);
    expect(posts('/domains')).toBe(1);
  });

  it('deal.close (idempotent): sent again, and the deal ends as asked', async () => {
    const deal = sim.world.createDeal({ status: 'OPEN' });
    sim.faults.inject({ kind: 'lose-response-after-commit', match: { method: 'POST', path: `/deals/${deal.id}/close` } });
    const { id } = await stack.intake.enqueueWrite('deal.close', { dealId: deal.id, status: 'LOST', reason: 'Budget cut' });
    const write = await stack.finished(id);
    expect(write).toMatchObject({ status: 'succeeded', remoteId: deal.id });
    expect(posts(`/deals/${deal.id}/close`)).toBe(2);
    expect(sim.world.deals.find((candidate) => candidate.id === deal.id)?.status).toBe('LOST');
  });
});

describe('clock-in', () => {
  it('a second clock-in: the 409 is reported as an entry already open, not a failure to retry', async () => {
    const first = await stack.intake.enqueueWrite('timeclock.clock_in', {}, { actAs: 'employee' });
    expect((await stack.finished(first.id)).status).toBe('succeeded');
    const second = await stack.intake.enqueueWrite('timeclock.clock_in', {}, { actAs: 'employee' });
    const write = await stack.finished(second.id);
    expect(write).toMatchObject({ status: 'succeeded', outcome: 'entry already open', httpStatus: 409, attempts: 1 });
    expect(posts('/time-clock-entries')).toBe(2);
    const employee = sim.world.employeeForRole('employee').id;
    expect(sim.world.data.timeClockEntries.filter((entry) => entry.employeeId === employee && entry.clockOutAt === null)).toHaveLength(1);
  });
});

describe('5xx answers', () => {
  it('transaction.create after a 500 that did not commit: looked up, not found, sent again: one transaction', async () => {
    sim.faults.inject({ kind: 'status', status: 500, match: { method: 'POST', path: '/transactions' } });
    const description = `After a 500 ${Date.now()}`;
    const { id } = await stack.intake.enqueueWrite('transaction.create', { type: 'REFUND', amount: 150, description });
    const write = await stack.finished(id);
    expect(write.status).toBe('succeeded');
    expect(write.outcome).toMatch(/^Transaction created \(re-sent after an ambiguous send; the ledger shows one record\)/);
    expect(posts('/transactions')).toBe(2);
    expect(sim.world.transactions.filter((transaction) => transaction.description === description)).toHaveLength(1);
  });

  it('employee.benefits.set (idempotent) is retried through a 503', async () => {
    const employee = sim.world.employees[8]!;
    sim.faults.inject({ kind: 'status', status: 503, times: 2, match: { method: 'PUT' } });
    const { id } = await stack.intake.enqueueWrite('employee.benefits.set', { employeeId: employee.id, benefitIds: [] });
    expect((await stack.finished(id)).status).toBe('succeeded');
    expect(employee.benefitIds).toEqual([]);
  });
});

describe('idempotency keys', () => {
  it('the same key enqueued twice is one write, even at the same moment', async () => {
    const payload = { type: 'INCOME' as const, amount: 777, description: 'Once only' };
    const [a, b] = await Promise.all([
      stack.intake.enqueueWrite('transaction.create', payload, { idempotencyKey: 'order-42' }),
      stack.intake.enqueueWrite('transaction.create', payload, { idempotencyKey: 'order-42' }),
    ]);
    expect(a.id).toBe(b.id);
    expect([a.created, b.created].sort()).toEqual([false, true]);
    const again = await stack.intake.enqueueWrite('transaction.create', { description: 'Once only', amount: 777, type: 'INCOME' }, { idempotencyKey: 'order-42' });
    expect(again).toMatchObject({ id: a.id, created: false });
    await stack.finished(a.id);
    expect((await bed.connection.get("SELECT COUNT(*) AS n FROM writes WHERE idempotency_key = 'order-42'"))).toEqual({ n: 1 });
    expect(sim.world.transactions.filter((transaction) => transaction.description === 'Once only')).toHaveLength(1);
    expect(posts('/transactions')).toBe(1);
  });

  it('a used key with a different payload or acting token is refused', async () => {
    await stack.intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 100 }, { idempotencyKey: 'k-1' });
    await expect(stack.intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 101 }, { idempotencyKey: 'k-1' })).rejects.toThrow(IdempotencyConflictError);
    await expect(stack.intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 100 }, { idempotencyKey: 'k-1', actAs: 'employee' })).rejects.toThrow(
      /different actAs/,
    );
    await expect(stack.intake.enqueueWrite('deal.close', { dealId: 'd', status: 'WON' }, { idempotencyKey: 'k-1' })).rejects.toThrow(/different kind/);
  });
});

describe('durability at intake', () => {
  it('a write stored while Redis refuses the job is accepted (not an error), marked, and queued by the sweep', async () => {
    // This worker's own sweeper would queue the write whenever it ran (its interval, or the first `ready`
    // of one of its Redis connections after it started, which a loaded machine can delay past the
    // intake's store): it is off, and the test runs the sweep itself.
    await stack.close();
    stack = await writeStack(sim, bed, { worker: { sweep: false } });
    const broken = new WriteIntake({ connection: bed.connection, queue: { redis: 'redis://127.0.0.1:1', prefix: bed.prefix, queueName: bed.queueName }, enqueueTimeoutMs: 300 });
    const accepted = await broken.enqueueWrite('transaction.create', { type: 'INCOME', amount: 2500, description: 'Stored while Redis was down' }, { idempotencyKey: 'redis-down-1' });
    await broken.close().catch(() => undefined);
    expect(accepted).toMatchObject({ status: 'queued', created: true, enqueueError: expect.any(String) });
    const writeId = accepted.id;
    const stored = await stack.intake.getWrite(writeId);
    expect(stored).toMatchObject({ status: 'queued', enqueueError: expect.any(String) });
    // Not in BullMQ, so nothing can run it until the sweep queues it (at the next worker start).
    expect(await stack.intake.queue.getJob(writeId)).toBeUndefined();
    expect(posts('/transactions')).toBe(0);
    expect(await stack.intake.requeueMissing()).toEqual({ requeued: [writeId], failed: [] });
    const write = await stack.finished(writeId);
    expect(write).toMatchObject({ status: 'succeeded', enqueueError: null });
    expect(sim.world.transactions.filter((transaction) => transaction.description === 'Stored while Redis was down')).toHaveLength(1);
  });

  it('a write acting as a token this worker does not have fails naming actAs, and nothing is sent', async () => {
    // Enqueued by a process that had the token (its intake knows no token list here); this worker has not.
    const intake = new WriteIntake({ connection: bed.connection, queue: { redis: REDIS_URL, prefix: bed.prefix, queueName: bed.queueName } });
    const { id } = await intake.enqueueWrite('timeclock.clock_in', {}, { actAs: 'front_desk' });
    await intake.close();
    const write = await stack.finished(id);
    expect(write).toMatchObject({ status: 'failed', outcome: 'actAs: no token named "front_desk" is configured', attempts: 0 });
    expect(posts('/time-clock-entries')).toBe(0);
  });

  it('a write left `sending` by a dead worker is resolved from the ledger, not sent again', async () => {
    await stack.close();
    // The dead worker's request landed; it died before recording the answer, and BullMQ lost the job.
    const description = `Landed before the crash ${Date.now()}`;
    const landed = sim.world.createTransaction({ type: 'INCOME', amount: 4321, description, date: '2026-05-05T00:00:00.000Z' });
    const intake = new WriteIntake({ connection: bed.connection, queue: { redis: REDIS_URL, prefix: bed.prefix, queueName: bed.queueName } });
    const { id } = await intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 4321, description, date: '2026-05-05' });
    await intake.queue.remove(id);
    await intake.close();
    // The dead worker's claim (expired) and its `sending` mark.
    const dead = new WriteStore(bed.connection);
    expect(await dead.claim(id, 'dead-worker', -1)).toBeDefined();
    expect(await dead.markSending(id, 'dead-worker')).toBe(true);
    stack = await writeStack(sim, bed);
    expect(stack.worker.requeued).toEqual([id]);
    const write = await stack.finished(id);
    expect(write).toMatchObject({ status: 'succeeded', remoteId: landed.id });
    expect(posts('/transactions')).toBe(0);
  });
});
