/**
 * Record clock behind the cursor's clock: when records' `updatedAt` lag the
 * server's `Date` (or, with no `Date`, our clock is ahead of the records'), a change made just
 * after a sync carries an `updatedAt` older than the next `updatedAfter` and is missed. The engine
 * measures the lag from the changed records it sees, widens the overlap by it, and shows it in
 * `status` and `/metrics`.
 */
import { describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import type { Context } from '../../jobs/context.ts';
import { readStatus } from '../../jobs/status.ts';
import { DaemonMetrics, pageTrustSource } from '../../src/daemon/metrics.ts';
import { RecordClockStore } from '../../src/mirror/record-clock-store.ts';
import { openContext } from '../../jobs/context.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { expectMirrorEqualsGroundTruth, simulator, syncFixtures, testConfig, waitFor } from '../helpers.ts';
import { REDIS_URL, writeTestBed } from '../writes/support.ts';

const fixtures = syncFixtures();
const LAG_SECONDS = 30;

const title = async (ctx: Context, id: string) => ((await ctx.connection.get('SELECT title FROM deals WHERE id = ?', [id])) as { title: string }).title;

/** Renames `count` deals from `from` upstream (as another user would), returning their ids. */
function renameDeals(sim: RunningSimulator, from: number, count: number, label: string): string[] {
  return sim.world.deals.slice(from, from + count).map((deal) => sim.world.updateDeal(deal.id, { title: `${label} ${deal.id}` }).id);
}

describe.each([
  ['records stamped 30 s behind the Date header', { recordClockLagMs: LAG_SECONDS * 1000 }, false],
  ['no Date header and our clock 30 s ahead of the server', { clock: () => Date.now() - LAG_SECONDS * 1000 }, true],
])('%s', (_label, simulatorOptions, noDate) => {
  it('the first sync after a change sees it (the stream lists from its high water) and measures the lag; later syncs widen the overlap by it and miss nothing', async () => {
    const { sim, context: ctx } = await fixtures.start({ size: { deals: 40, transactions: 5 }, ...simulatorOptions }, { sync: { overlapSeconds: 2 } });
    if (noDate) sim.faults.inject({ kind: 'no-date-header', times: 10_000 });
    expect((await ctx.engine.run('deals', 'backfill')).status).toBe('succeeded');
    expect((await new RecordClockStore(ctx.store.executor).read({ stream: 'deals' })).lagSeconds).toBe(0);

    // Nothing measured yet: a change made now carries an updatedAt 30 s old, behind cursor - overlap.
    // The sync asks from the backfill's high water instead (the newest updatedAt then), so it lists
    // them, and each, stamped after the high water, measures the lag.
    const first = renameDeals(sim, 0, 3, 'first');
    expect(await ctx.engine.run('deals', 'sync')).toMatchObject({ status: 'succeeded', changes: 3 });
    for (const id of first) expect(await title(ctx, id)).toBe(`first ${id}`);
    const lag = await new RecordClockStore(ctx.store.executor).read({ stream: 'deals' });
    expect(lag.source).toBe('list');
    expect(lag.observations).toBeGreaterThanOrEqual(3);
    expect(lag.lagSeconds).toBeGreaterThanOrEqual(LAG_SECONDS - 5);
    expect(lag.lagSeconds).toBeLessThanOrEqual(LAG_SECONDS + 1);
    expect(await ctx.engine.run('deals', 'reconcile')).toMatchObject({ status: 'succeeded', changes: 0 });

    // From now on a change made after a sync is seen by the next sync.
    const seen = renameDeals(sim, 10, 4, 'second');
    expect(await ctx.engine.run('deals', 'sync')).toMatchObject({ status: 'succeeded', changes: 4 });
    for (const id of seen) expect(await title(ctx, id)).toBe(`second ${id}`);
    await expectMirrorEqualsGroundTruth(ctx, sim, 'deals');

    // The later sync may have measured a little more (the largest lag seen stands).
    const now = (await new RecordClockStore(ctx.store.executor).read({ stream: 'deals' })).lagSeconds;
    expect(now).toBeGreaterThanOrEqual(lag.lagSeconds);
    const status = (await readStatus(ctx.config.dbPath)).streams.find((s) => s.stream === 'deals')!;
    expect(status.recordClockLagSeconds).toBe(now);
    const metrics = new DaemonMetrics({ streams: ['deals'], store: ctx.store, pageTrust: pageTrustSource(ctx.store), apiClients: [ctx.client], budget: ctx.budgets, processMetrics: false });
    expect((await metrics.render()).body).toContain(`bizops_clock_skew_seconds{connection="default",stream="deals"} ${now}`);
  });
});

describe('a record clock in step', () => {
  it('measures no lag from ordinary changes, so the overlap is not widened', async () => {
    const { sim, context: ctx } = await fixtures.start({ size: { deals: 40, transactions: 5 } }, { sync: { overlapSeconds: 2 } });
    expect((await ctx.engine.run('deals', 'backfill')).status).toBe('succeeded');
    const changed = renameDeals(sim, 0, 3, 'renamed');
    expect(await ctx.engine.run('deals', 'sync')).toMatchObject({ status: 'succeeded', changes: 3 });
    for (const id of changed) expect(await title(ctx, id)).toBe(`renamed ${id}`);
    expect(await ctx.engine.run('deals', 'reconcile')).toMatchObject({ status: 'succeeded', changes: 0 });
    expect(await new RecordClockStore(ctx.store.executor).read({ stream: 'deals' })).toMatchObject({ lagSeconds: 0, observations: 0 });
  });
});

describe('the transactions this worker creates', () => {
  it('measure the lag of the transactions stream (whose list items carry no timestamps), and the next sync sees a change made after it', async () => {
    const bed = await writeTestBed();
    const sim = await simulator({ size: { transactions: 30, deals: 5 }, recordClockLagMs: LAG_SECONDS * 1000 });
    const config = testConfig(sim, bed.dbPath, { redisUrl: REDIS_URL, sync: { overlapSeconds: 2 } });
    const ctx = await openContext(config, { logger: silentLogger, redisKeys: { queuePrefix: bed.prefix, queueName: bed.queueName, budgetPrefix: bed.budgetPrefix } });
    try {
      expect((await ctx.engine.run('transactions', 'backfill')).status).toBe('succeeded');
      const queue = await ctx.writeQueue();
      await queue.startWorker({ concurrency: 1 });
      const { id } = await queue.enqueueWrite('transaction.create', { type: 'INCOME', amount: 1200, description: 'clock probe' });
      await waitFor(async () => (await queue.getWrite(id))?.status === 'succeeded', 'the write to succeed');

      expect((await ctx.engine.run('transactions', 'sync')).status).toBe('succeeded');
      const lag = await new RecordClockStore(ctx.store.executor).read({ stream: 'transactions' });
      expect(lag.source).toBe('write');
      expect(lag.lagSeconds).toBeGreaterThanOrEqual(LAG_SECONDS - 5);
      expect(lag.lagSeconds).toBeLessThanOrEqual(LAG_SECONDS + 1);

      // A transaction voided upstream after this sync: its updatedAt is 30 s old, yet the next sync sees it.
      const target = sim.world.transactions.find((t) => t.status !== 'VOIDED')!;
      sim.world.updateTransaction(target.id, { status: 'VOIDED' });
      expect(await ctx.engine.run('transactions', 'sync')).toMatchObject({ status: 'succeeded', changes: 1 });
      expect(((await ctx.connection.get('SELECT status FROM transactions WHERE id = ?', [target.id])) as { status: string }).status).toBe('VOIDED');
    } finally {
      await ctx.close();
      await sim.close();
      await bed.cleanup();
    }
  });
});

describe('one server, one record clock', () => {
  it('a lag measured on deals widens the transactions overlap too: a transaction changed after a sync is seen by the next', async () => {
    const { sim, context: ctx } = await fixtures.start({ size: { deals: 40, transactions: 30 }, recordClockLagMs: LAG_SECONDS * 1000 }, { sync: { overlapSeconds: 2 } });
    expect((await ctx.engine.run('transactions', 'backfill')).status).toBe('succeeded');
    expect((await ctx.engine.run('deals', 'backfill')).status).toBe('succeeded');
    renameDeals(sim, 0, 3, 'renamed');
    expect(await ctx.engine.run('deals', 'reconcile')).toMatchObject({ status: 'succeeded', changes: 3 });
    expect((await new RecordClockStore(ctx.store.executor).read({ stream: 'deals' })).lagSeconds).toBeGreaterThanOrEqual(LAG_SECONDS - 5);
    // Transaction list items carry no timestamps: the transactions stream itself measured nothing.
    expect((await new RecordClockStore(ctx.store.executor).read({ stream: 'transactions' })).lagSeconds).toBe(0);

    expect((await ctx.engine.run('transactions', 'sync')).status).toBe('succeeded');
    const target = sim.world.transactions.find((t) => t.status !== 'VOIDED')!;
    sim.world.updateTransaction(target.id, { status: 'VOIDED' });
    expect(await ctx.engine.run('transactions', 'sync')).toMatchObject({ status: 'succeeded', changes: 1 });
    await expectMirrorEqualsGroundTruth(ctx, sim, 'transactions');
  });
});
