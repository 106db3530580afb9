/**
 * The frozen set's second (docs/sync.md): a complete scan's pages after the first ask
 * `createdBefore` = the first page's server time floored to the second, so a record the server
 * created in that second, before the first page, is on none of them. When the mirror holds it
 * already (an incremental run's first page has no bound; a write-through), a scan must not count it
 * missed, nor verify call it extra. The simulator's clock stands still here, so every scan falls in
 * the record's second, whatever this machine's speed.
 */
import { expect, it } from 'vitest';
import { verifyStream } from '../../src/sync/mirror-verify.ts';
import { syncFixtures } from '../helpers.ts';

const fixtures = syncFixtures();

it('a record created in the second a scan\'s bound begins, and mirrored before the scan, is listed by the scan\'s question about that second: two scans in that second tombstone nothing, verify finds the mirror equal', async () => {
  let serverNow = Date.parse('2026-06-01T12:00:00.000Z');
  const { sim, context } = await fixtures.start({ size: { transactions: 150 }, clock: () => serverNow });
  expect(sim.world.streamRecords('transactions').every((record) => Date.parse(record.createdAt) < serverNow)).toBe(true);
  expect((await context.engine.run('transactions', 'backfill')).status).toBe('succeeded');

  serverNow = Date.parse('2026-06-01T12:00:10.300Z');
  const created = sim.world.createTransaction({ description: 'created in the second' });
  // The incremental run lists it on its first page (no bound there): the mirror holds it.
  expect(await context.engine.run('transactions', 'sync')).toMatchObject({ status: 'succeeded', changes: 1 });
  const row = () => context.connection.get<{ deleted_at: string | null; missed_scans: number }>('SELECT deleted_at, missed_scans FROM transactions WHERE id = ?', [created.id]);
  expect(await row()).toEqual({ deleted_at: null, missed_scans: 0 });

  // Still 12:00:10: each scan's second page asks createdBefore=12:00:10.000, which leaves the record out.
  serverNow = Date.parse('2026-06-01T12:00:10.700Z');
  const boundQuestions = () => sim.requests.filter((request) => request.path.endsWith('/transactions') && new URLSearchParams(request.query).get('createdAfter') === '2026-06-01T12:00:09.999Z').length;
  const verified = await verifyStream('transactions', { client: context.client, store: context.store });
  expect(verified).toMatchObject({ status: 'equal', total: 150, extra: { count: 0 }, unconfirmed: { count: 0 }, missing: { count: 0 } });
  expect(boundQuestions()).toBe(1);
  for (const scan of [1, 2]) {
    // The second time the answer about that second serves the record failing its schema: still listed, by its id.
    if (scan === 2) sim.faults.inject({ kind: 'invalid-item', index: 0, field: 'amount', value: 'not a number', match: { path: '/transactions', query: { createdAfter: '2026-06-01T12:00:09.999Z' } } });
    expect(await context.engine.run('transactions', 'reconcile'), `reconcile ${scan}`).toMatchObject({ status: 'succeeded', tombstones: 0, changes: 0 });
    expect(await row()).toEqual({ deleted_at: null, missed_scans: 0 });
  }
  expect(boundQuestions()).toBe(3);
  expect(sim.faults.list()).toEqual([]); // the fault was served
  expect(await context.connection.all("SELECT record_id FROM changes WHERE type = 'transaction.deleted'")).toEqual([]);
  expect(await verifyStream('transactions', { client: context.client, store: context.store, repair: true })).toMatchObject({ status: 'equal', extra: { count: 0 }, repaired: { tombstones: 0 } });

  // A record deleted from the API in that second is still missed: the question lists only what the API serves.
  sim.world.deleteRecord('transactions', created.id);
  for (const scan of [1, 2]) expect((await context.engine.run('transactions', 'reconcile')).status, `reconcile after the deletion ${scan}`).toBe('succeeded');
  expect(await row()).toMatchObject({ missed_scans: 2 });
  expect((await row())!.deleted_at).not.toBeNull();
});

