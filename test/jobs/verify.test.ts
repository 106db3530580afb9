/**
 * `verifyJob` (docs/sync.md "Verify") against the simulator over real HTTP and a real mirror: an
 * equal mirror, a record edited in the mirror (stale, the field named), one deleted from it
 * (missing), a row the API never listed (extra), each counted; --repair applies them with their
 * change events and a second verify finds the mirror equal; nothing is written without --repair.
 */
import { describe, expect, it } from 'vitest';
import { verifyJob } from '../../jobs/verify.ts';
import { verifyStream } from '../../src/sync/mirror-verify.ts';
import { STREAM_LIST, STREAM_NAMES, STREAMS } from '../../src/streams/definitions.ts';
import { createdEvent, listRequests, syncFixtures } from '../helpers.ts';

const fixtures = syncFixtures();

/** A fixture with transactions and deals backfilled. */
async function mirrored() {
  const fixture = await fixtures.start({ size: { transactions: 250, deals: 40, onboardings: 5 } });
  for (const stream of ['transactions', 'deals'] as const) expect((await fixture.context.engine.run(stream, 'backfill')).status).toBe('succeeded');
  return fixture;
}

/**
 * Copies the row `fromId` of `table` as a row of id `newId` (its raw's id too): a record the API never
 * listed. `missedScans` 1 (default): the last complete scan missed it too, so a scan that does not
 * list it confirms it gone by the two-scan rule even where the list's total is below the mirror's
 * live rows; 0: a record the last complete scan listed.
 */
async function copyRow(connection: Awaited<ReturnType<typeof mirrored>>['context']['connection'], table: string, fromId: string, newId: string, missedScans = 1): Promise<void> {
  const row = (await connection.get<Record<string, string | number | null>>(`SELECT * FROM ${table} WHERE id = ?`, [fromId]))!;
  const copy = { ...row, id: newId, raw: JSON.stringify({ ...JSON.parse(String(row.raw)), id: newId }), first_seen_at: '2020-01-01T00:00:00.000Z', missed_scans: missedScans };
  const columns = Object.keys(copy);
  await connection.run(`INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`, Object.values(copy));
}

/** What the mirror holds, to show a read-only verify changed nothing. */
async function snapshot(connection: Awaited<ReturnType<typeof mirrored>>['context']['connection']) {
  return {
    transactions: await connection.all('SELECT * FROM transactions ORDER BY id'),
    changes: await connection.all('SELECT seq FROM changes ORDER BY seq'),
    state: await connection.all('SELECT * FROM sync_state ORDER BY stream'),
    scratch: await connection.all('SELECT * FROM verify_listed'),
  };
}

