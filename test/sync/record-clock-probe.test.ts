/**
 * The record clock measured within one sync, bounded and decaying (docs/sync.md "Record clock"):
 * - records stamped 3 h behind the server and no `Date` header: a stream that carries `updatedAt`
 *   (deals) lists from its high water, and a stream that does not (transactions) has the clock
 *   probed first (one page of deals sorted by `updatedAt`), so no change is missed by any sync, and
 *   `status` warns;
 * - one record whose `updatedAt` goes backwards (694 days) measures no lag, so a later quiet sync
 *   stays at its minimum requests; a lag measured once decays when records stamped in step are listed.
 * Request counts are read at the simulator.
 */
import { describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import type { Context } from '../../jobs/context.ts';
import { RecordClockStore } from '../../src/mirror/record-clock-store.ts';
import { STREAM_NAMES, streamByName, type StreamName } from '../../src/streams/definitions.ts';
import { measuringFirst } from '../../src/sync/record-clock-lags.ts';
import { expectMirrorEqualsGroundTruth, quietSyncRequests, statusOutput, syncFixtures } from '../helpers.ts';

const fixtures = syncFixtures();
const HOUR_MS = 3_600_000;

/** Runs every stream as `bizops-sync sync` (or `backfill`) does: one after another, those that measure the records' clock first. */
async function syncAll(ctx: Context, reason: 'sync' | 'backfill'): Promise<void> {
  for (const stream of measuringFirst(STREAM_NAMES, streamByName)) expect((await ctx.engine.run(stream, reason)).status, stream).toBe('succeeded');
}

/** API requests the simulator received since `from` (an index into its request log), by list path. */
function requestsSince(sim: RunningSimulator, from: number): { total: number; byPath: Record<string, number> } {
  const entries = sim.requests.slice(from);
  const byPath: Record<string, number> = {};
  for (const entry of entries) byPath[entry.path.replace('/api/public/v1', '')] = (byPath[entry.path.replace('/api/public/v1', '')] ?? 0) + 1;
  return { total: entries.length, byPath };
}

/** Changes upstream as other users would make them: transactions voided or re-described, deals renamed. */
function changeSome(sim: RunningSimulator, round: number): void {
  const transactions = sim.world.transactions.filter((t) => t.status !== 'VOIDED').slice(round * 10, round * 10 + 10);
  for (const [index, transaction] of transactions.entries()) {
    sim.world.updateTransaction(transaction.id, index % 2 === 0 ? { status: 'VOIDED' } : { description: `round ${round} ${transaction.id}` });
  }
  for (const deal of sim.world.deals.slice(round * 3, round * 3 + 3)) sim.world.updateDeal(deal.id, { title: `round ${round} ${deal.id}` });
}

describe('records stamped 3 h behind the server, and no Date header', () => {
  it('every sync sees every change made before it: the lag is measured by the first sync after a change; status warns', async () => {
    const now = Date.now();
    // The seed data lies before the records' clock (anchored 4 h back), as a server's own history would.
    const { sim, context: ctx } = await fixtures.start({ size: { transactions: 120, deals: 40, onboardings: 5 }, recordClockLagMs: 3 * HOUR_MS, anchor: now - 4 * HOUR_MS });
    sim.faults.inject({ kind: 'no-date-header', times: 100_000 });
    await syncAll(ctx, 'backfill');

    for (let round = 0; round < 4; round++) {
      changeSome(sim, round);
      await syncAll(ctx, 'sync');
      // Nothing missed, nothing stale: after each sync, not only after a complete scan.
      for (const stream of ['transactions', 'deals'] as StreamName[]) await expectMirrorEqualsGroundTruth(ctx, sim, stream);
    }
    const lag = await new RecordClockStore(ctx.store.executor).read({ stream: 'deals' });
    expect(lag.lagSeconds).toBeGreaterThan(3 * 3600 - 120);
    expect(lag.lagSeconds).toBeLessThanOrEqual(3 * 3600 + 2);

    expect(await statusOutput(ctx.config.dbPath)).toMatch(/WARNING: deals: record timestamps lag the cursor's clock by 10[78]\d\d(\.\d+)? s/);
  });
});

describe('transactions stamped 3 h behind our clock, no Date header, and only transactions change (no deal moves)', () => {
  it('the stream\'s own probe finds the records its incremental runs did not list and bounds the lag: after the second sync the mirror equals the server, at every later sync too; status warns', async () => {
    const now = Date.now();
    const { sim, context: ctx } = await fixtures.start({ size: { transactions: 120, deals: 40, onboardings: 5 }, recordClockLagMs: 3 * HOUR_MS, anchor: now - 4 * HOUR_MS });
    sim.faults.inject({ kind: 'no-date-header', times: 100_000 });
    await syncAll(ctx, 'backfill');
    for (let round = 0; round < 4; round++) {
      // Other users create and void transactions; nothing else changes (the deals show no lag).
      for (let index = 0; index < 5; index++) sim.world.createTransaction({ type: 'INCOME', amount: 1000 + round * 10 + index });
      const open = sim.world.transactions.filter((t) => t.status !== 'VOIDED').slice(round * 5, round * 5 + 5);
      for (const transaction of open) sim.world.updateTransaction(transaction.id, { status: 'VOIDED' });
      await syncAll(ctx, 'sync');
      // Before: 5 more transactions missing and 5 more stale after every sync, no lag, no warning.
      if (round >= 1) await expectMirrorEqualsGroundTruth(ctx, sim, 'transactions');
    }
    const clock = await new RecordClockStore(ctx.store.executor).read({ stream: 'transactions' });
    // An upper bound from the newest stamp: at least the true lag, within an eighth of a doubling above it.
    expect(clock).toMatchObject({ source: 'probe', unlisted: null });
    expect(clock.lagSeconds).toBeGreaterThanOrEqual(3 * 3600);
    expect(clock.lagSeconds).toBeLessThanOrEqual(4 * 3600);

    expect(await statusOutput(ctx.config.dbPath)).toMatch(/WARNING: transactions: record timestamps lag the cursor's clock by 1\d{4} s/);
  });
});

describe('one record whose updatedAt goes backwards once (694 days)', () => {
  it('measures no lag: a later quiet sync stays at its minimum requests', async () => {
    const { sim, context: ctx } = await fixtures.start({ size: { transactions: 150, deals: 150, onboardings: 5 } });
    await syncAll(ctx, 'backfill');
    const deal = sim.world.deals[0]!;
    const backwards = new Date(Date.parse(deal.updatedAt) - 694 * 24 * HOUR_MS).toISOString();
    // Served backwards by one complete scan (its first page), then as before.
    sim.faults.inject({ kind: 'backwards-updated-at', id: deal.id, updatedAt: backwards, times: 1 });
    expect(await ctx.engine.run('deals', 'reconcile')).toMatchObject({ status: 'succeeded', changes: 1 });
    expect(await ctx.engine.run('deals', 'reconcile')).toMatchObject({ status: 'succeeded', changes: 1 });
    expect((await new RecordClockStore(ctx.store.executor).largest())).toBe(0);

    // A quiet sync: one page per list, and one probe of the deals per stream without timestamps (the transactions).
    const from = sim.requests.length;
    await syncAll(ctx, 'sync');
    expect(requestsSince(sim, from)).toEqual(quietSyncRequests(sim));
  });

  it('a lag measured once decays when a record stamped in step is listed: the next quiet sync is at its minimum again', async () => {
    // Our clock is the cursor's (no Date header); the records' clock is `behindMs` behind it.
    let behindMs = 2 * HOUR_MS;
    const now = Date.now();
    const { sim, context: ctx } = await fixtures.start({ size: { transactions: 150, deals: 150, onboardings: 5 }, clock: () => Date.now() - behindMs, anchor: now - 3 * HOUR_MS });
    sim.faults.inject({ kind: 'no-date-header', times: 100_000 });
    await syncAll(ctx, 'backfill');
    sim.world.updateDeal(sim.world.deals[5]!.id, { title: 'stamped 2 h behind' });
    await syncAll(ctx, 'sync');
    expect((await new RecordClockStore(ctx.store.executor).largest())).toBeGreaterThan(2 * 3600 - 120);

    // The server's clock is put right: the next change is stamped in step, and caps the lag.
    behindMs = 0;
    sim.world.updateDeal(sim.world.deals[6]!.id, { title: 'stamped in step' });
    await syncAll(ctx, 'sync');
    expect((await new RecordClockStore(ctx.store.executor).largest())).toBeLessThanOrEqual(2);
    await expectMirrorEqualsGroundTruth(ctx, sim, 'deals');

    const from = sim.requests.length;
    await syncAll(ctx, 'sync');
    expect(requestsSince(sim, from)).toEqual(quietSyncRequests(sim));
  });
});

describe('a server that refuses the count of a list (the probe of a stream whose items carry no timestamps)', () => {
  it('the probe answered 400 is not asked again by the process; the runs go on and still see every change', async () => {
    const { sim, context: ctx } = await fixtures.start({ size: { transactions: 50, deals: 20, onboardings: 5 } });
    await syncAll(ctx, 'backfill');
    sim.faults.inject({ kind: 'status', status: 400, body: { message: 'limit must be 100' }, times: 1_000, match: { path: '/transactions', query: { limit: '1' } } });
    const probes = () => sim.requests.filter((entry) => entry.path.endsWith('/transactions') && entry.query === 'limit=1').length;
    for (let round = 0; round < 2; round++) {
      changeSome(sim, round);
      await syncAll(ctx, 'sync');
      await expectMirrorEqualsGroundTruth(ctx, sim, 'transactions');
      await expectMirrorEqualsGroundTruth(ctx, sim, 'deals');
    }
    expect(probes()).toBe(1);
  });
});