it('a range backfill open at its end counts no miss for a record created in its bound\'s second: two such scans leave the record live', async () => {
  let serverNow = Date.parse('2026-06-01T12:00:00.000Z');
  const { sim, context } = await fixtures.start({ size: { deals: 150 }, clock: () => serverNow });
  expect(sim.world.streamRecords('deals').every((record) => Date.parse(record.createdAt) < serverNow)).toBe(true);
  expect((await context.engine.run('deals', 'backfill')).status).toBe('succeeded');

  serverNow = Date.parse('2026-06-01T12:00:10.300Z');
  const created = sim.world.createDeal({ title: 'created in the second' });
  expect(await context.engine.run('deals', 'sync')).toMatchObject({ status: 'succeeded', changes: 1 });
  const row = () => context.connection.get<{ deleted_at: string | null; missed_scans: number }>('SELECT deleted_at, missed_scans FROM deals WHERE id = ?', [created.id]);

  serverNow = Date.parse('2026-06-01T12:00:10.700Z');
  const range = { after: '2000-01-01T00:00:00.000Z' };
  for (const scan of [1, 2]) {
    expect(await context.engine.run('deals', 'backfill', { createdRange: range }), `range backfill ${scan}`).toMatchObject({ status: 'succeeded', tombstones: 0, scan: { outcome: 'complete' } });
    expect(await row()).toEqual({ deleted_at: null, missed_scans: 0 });
  }
  expect(await context.connection.all("SELECT record_id FROM changes WHERE type = 'deal.deleted'")).toEqual([]);
});

it('an item failing its schema, created in the second a scan\'s bound begins and quarantined before the scan, stays quarantined: no release, no second record.rejected', async () => {
  let serverNow = Date.parse('2026-06-01T12:00:00.000Z');
  const { sim, context } = await fixtures.start({ size: { transactions: 150 }, clock: () => serverNow });
  expect((await context.engine.run('transactions', 'backfill')).status).toBe('succeeded');

  serverNow = Date.parse('2026-06-01T12:00:10.300Z');
  const invalid = sim.world.createTransaction({ status: 'NOT_A_STATUS' as never });
  expect(await context.engine.run('transactions', 'sync')).toMatchObject({ status: 'succeeded', rejected: 1 });
  const quarantined = () => context.connection.all<{ record_key: string }>("SELECT record_key FROM rejected_records WHERE stream = 'transactions'");
  const rejectedEvents = () => context.connection.all<{ record_id: string }>("SELECT record_id FROM changes WHERE type = 'record.rejected'");
  expect(await quarantined()).toEqual([{ record_key: invalid.id }]);
  expect(await rejectedEvents()).toEqual([{ record_id: invalid.id }]);

  serverNow = Date.parse('2026-06-01T12:00:10.700Z');
  for (const scan of [1, 2]) {
    expect((await context.engine.run('transactions', 'reconcile')).status, `reconcile ${scan}`).toBe('succeeded');
    expect(await quarantined(), `reconcile ${scan}`).toEqual([{ record_key: invalid.id }]);
  }
  // The next incremental run lists it again: still the one event.
  expect((await context.engine.run('transactions', 'sync')).status).toBe('succeeded');
  expect(await rejectedEvents()).toEqual([{ record_id: invalid.id }]);
});

it('a scan beginning on a table that holds no record, only quarantined items, still asks about its bound\'s second: an item quarantined in that second stays quarantined', async () => {
  let serverNow = Date.parse('2026-06-01T12:00:00.000Z');
  const { sim, context } = await fixtures.start({ size: { transactions: 0 }, clock: () => serverNow });
  expect((await context.engine.run('transactions', 'backfill')).status).toBe('succeeded');
  serverNow = Date.parse('2026-06-01T12:00:10.300Z');
  // A list of one item, failing its schema: the run quarantines it, the table holds no record.
  const invalid = sim.world.createTransaction({ status: 'NOT_A_STATUS' as never });
  expect(await context.engine.run('transactions', 'sync')).toMatchObject({ status: 'succeeded', rejected: 1 });
  const quarantined = async () => (await context.connection.all<{ record_key: string }>("SELECT record_key FROM rejected_records WHERE stream = 'transactions'")).map((row) => row.record_key);
  expect(await context.connection.all('SELECT id FROM transactions')).toEqual([]);
  expect(await quarantined()).toEqual([invalid.id]);
  // Records the API shows created before that second, which no run has listed yet: the scan needs a second page.
  serverNow = Date.parse('2026-06-01T12:00:05.000Z');
  for (let i = 0; i < 150; i += 1) sim.world.createTransaction({ description: `earlier ${i}` });

  serverNow = Date.parse('2026-06-01T12:00:10.700Z');
  const boundQuestions = () => sim.requests.filter((request) => request.path.endsWith('/transactions') && new URLSearchParams(request.query).get('createdAfter') === '2026-06-01T12:00:09.999Z').length;
  expect(await context.engine.run('transactions', 'reconcile')).toMatchObject({ status: 'succeeded', changes: 150 });
  expect(await quarantined()).toEqual([invalid.id]);
  expect(boundQuestions()).toBe(1);
});
