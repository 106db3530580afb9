/**
 * Range backfills (docs/sync.md "Range backfill"): `backfill --created-after/--created-before` lists
 * only the records created in the range, records their changes as any scan would, counts misses and
 * tombstones inside the range only (records outside it are untouched, even when gone from the
 * API), keeps the cursor, and resumes only a checkpoint of its own range. Against the simulator
 * over real HTTP and a real mirror (SQLite, and PostgreSQL in the postgres project).
 */
import { describe, expect, it } from 'vitest';
import { STREAMS } from '../../src/streams/definitions.ts';
import { checkCreatedRange, CreatedRangeError } from '../../src/sync/created-range.ts';
import { listRequests, syncFixtures } from '../helpers.ts';

const fixtures = syncFixtures();

type Deal = { id: string; createdAt: string; stageId: string; title: string };

/** The deals by creation time. */
function dealsByCreation(deals: Deal[]): Deal[] {
  return [...deals].sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}

/** The deals created strictly inside `range` (the list's filters are exclusive). */
function inside(deals: Deal[], range: { after: string; before: string }): Deal[] {
  return deals.filter((deal) => deal.createdAt > range.after && deal.createdAt < range.before);
}

describe('range backfill', () => {
  it('a range ("March"): its change and, after the second scan, its tombstone recorded; a record outside it ("June") gone or changed is not touched; the cursor stays', async () => {
    const { sim, context } = await fixtures.start({ size: { transactions: 5, deals: 60, onboardings: 2 } });
    expect((await context.engine.run('deals', 'backfill')).status).toBe('succeeded');
    const cursor = (await context.store.readSyncState('deals')).cursor;
    const deals = dealsByCreation(sim.world.groundTruth('deals') as Deal[]);
    // "March": the deals created strictly between deals[19] and deals[40]; "June": deals[50] and after.
    const range = { after: deals[19]!.createdAt, before: deals[40]!.createdAt };
    const march = inside(deals, range);
    const june = deals.filter((deal) => deal.createdAt > deals[48]!.createdAt);
    expect(march.length).toBeGreaterThan(10);
    const [changedInMarch, goneInMarch, goneInJune, changedInJune] = [march[3]!, march[7]!, june[0]!, june[2]!];
    sim.world.updateDeal(changedInMarch.id, { title: 'renamed in March' });
    sim.world.updateDeal(changedInJune.id, { title: 'renamed in June' });
    expect(sim.world.deleteRecord('deals', goneInMarch.id)).toBe(true);
    expect(sim.world.deleteRecord('deals', goneInJune.id)).toBe(true);
    const seq = await context.store.lastSeq();
    const requestsBefore = listRequests(sim, '/deals').length;

    const first = await context.engine.run('deals', 'backfill', { createdRange: checkCreatedRange(STREAMS.deals, range) });
    expect(first).toMatchObject({ status: 'succeeded', records: march.length - 1, tombstones: 0, createdRange: range, scan: { outcome: 'complete', total: march.length - 1 } });
    // Every request carried the range.
    for (const request of listRequests(sim, '/deals').slice(requestsBefore)) {
      const query = new URLSearchParams(request.query);
      expect(query.get('createdAfter')).toBe(range.after);
      expect(query.get('createdBefore')! <= range.before).toBe(true);
    }
    const misses = async (id: string) => (await context.connection.get<{ missed_scans: number; deleted_at: string | null }>('SELECT missed_scans, deleted_at FROM deals WHERE id = ?', [id]))!;
    expect(await misses(goneInMarch.id)).toEqual({ missed_scans: 1, deleted_at: null });
    expect(await misses(goneInJune.id)).toEqual({ missed_scans: 0, deleted_at: null });

    const second = await context.engine.run('deals', 'backfill', { createdRange: checkCreatedRange(STREAMS.deals, range) });
    expect(second).toMatchObject({ status: 'succeeded', tombstones: 1 });
    const changes = await context.connection.all<{ type: string; record_id: string; data: string }>('SELECT type, record_id, data FROM changes WHERE seq > ? ORDER BY seq', [seq]);
    expect(changes.map(({ type, record_id }) => [type, record_id])).toEqual([
      ['deal.updated', changedInMarch.id],
      ['deal.deleted', goneInMarch.id],
    ]);
    expect(JSON.parse(changes[0]!.data).changes.title).toEqual({ old: changedInMarch.title, new: 'renamed in March' });
    // June: still live, never counted missed, its change not read.
    expect(await misses(goneInJune.id)).toEqual({ missed_scans: 0, deleted_at: null });
    expect((await context.connection.get<{ title: string }>('SELECT title FROM deals WHERE id = ?', [changedInJune.id]))!.title).toBe(changedInJune.title);
    expect((await context.store.readSyncState('deals')).cursor).toBe(cursor);
  });

  it('resumable: an interrupted range backfill is resumed by the same range only; another range starts anew', async () => {
    const { sim, context } = await fixtures.start({ size: { transactions: 5, deals: 400, onboardings: 2 } });
    const deals = dealsByCreation(sim.world.groundTruth('deals') as Deal[]);
    const march = checkCreatedRange(STREAMS.deals, { after: deals[49]!.createdAt, before: deals[300]!.createdAt });
    const june = checkCreatedRange(STREAMS.deals, { after: deals[309]!.createdAt, before: deals[360]!.createdAt });
    const inMarch = inside(deals, { after: deals[49]!.createdAt, before: deals[300]!.createdAt }).length;
    const inJune = inside(deals, { after: deals[309]!.createdAt, before: deals[360]!.createdAt }).length;
    expect(inMarch).toBeGreaterThan(200);
    /** A March backfill stopped after its first page. */
    const interruptedMarch = async () => {
      const controller = new AbortController();
      const result = await context.engine.run('deals', 'backfill', { createdRange: march, signal: controller.signal, onProgress: () => controller.abort() });
      expect(result).toMatchObject({ status: 'interrupted', resumed: false });
      expect((await context.store.readSyncState('deals')).run).toMatchObject({ createdRange: march, records: 100 });
    };
    await interruptedMarch();
    const other = await context.engine.run('deals', 'backfill', { createdRange: june });
    expect(other).toMatchObject({ status: 'succeeded', resumed: false, records: inJune });
    await interruptedMarch();
    // A whole-stream backfill does not resume it either; its own checkpoint then stands, which March does not resume.
    const stop = new AbortController();
    const whole = await context.engine.run('deals', 'backfill', { signal: stop.signal, onProgress: () => stop.abort() });
    expect(whole).toMatchObject({ status: 'interrupted', resumed: false });
    expect((await context.store.readSyncState('deals')).run!.createdRange).toBeUndefined();
    await interruptedMarch();
    const resumed = await context.engine.run('deals', 'backfill', { createdRange: march });
    expect(resumed).toMatchObject({ status: 'succeeded', resumed: true, createdRange: march, scan: { outcome: 'complete', total: inMarch } });
    // Only the rest of the range was read: the first page came from the interrupted run.
    expect(resumed.records).toBe(inMarch - 100);
    // The mirror holds March and June whole, and the whole-stream backfill's one page.
    const live = await context.connection.get<{ n: number }>('SELECT COUNT(*) AS n FROM deals WHERE deleted_at IS NULL');
    const firstPage = new Set(deals.slice(0, 100).map((deal) => deal.id));
    const ranges = [...inside(deals, { after: deals[49]!.createdAt, before: deals[300]!.createdAt }), ...inside(deals, { after: deals[309]!.createdAt, before: deals[360]!.createdAt })];
    expect(Number(live!.n)).toBe(new Set([...firstPage, ...ranges.map((deal) => deal.id)]).size);
  });

  it('refuses a range on a stream whose list does not accept it (naming the stream), a bound that is not a time, and an empty range', () => {
    const closed = { ...STREAMS.deals, name: 'closed-list', request: { ...STREAMS.deals.request, acceptsCreatedRange: false } };
    expect(() => checkCreatedRange(closed, { after: '2026-03-01' })).toThrow(new CreatedRangeError('--created-after/--created-before: the closed-list stream\'s list (GET /deals) does not accept createdAfter/createdBefore; backfill it whole'));
    expect(() => checkCreatedRange(STREAMS.deals, { after: 'March' })).toThrow(/--created-after: must be an ISO 8601 time/);
    expect(() => checkCreatedRange(STREAMS.deals, { after: '2026-04-01', before: '2026-03-01' })).toThrow(/must be earlier than --created-before/);
    expect(checkCreatedRange(STREAMS.transactions, { after: '2026-03-01', before: '2026-04-01T00:00:00+02:00' })).toEqual({ after: '2026-03-01T00:00:00.000Z', before: '2026-03-31T22:00:00.000Z' });
  });
});

