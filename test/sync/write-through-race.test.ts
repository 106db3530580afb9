/**
 * A page requested before a write-through and committed after it (docs/sync.md "Write-throughs
 * during a run"): the page's copy of the record may be older than the write's response, so it must
 * not overwrite the row the write-through wrote, nor append a change reverting it, nor count it
 * missed; the next run reads the record again. On both back ends, against the simulator over real
 * HTTP, a real write worker on Redis, and a proxy that holds the list's answer (read by the
 * simulator before the write) until the write-through committed: every step waits on a condition.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '@bizops-sync/simulator';
import type { Context } from '../../jobs/context.ts';
import { verifyStream } from '../../src/sync/mirror-verify.ts';
import { testConfig, testContext, waitFor } from '../helpers.ts';
import { BACKENDS, removeTestMirrors } from '../sql-backends.ts';
import { TEST_MIRROR_BACKEND } from '../test-mirror.ts';
import { startHoldingProxy, type HoldingProxy } from '../writes/holding-proxy.ts';
import { deleteKeys, writeStack, type WriteStack } from '../writes/support.ts';

interface Fixture {
  sim: RunningSimulator;
  proxy: HoldingProxy;
  ctx: Context;
  stack: WriteStack;
  /** Holds the answer of the next list request of deals (read by the simulator at once) until `proxy.release()`. */
  holdNextDealsPage(): void;
}

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await removeTestMirrors();
});