describe('verify', () => {
  it('an equal mirror: every stream equal, each scanned with its minimum pages, nothing written', async () => {
    const { sim, context } = await mirrored();
    const before = await snapshot(context.connection);
    const requestsBefore = listRequests(sim, '/transactions').length;
    const results = await verifyJob(context.config, ['transactions', 'deals'], { rateBudget: 'local' });
    expect(results.map((result) => [result.stream, result.status, result.listed, result.missing.count, result.extra?.count, result.stale.count])).toEqual([
      ['transactions', 'equal', 250, 0, 0, 0],
      ['deals', 'equal', 40, 0, 0, 0],
    ]);
    expect(listRequests(sim, '/transactions').length - requestsBefore).toBe(3);
    expect(await snapshot(context.connection)).toEqual(before);
  });

  it('a record edited, one deleted and one extra in the mirror: stale (field named), missing and extra counted; nothing written', async () => {
    const { sim, context } = await mirrored();
    const truth = sim.world.groundTruth('transactions') as { id: string; amount: number; description: string }[];
    const edited = truth[10]!;
    const gone = truth[120]!;
    // Edited in place (raw and the typed column), its content hash left as it was.
    const raw = JSON.parse((await context.connection.get<{ raw: string }>('SELECT raw FROM transactions WHERE id = ?', [edited.id]))!.raw);
    await context.connection.run('UPDATE transactions SET raw = ?, amount = ? WHERE id = ?', [JSON.stringify({ ...raw, amount: edited.amount + 1 }), edited.amount + 1, edited.id]);
    // A typed column alone edited on another record.
    await context.connection.run('UPDATE transactions SET description = ? WHERE id = ?', ['tampered', truth[200]!.id]);
    await context.connection.run('DELETE FROM transactions WHERE id = ?', [gone.id]);
    await copyRow(context.connection, 'transactions', truth[5]!.id, 'txn_not_in_the_api');
    const before = await snapshot(context.connection);
    const [result] = await verifyJob(context.config, ['transactions'], { rateBudget: 'local' });
    expect(result!.status).toBe('drift');
    expect(result!.missing).toEqual({ count: 1, ids: [gone.id] });
    expect(result!.extra).toEqual({ count: 1, ids: ['txn_not_in_the_api'] });
    expect(result!.stale.count).toBe(2);
    expect(result!.stale.fields).toEqual({ amount: 1, description: 1 });
    expect(result!.stale.records).toEqual(expect.arrayContaining([{ id: edited.id, fields: ['amount'] }, { id: truth[200]!.id, fields: ['description'] }]));
    expect(await snapshot(context.connection)).toEqual(before);
  });

  it('--repair applies the differences with their change events; a second verify finds the mirror equal', async () => {
    const { sim, context } = await mirrored();
    const truth = sim.world.groundTruth('deals') as { id: string; title: string }[];
    const edited = truth[3]!;
    const gone = truth[30]!;
    const raw = JSON.parse((await context.connection.get<{ raw: string }>('SELECT raw FROM deals WHERE id = ?', [edited.id]))!.raw);
    await context.connection.run('UPDATE deals SET raw = ?, title = ? WHERE id = ?', [JSON.stringify({ ...raw, title: 'stale title' }), 'stale title', edited.id]);
    await context.connection.run('UPDATE deals SET deleted_at = ? WHERE id = ?', ['2020-01-01T00:00:00.000Z', gone.id]);
    await copyRow(context.connection, 'deals', truth[5]!.id, 'deal_not_in_the_api');
    const seq = await context.store.lastSeq();
    const [repaired] = await verifyJob(context.config, ['deals'], { rateBudget: 'local', repair: true });
    expect([repaired!.status, repaired!.missing.count, repaired!.extra?.count, repaired!.stale.count]).toEqual(['drift', 1, 1, 1]);
    expect(repaired!.repaired).toEqual({ changes: 3, tombstones: 1, held: 0, missesCounted: 0 });
    const changes = await context.connection.all<{ type: string; record_id: string; data: string }>('SELECT type, record_id, data FROM changes WHERE seq > ? ORDER BY seq', [seq]);
    const deals = STREAMS.deals;
    expect(changes.map(({ type, record_id }) => ({ type, record_id })).sort((a, b) => a.record_id.localeCompare(b.record_id))).toEqual(
      [
        { type: createdEvent('deals', gone), record_id: gone.id },
        { type: expect.any(String), record_id: edited.id },
        { type: deals.changes.gone, record_id: 'deal_not_in_the_api' },
      ].sort((a, b) => a.record_id.localeCompare(b.record_id)),
    );
    const update = changes.find((change) => change.record_id === edited.id)!;
    expect(JSON.parse(update.data).changes.title).toEqual({ old: 'stale title', new: edited.title });
    expect((await context.connection.get<{ title: string }>('SELECT title FROM deals WHERE id = ?', [edited.id]))!.title).toBe(edited.title);
    const [again] = await verifyJob(context.config, ['deals'], { rateBudget: 'local' });
    expect(again!.status).toBe('equal');
    expect(await context.connection.all('SELECT * FROM verify_listed')).toEqual([]);
  });

  it('--repair holds a mass deletion of extras (more than 10 and more than sync.massDeletionShare), --confirm-deletions lets it through', async () => {
    const { sim, context } = await mirrored();
    const truth = sim.world.groundTruth('deals') as { id: string }[];
    for (let index = 0; index < 12; index += 1) await copyRow(context.connection, 'deals', truth[index]!.id, `deal_extra_${index}`);
    const [held] = await verifyJob(context.config, ['deals'], { rateBudget: 'local', repair: true });
    expect(held!.extra!.count).toBe(12);
    expect(held!.repaired).toEqual({ changes: 0, tombstones: 0, held: 12, missesCounted: 0 });
    const [confirmed] = await verifyJob(context.config, ['deals'], { rateBudget: 'local', repair: true, confirmDeletions: true });
    expect(confirmed!.repaired).toEqual({ changes: 12, tombstones: 12, held: 0, missesCounted: 0 });
    expect((await verifyJob(context.config, ['deals'], { rateBudget: 'local' }))[0]!.status).toBe('equal');
  });

  it('a list cut short (hasMore false before its total): incomplete, no extra counted, nothing written', async () => {
    const { sim, context } = await mirrored();
    sim.faults.inject({ kind: 'truncate-list', atOffset: 100, times: 1_000_000, match: { path: '/transactions' } });
    const before = await snapshot(context.connection);
    const [result] = await verifyJob(context.config, ['transactions'], { rateBudget: 'local', repair: true });
    expect(result).toMatchObject({ status: 'incomplete', listed: 100, total: 250, extra: null, missing: { count: 0 }, stale: { count: 0 }, repaired: { changes: 0, tombstones: 0, missesCounted: 0 } });
    // The 150 records it did not reach are not tombstoned by the repair.
    expect((await snapshot(context.connection)).transactions).toEqual(before.transactions);
  });

  it('a list capped at 380 of 400 (hasMore false, total 380): --repair tombstones no live record; the 20 it did not list are unconfirmed, each with a miss counted, extras only when a second complete scan misses them too', async () => {
    const { sim, context } = await fixtures.start({ size: { transactions: 400, deals: 5, onboardings: 5 } });
    expect((await context.engine.run('transactions', 'backfill')).status).toBe('succeeded');
    sim.faults.inject({ kind: 'capped-list', cap: 380, times: 1_000_000, match: { path: '/transactions' } });
    const seq = await context.store.lastSeq();
    const [repaired] = await verifyJob(context.config, ['transactions'], { rateBudget: 'local', repair: true });
    expect(repaired).toMatchObject({ status: 'incomplete', listed: 380, total: 380, missing: { count: 0 }, stale: { count: 0 }, extra: { count: 0 }, unconfirmed: { count: 20 } });
    expect(repaired!.repaired).toEqual({ changes: 0, tombstones: 0, held: 0, missesCounted: 20 });
    expect(repaired!.error).toContain('listed 380 records (its total) while the mirror holds 400 live records of it');
    expect(await context.store.lastSeq()).toBe(seq);
    expect((await context.store.countRecords(STREAMS.transactions)).live).toBe(400);
    // A second complete scan that misses them too confirms them as the sync's two-scan rule would: extras now.
    const [second] = await verifyJob(context.config, ['transactions'], { rateBudget: 'local' });
    expect(second).toMatchObject({ status: 'drift', extra: { count: 20 }, unconfirmed: { count: 0 } });
  });

  it('every registered stream, a partitioned one included (read per value, as the sync reads it): equal after a backfill; an extra row of one partition counted', async () => {
    const { context } = await fixtures.start({ size: { transactions: 120, deals: 40, onboardings: 5 } });
    for (const stream of STREAM_NAMES) expect((await context.engine.run(stream, 'backfill')).status, stream).toBe('succeeded');
    const results = await verifyJob(context.config, STREAM_NAMES, { rateBudget: 'local' });
    expect(results.map((result) => [result.stream, result.status])).toEqual(STREAM_NAMES.map((stream) => [stream, 'equal']));
    const partitioned = STREAM_LIST.find((stream) => stream.partitions)!;
    const row = await context.connection.get<{ id: string }>(`SELECT id FROM ${partitioned.table} WHERE deleted_at IS NULL LIMIT 1`);
    expect(row, `${partitioned.name} has mirrored records`).toBeDefined();
    await copyRow(context.connection, partitioned.table, row!.id, 'extra_in_a_partition');
    const [drift] = await verifyJob(context.config, [partitioned.name], { rateBudget: 'local' });
    expect(drift).toMatchObject({ status: 'drift', extra: { count: 1, ids: ['extra_in_a_partition'] } });
  });

  it('a list read per value of a parameter (partitions): each value scanned with it, extras decided among the rows of the values read, rows of other values counted outside (exit 1), the counts added up', async () => {
    const { sim, context } = await mirrored();
    const truth = sim.world.groundTruth('deals') as { id: string; status: string }[];
    const won = truth.find((deal) => deal.status === 'WON')!;
    const lost = truth.find((deal) => deal.status === 'LOST')!;
    await copyRow(context.connection, 'deals', won.id, 'deal_extra_won');
    await copyRow(context.connection, 'deals', lost.id, 'deal_extra_lost');
    const requestsBefore = listRequests(sim, '/deals').length;
    // Read per status, LOST left out: its rows are no partition's, counted outside.
    const result = await verifyStream('deals', { client: context.client, store: context.store, partitions: { param: 'status', column: 'status', values: ['OPEN', 'WON'] } });
    const read = truth.filter((deal) => deal.status !== 'LOST').length;
    const lostRows = truth.length - read + 1;
    expect(result).toMatchObject({ status: 'drift', partitions: 2, listed: read, total: read, missing: { count: 0 }, stale: { count: 0 }, extra: { count: 1, ids: ['deal_extra_won'] } });
    expect(result.outside!.count).toBe(lostRows);
    expect(result.outside!.ids).toContain('deal_extra_lost');
    const statuses = listRequests(sim, '/deals').slice(requestsBefore).map((request) => new URLSearchParams(request.query).get('status'));
    expect(new Set(statuses)).toEqual(new Set(['OPEN', 'WON']));
    const repaired = await verifyStream('deals', { client: context.client, store: context.store, repair: true, partitions: { param: 'status', column: 'status', values: ['OPEN', 'WON'] } });
    // Rows outside every partition read are not proven gone: never tombstoned.
    expect(repaired.repaired).toEqual({ changes: 1, tombstones: 1, held: 0, missesCounted: 0 });
    expect(await context.connection.all('SELECT id FROM deals WHERE deleted_at IS NOT NULL')).toEqual([{ id: 'deal_extra_won' }]);
  });

  it("one scan: verify sends the requests a backfill sends (paging, tie re-reads of runs longer than a page, completeness), so a fix to the scan lands in both", async () => {
    const { sim, context } = await fixtures.start({ size: { transactions: 600, deals: 5, onboardings: 5 }, createdInBursts: 250, anchor: Date.UTC(2026, 0, 1) });
    const offsets = () => listRequests(sim, '/transactions').map((request) => Number(new URLSearchParams(request.query).get('offset')));
    // The same orders for the same requests in the same sequence: a fault seeded alike for each scan.
    sim.faults.inject({ kind: 'unstable-order', seed: 5, times: 1_000_000, match: { path: '/transactions' } });
    const backfill = await context.engine.run('transactions', 'backfill');
    expect(backfill.scan!.reReads).toBeGreaterThan(0);
    const backfillOffsets = offsets();
    sim.faults.clear();
    sim.faults.inject({ kind: 'unstable-order', seed: 5, times: 1_000_000, match: { path: '/transactions' } });
    const [verified] = await verifyJob(context.config, ['transactions'], { rateBudget: 'local' });
    expect(offsets().slice(backfillOffsets.length)).toEqual(backfillOffsets);
    expect(verified!.pages).toBe(backfill.pages);
    expect(verified!.status).toBe(backfill.scan!.outcome === 'complete' ? 'equal' : 'incomplete');
  });

  it('ties in a new order on every request, and records removed while it pages: the scan completes and finds no false difference', async () => {
    const { sim, context } = await fixtures.start({ size: { transactions: 500 }, createdInBursts: 8, anchor: Date.UTC(2026, 0, 1) });
    expect((await context.engine.run('transactions', 'backfill')).status).toBe('succeeded');
    sim.faults.inject({ kind: 'unstable-order', seed: 5, times: 1_000_000, match: { path: '/transactions' } });
    // After each of the first pages, a record it listed leaves the API: unread records slide below
    // the positions read (offset drift), and ties at page edges come in another order per request.
    // Records the first page lists for sure: their whole run of ties (equal createdAt) lies in its 100 positions.
    const ordered = [...sim.world.transactions].sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    const lastIndex = new Map(ordered.map((record, index) => [record.createdAt, index]));
    const alone = ordered.filter((record) => lastIndex.get(record.createdAt)! < 100);
    expect(alone.length).toBeGreaterThanOrEqual(3);
    const [result] = await verifyJob(context.config, ['transactions'], {
      rateBudget: 'local',
      onProgress: (progress) => {
        if (progress.pages <= 3) expect(sim.world.deleteRecord('transactions', alone[progress.pages - 1]!.id)).toBe(true);
      },
    });
    expect(result, JSON.stringify(result)).toMatchObject({ status: 'equal' });
    expect(result!.listed).toBeGreaterThanOrEqual(497);
    expect([result!.missing.count, result!.extra?.count, result!.stale.count]).toEqual([0, 0, 0]);
    // The faults bit: more requests than the 5 pages.
    expect(result!.pages).toBeGreaterThan(5);
  });
});