describe('instants, not text: a server writing UTC as +00:00', () => {
  it('a range backfill of customers counts no record created exactly at a bound missed (0 tombstoned), and the server switching to +00:00 changes no record', async () => {
    const { sim, context } = await fixtures.start({ size: { transactions: 2, deals: 2, onboardings: 2, customers: 150 } });
    expect((await context.engine.run('customers', 'backfill')).status).toBe('succeeded');
    const seq = await context.store.lastSeq();
    // From now on every instant is written `2025-11-01T07:41:35.578+00:00`: the same instants.
    sim.faults.inject({ kind: 'timestamp-style', style: '+00:00', times: 10_000, match: { path: '/customers' } });
    // Before: every record re-hashed with createdAt and updatedAt "changed": 150 customer.updated.
    expect(await context.engine.run('customers', 'reconcile')).toMatchObject({ status: 'succeeded', changes: 0 });
    const stored = await context.connection.get<{ raw: string }>('SELECT raw FROM customers LIMIT 1');
    expect(JSON.parse(stored!.raw).createdAt).toMatch(/\+00:00$/);

    // The bounds are the creation times of two customers (as the operator copied them): the list
    // leaves a record created exactly at a bound out (both filters are exclusive).
    const customers = [...(sim.world.groundTruth('customers') as { createdAt: string }[])].sort((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt));
    const range = checkCreatedRange(STREAMS.customers, { after: customers[40]!.createdAt, before: customers[110]!.createdAt });
    for (let scan = 0; scan < 2; scan += 1) {
      const result = await context.engine.run('customers', 'backfill', { createdRange: range });
      // Before: the customer created at --created-before, stored `...+00:00`, compared as text below
      // `...Z`, counted in the range and missed: tombstoned by the second scan.
      expect(result).toMatchObject({ status: 'succeeded', tombstones: 0, scan: { outcome: 'complete' } });
    }
    const misses = await context.connection.all<{ id: string }>('SELECT id FROM customers WHERE missed_scans > 0 OR deleted_at IS NOT NULL');
    expect(misses).toEqual([]);
    expect(await context.connection.all('SELECT type, record_id FROM changes WHERE seq > ?', [seq])).toEqual([]);
  });
});