async function start(location: string): Promise<Fixture> {
  const sim = await startSimulator({ rateLimit: false, size: { deals: 30, transactions: 5, onboardings: 2, customers: 5 } });
  cleanups.push(() => sim.close());
  let armed = false;
  const proxy = await startHoldingProxy(
    sim.url,
    (request) => {
      const hold = armed && request.method === 'GET' && (request.url ?? '').startsWith('/api/public/v1/deals?');
      if (hold) armed = false;
      return hold;
    },
    1,
  );
  cleanups.push(() => proxy.close());
  const dir = mkdtempSync(join(tmpdir(), 'bizops-race-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const ctx = await testContext(testConfig(sim, join(dir, 'unused.db'), { baseUrl: proxy.url, dbPath: location }));
  cleanups.push(() => ctx.close());
  const id = randomUUID().slice(0, 8);
  const bed = { dir, dbPath: location, connection: ctx.connection, prefix: `test-race-${id}`, budgetPrefix: `test-race-rate-${id}`, queueName: 'writes', cleanup: async () => {} };
  // The write worker talks to the simulator directly: only the sync's list answers are held.
  const stack = await writeStack(sim, bed);
  cleanups.push(async () => {
    await stack.close();
    await deleteKeys(`${bed.prefix}:*`);
    await deleteKeys(`${bed.budgetPrefix}:*`);
  });
  return { sim, proxy, ctx, stack, holdNextDealsPage: () => (armed = true) };
}

/** The deal's change rows after `seq`, oldest first, with the status each one carries. */
async function dealChangesAfter(ctx: Context, dealId: string, seq: number): Promise<{ type: string; status: unknown }[]> {
  const rows = await ctx.connection.all<{ type: string; data: string }>("SELECT type, data FROM changes WHERE stream = 'deals' AND record_id = ? AND seq > ? ORDER BY seq", [dealId, seq]);
  return rows.map((row) => ({ type: row.type, status: (JSON.parse(row.data) as { record: { status?: unknown } }).record.status }));
}

async function storedDeal(ctx: Context, dealId: string): Promise<{ status: string; deleted_at: string | null; missed_scans: number; last_seen_scan: number | null }> {
  const row = await ctx.connection.get<{ status: string; deleted_at: string | null; missed_scans: number | string; last_seen_scan: number | string | null }>(
    'SELECT status, deleted_at, missed_scans, last_seen_scan FROM deals WHERE id = ?',
    [dealId],
  );
  return { ...row!, missed_scans: Number(row!.missed_scans), last_seen_scan: row!.last_seen_scan === null ? null : Number(row!.last_seen_scan) };
}

/**
 * Starts `run` with the next deals page held, closes `dealId` (WON) through the write worker while the
 * page's answer (the deal still OPEN) waits, then lets the answer through.
 * @returns what `run` resolved to, and the changelog's last seq once the write-through committed
 */
async function closeWhilePageHeld<T>(fixture: Fixture, dealId: string, run: () => Promise<T>): Promise<{ result: T; closedAt: number }> {
  const { proxy, stack, ctx } = fixture;
  fixture.holdNextDealsPage();
  const running = run();
  await waitFor(() => proxy.held.length === 1, 'the deals page to be answered and held');
  const { id } = await stack.intake.enqueueWrite('deal.close', { dealId, status: 'WON' });
  expect(await stack.finished(id)).toMatchObject({ status: 'succeeded', remoteId: dealId });
  expect((await storedDeal(ctx, dealId)).status).toBe('WON');
  const closedAt = await ctx.store.lastSeq();
  proxy.release();
  return { result: await running, closedAt };
}

// Each vitest project (sqlite, postgres: vitest.config.ts) runs the back end it is named after.
describe.each(BACKENDS.filter((backend) => backend.name === TEST_MIRROR_BACKEND))('a deals page requested before a write-through and committed after it ($name)', (backend) => {
  it('an incremental sync leaves the closed deal WON: no change back to OPEN, and the next sync is quiet', async () => {
    const fixture = await start(await backend.location());
    const { sim, ctx } = fixture;
    const deal = sim.world.createDeal({ status: 'OPEN' });
    expect((await ctx.engine.run('deals', 'backfill')).status).toBe('succeeded');
    expect((await storedDeal(ctx, deal.id)).status).toBe('OPEN');

    const { result, closedAt } = await closeWhilePageHeld(fixture, deal.id, () => ctx.engine.run('deals', 'sync'));
    expect(result.status).toBe('succeeded');
    // The page listed the deal OPEN (read before the close): left as the write-through wrote it.
    expect(await dealChangesAfter(ctx, deal.id, closedAt)).toEqual([]);
    expect((await storedDeal(ctx, deal.id)).status).toBe('WON');
    expect(result.keptWrittenThrough).toBe(1);
    // The write-through's own change: the deal won, once.
    const changes = await dealChangesAfter(ctx, deal.id, 0);
    expect(changes.filter((change) => change.status === 'WON')).toHaveLength(1);
    expect(changes.at(-1)).toMatchObject({ status: 'WON' });

    const next = await ctx.engine.run('deals', 'sync');
    expect(next).toMatchObject({ status: 'succeeded', changes: 0 });
    expect(next.keptWrittenThrough).toBeUndefined();
    expect(await dealChangesAfter(ctx, deal.id, closedAt)).toEqual([]);
    expect((await storedDeal(ctx, deal.id)).status).toBe('WON');
  });

  it('a complete scan counts the deal listed (no miss, never tombstoned) and leaves it WON; two more scans change nothing', async () => {
    const fixture = await start(await backend.location());
    const { sim, ctx } = fixture;
    const deal = sim.world.createDeal({ status: 'OPEN' });
    expect((await ctx.engine.run('deals', 'backfill')).status).toBe('succeeded');

    const { result, closedAt } = await closeWhilePageHeld(fixture, deal.id, () => ctx.engine.run('deals', 'backfill'));
    expect(await dealChangesAfter(ctx, deal.id, closedAt)).toEqual([]);
    const stored = await storedDeal(ctx, deal.id);
    expect(stored).toMatchObject({ status: 'WON', deleted_at: null, missed_scans: 0 });
    expect(stored.last_seen_scan).toBe((await ctx.store.readSyncState('deals')).scanNumber);
    expect(result).toMatchObject({ status: 'succeeded', keptWrittenThrough: 1, tombstones: 0, scan: { outcome: 'complete' } });

    for (let scan = 0; scan < 2; scan += 1) {
      expect(await ctx.engine.run('deals', 'backfill')).toMatchObject({ status: 'succeeded', changes: 0, tombstones: 0 });
    }
    expect(await dealChangesAfter(ctx, deal.id, closedAt)).toEqual([]);
    expect(await storedDeal(ctx, deal.id)).toMatchObject({ status: 'WON', deleted_at: null, missed_scans: 0 });
  });

  it('verify --repair neither calls the written-through deal stale nor writes the page copy back', async () => {
    const fixture = await start(await backend.location());
    const { sim, ctx } = fixture;
    const deal = sim.world.createDeal({ status: 'OPEN' });
    expect((await ctx.engine.run('deals', 'backfill')).status).toBe('succeeded');

    const { result, closedAt } = await closeWhilePageHeld(fixture, deal.id, () => verifyStream('deals', { client: ctx.client, store: ctx.store, repair: true }));
    expect(await dealChangesAfter(ctx, deal.id, closedAt)).toEqual([]);
    expect(await storedDeal(ctx, deal.id)).toMatchObject({ status: 'WON', deleted_at: null });
    expect(result).toMatchObject({ status: 'equal', stale: { count: 0 }, missing: { count: 0 }, extra: { count: 0 }, repaired: { changes: 0, tombstones: 0 } });
    // The API holds WON too: a second verify finds the mirror equal.
    expect(await verifyStream('deals', { client: ctx.client, store: ctx.store })).toMatchObject({ status: 'equal' });
  });

  it('with no write-through in between, a page that sets a record back (an older updatedAt: a restore) is applied', async () => {
    const fixture = await start(await backend.location());
    const { sim, ctx } = fixture;
    const deal = sim.world.createDeal({ status: 'OPEN' });
    expect((await ctx.engine.run('deals', 'backfill')).status).toBe('succeeded');
    const before = await ctx.store.lastSeq();
    sim.world.updateDeal(deal.id, { title: `restored ${deal.id}`, updatedAt: '2020-01-01T00:00:00.000Z' });
    const result = await ctx.engine.run('deals', 'backfill');
    expect(result.status).toBe('succeeded');
    expect(result.keptWrittenThrough).toBeUndefined();
    expect((await dealChangesAfter(ctx, deal.id, before)).map((change) => change.type)).toEqual(['deal.updated']);
    expect(await ctx.connection.get('SELECT title FROM deals WHERE id = ?', [deal.id])).toEqual({ title: `restored ${deal.id}` });
  });
});
