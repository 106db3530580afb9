import { afterEach, describe, expect, it } from 'vitest';
import { openMirror, SCHEMA_VERSION, type MirrorDatabase } from '../../src/mirror/database.ts';
import { sqliteConnection } from '../../src/mirror/sql/sqlite.ts';
import { MirrorStore } from '../../src/mirror/mirror-store.ts';
import { timeOrderedUuid } from '../../src/mirror/time-ordered-uuid.ts';
import { dealsStream, transactionsStream } from '../../src/streams/definitions.ts';
import { tempDir, type TempDir } from '../helpers.ts';

let dir: TempDir | undefined;
let db: MirrorDatabase | undefined;
afterEach(async () => {
  if (db) await sqliteConnection(db).close();
  dir?.remove();
  db = dir = undefined;
});

function store(): MirrorStore {
  dir = tempDir();
  db = openMirror(dir.file('mirror.db'));
  return new MirrorStore(sqliteConnection(db));
}

const listed = { id: 'txn_1', type: 'EXPENSE', status: 'PENDING', amount: -1250, description: 'Paper', date: '2026-11-20' };

describe('the mirror store', () => {
  it('is in WAL mode at the latest schema version', async () => {
    store();
    expect(db!.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db!.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
  });

  it('checkpoints its WAL every 10,000 pages, not every 1,000 (fewer write-backs during a backfill)', async () => {
    store();
    expect(db!.pragma('wal_autocheckpoint', { simple: true })).toBe(10_000);
  });

  it('suppresses no-ops: reordered keys are not a change; a field new to the stream is announced once, not as an update of the record', async () => {
    const s = store();
    expect((await s.applyRecords(transactionsStream, [listed])).map((c) => c.type)).toEqual(['transaction.created']);
    const reordered = { date: listed.date, description: listed.description, amount: listed.amount, status: listed.status, type: listed.type, id: listed.id };
    expect(await s.applyRecords(transactionsStream, [reordered])).toEqual([]);
    expect((await s.applyRecords(transactionsStream, [{ ...reordered, newField: 'x' }])).map((c) => [c.type, c.recordId])).toEqual([['schema.field_added', 'newField']]);
    expect(await s.applyRecords(transactionsStream, [{ ...listed, newField: 'x' }])).toEqual([]);
    // Known now: a change of it alone is an update of the record, and so is a record gaining it.
    expect((await s.applyRecords(transactionsStream, [{ ...listed, newField: 'y' }])).map((c) => c.type)).toEqual(['transaction.updated']);
    await s.applyRecords(transactionsStream, [{ ...listed, id: 'txn_2' }]);
    const [gained] = await s.applyRecords(transactionsStream, [{ ...listed, id: 'txn_2', newField: 'z' }]);
    expect(gained).toMatchObject({ type: 'transaction.updated', recordId: 'txn_2' });
    expect((await s.applyRecords(transactionsStream, [{ ...listed, newField: 'y', status: 'CONFIRMED' }])).map((c) => c.type)).toEqual(['transaction.confirmed']);
  });

  it('keeps what a write response added when a later list page does not carry it', async () => {
    const s = store();
    await s.applyRecords(transactionsStream, [{ ...listed, counterpartyName: 'Acme', irsCategory: 'SUPPLIES', createdAt: '2026-11-20T10:00:00.000Z', updatedAt: '2026-11-20T10:00:00.000Z' }]);
    expect(await s.applyRecords(transactionsStream, [listed])).toEqual([]);
    await s.applyRecords(transactionsStream, [{ ...listed, status: 'VOIDED' }]);
    expect(db!.prepare('SELECT status, counterparty_name, irs_category FROM transactions WHERE id = ?').get('txn_1')).toEqual({
      status: 'VOIDED',
      counterparty_name: 'Acme',
      irs_category: 'SUPPLIES',
    });
  });

  it('records old and new values of each changed field, and clears a field the API now sends as null', async () => {
    const s = store();
    const deal = {
      id: 'deal_1', referenceId: 7, locationId: 'loc_1', pipelineId: 'pip_1', stageId: 'stg_1', accountId: 'acc_1', ownerId: 'emp_1', title: 'Fit-out',
      value: 500000, currency: 'USD', status: 'WON', probability: 100, expectedCloseDate: '2026-12-01T00:00:00.000Z', sortOrder: 1,
      wonLostReason: 'signed', closedAt: '2026-11-20T00:00:00.000Z', stageMovedAt: '2026-11-01T00:00:00.000Z', createdAt: '2026-10-01T00:00:00.000Z', updatedAt: '2026-11-20T00:00:00.000Z',
    };
    await s.applyRecords(dealsStream, [deal]);
    const [reopened] = await s.applyRecords(dealsStream, [{ ...deal, status: 'OPEN', wonLostReason: null, closedAt: null, updatedAt: '2026-11-21T00:00:00.000Z' }]);
    expect(reopened!.type).toBe('deal.reopened');
    const data = JSON.parse((db!.prepare('SELECT data FROM changes WHERE seq = ?').get(reopened!.seq) as { data: string }).data);
    expect(data.changes).toEqual({
      status: { old: 'WON', new: 'OPEN' },
      wonLostReason: { old: 'signed', new: null },
      closedAt: { old: '2026-11-20T00:00:00.000Z', new: null },
      updatedAt: { old: '2026-11-20T00:00:00.000Z', new: '2026-11-21T00:00:00.000Z' },
    });
    expect(db!.prepare('SELECT won_lost_reason, closed_at FROM deals').get()).toEqual({ won_lost_reason: null, closed_at: null });
  });

  it('tombstones only after two consecutive complete scans miss a record, and a record listed again comes back', async () => {
    const s = store();
    const started = new Date(Date.now() + 1000).toISOString();
    await s.applyRecords(transactionsStream, [listed, { ...listed, id: 'txn_2' }], { scanNumber: 1 });
    await s.applyRecords(transactionsStream, [listed], { scanNumber: 2 });
    expect(await s.recordMisses(transactionsStream, 2, started)).toEqual([]);
    await s.applyRecords(transactionsStream, [listed], { scanNumber: 3 });
    expect((await s.recordMisses(transactionsStream, 3, started)).map((c) => [c.type, c.recordId])).toEqual([['transaction.deleted', 'txn_2']]);
    expect(await s.countRecords(transactionsStream)).toEqual({ live: 1, deleted: 1 });
    expect((await s.applyRecords(transactionsStream, [{ ...listed, id: 'txn_2' }])).map((c) => c.type)).toEqual(['transaction.created']);
    expect(await s.countRecords(transactionsStream)).toEqual({ live: 2, deleted: 0 });
  });

  it('detects created, updated and unchanged records per page, also when one page lists an id twice', async () => {
    const s = store();
    const second = { ...listed, id: 'txn_2' };
    // The same record twice in one page (a tie listed on both sides of a page edge): one event.
    expect((await s.applyRecords(transactionsStream, [listed, second, listed], { scanNumber: 1 })).map((c) => [c.type, c.recordId])).toEqual([
      ['transaction.created', 'txn_1'],
      ['transaction.created', 'txn_2'],
    ]);
    // A changed copy later in the same page is a second version in one scan: not applied.
    const confirmed = { ...second, status: 'CONFIRMED' };
    const secondVersions: string[] = [];
    const changes = await s.applyRecords(transactionsStream, [second, { ...listed, id: 'txn_3' }, confirmed], { scanNumber: 2, secondVersions });
    expect(changes.map((c) => [c.type, c.recordId])).toEqual([['transaction.created', 'txn_3']]);
    expect(secondVersions).toEqual(['txn_2']);
    // The next scan applies it.
    const next = await s.applyRecords(transactionsStream, [confirmed], { scanNumber: 3 });
    expect(next.map((c) => [c.type, c.recordId])).toEqual([['transaction.confirmed', 'txn_2']]);
    const data = JSON.parse((db!.prepare('SELECT data FROM changes WHERE seq = ?').get(next[0]!.seq) as { data: string }).data);
    expect(data.changes).toEqual({ status: { old: 'PENDING', new: 'CONFIRMED' } });
    // Unchanged records are marked seen by the scan that listed them, without an event.
    expect(await s.applyRecords(transactionsStream, [listed, confirmed], { scanNumber: 4 })).toEqual([]);
    expect(db!.prepare('SELECT id, last_seen_scan, missed_scans FROM transactions ORDER BY id').all()).toEqual([
      { id: 'txn_1', last_seen_scan: 4, missed_scans: 0 },
      { id: 'txn_2', last_seen_scan: 4, missed_scans: 0 },
      { id: 'txn_3', last_seen_scan: 2, missed_scans: 0 },
    ]);
    expect(db!.prepare('SELECT COUNT(*) AS n FROM changes').get()).toEqual({ n: 4 });
  });

  it('gives each change a UUID v7 event id that sorts by time', async () => {
    const earlier = timeOrderedUuid(Date.parse('2026-01-01T00:00:00Z'));
    const later = timeOrderedUuid(Date.parse('2026-01-01T00:00:00.001Z'));
    expect(earlier).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(earlier < later).toBe(true);
    const s = store();
    const [change] = await s.applyRecords(transactionsStream, [listed]);
    expect(change!.eventId).toMatch(/^evt_[0-9a-f-]{36}$/);
  });
});
