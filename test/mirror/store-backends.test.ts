/**
 * The mirror store's page commit on both back ends (test/sql-backends.ts): one page mixing new,
 * changed, unchanged and tombstoned-then-relisted records, written in a constant number of
 * statements whatever the page's size, with only the columns each record carries.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { openMirrorConnection } from '../../src/mirror/open.ts';
import type { SqlConnection, SqlExecutor, SqlValue, SqlWriterNow } from '../../src/mirror/sql/executor.ts';
import { foundNoneStored, heldKeyConflict, MirrorStore, type StoredStates } from '../../src/mirror/mirror-store.ts';
import { transactionsStream } from '../../src/streams/definitions.ts';
import { BACKENDS, removeTestMirrors } from '../sql-backends.ts';

const opened: SqlConnection[] = [];
afterEach(async () => {
  for (const connection of opened.splice(0)) await connection.close();
  await removeTestMirrors();
});

const listed = { id: 'txn_1', type: 'EXPENSE', status: 'PENDING', amount: -1250, description: 'Paper', date: '2026-11-20' };

/** An executor passing every statement to `inner`, counting them (a transaction's too). */
class CountingExecutor implements SqlExecutor {
  statements = 0;
  readonly #inner: SqlExecutor;
  readonly #counter: { statements: number };

  constructor(inner: SqlExecutor, counter?: { statements: number }) {
    this.#inner = inner;
    this.#counter = counter ?? this;
  }
  get dialect() {
    return this.#inner.dialect;
  }
  get inTransaction() {
    return this.#inner.inTransaction;
  }
  run(sql: string, parameters?: readonly SqlValue[]) {
    this.#counter.statements += 1;
    return this.#inner.run(sql, parameters);
  }
  get<Row>(sql: string, parameters?: readonly SqlValue[]) {
    this.#counter.statements += 1;
    return this.#inner.get<Row>(sql, parameters);
  }
  all<Row>(sql: string, parameters?: readonly SqlValue[]) {
    this.#counter.statements += 1;
    return this.#inner.all<Row>(sql, parameters);
  }
  exec(sql: string) {
    this.#counter.statements += 1;
    return this.#inner.exec(sql);
  }
  runAtCommit(sql: string, parameters?: readonly SqlValue[]) {
    this.#counter.statements += 1;
    return this.#inner.runAtCommit(sql, parameters);
  }
  allAtCommit<Row>(sql: string, parameters: readonly SqlValue[], onRows: (rows: Row[]) => void) {
    this.#counter.statements += 1;
    return this.#inner.allAtCommit<Row>(sql, parameters, onRows);
  }
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return this.#inner.transaction((tx) => fn(new CountingExecutor(tx, this.#counter)));
  }
  /** Not a statement of its own: PostgreSQL sends it with the COMMIT. */
  changesAppended() {
    return this.#inner.changesAppended();
  }
  /** A SQLite transaction's synchronous statements, counted as well. */
  get writeNow(): SqlWriterNow | undefined {
    const inner = this.#inner.writeNow;
    if (inner === undefined) return undefined;
    const counter = this.#counter;
    return {
      runNow: (sql, parameters) => ((counter.statements += 1), inner.runNow(sql, parameters)),
      getNow: (sql, parameters) => ((counter.statements += 1), inner.getNow(sql, parameters)),
      allNow: (sql, parameters) => ((counter.statements += 1), inner.allNow(sql, parameters)),
      statementNow: (sql) => {
        const statement = inner.statementNow(sql);
        return { run: (parameters) => ((counter.statements += 1), statement.run(parameters)) };
      },
    };
  }
}

describe.each(BACKENDS)('the mirror store on $name', (backend) => {
  let connection: SqlConnection;
  async function open(): Promise<MirrorStore> {
    connection = await openMirrorConnection(await backend.location(), { streams: [transactionsStream] });
    opened.push(connection);
    return new MirrorStore(connection);
  }

  it('commits a page of new, changed, unchanged and relisted records, keeping the columns a record does not carry', async () => {
    const store = await open();
    const started = new Date(Date.now() + 1000).toISOString();
    const gone = { ...listed, id: 'txn_gone', description: 'Gone' };
    const written = { ...listed, id: 'txn_written', counterpartyName: 'Acme', irsCategory: 'SUPPLIES' };
    await store.applyRecords(transactionsStream, [listed, gone, written], { scanNumber: 1 });
    // Two complete scans miss txn_gone: tombstoned.
    await store.applyRecords(transactionsStream, [listed, written], { scanNumber: 2 });
    await store.recordMisses(transactionsStream, 2, started);
    await store.applyRecords(transactionsStream, [listed, written], { scanNumber: 3 });
    expect((await store.recordMisses(transactionsStream, 3, started)).map((change) => change.recordId)).toEqual(['txn_gone']);

    // One page: unchanged, changed without the write's fields, relisted, new.
    const changed = { ...listed, id: 'txn_written', status: 'CONFIRMED' };
    const fresh = { ...listed, id: 'txn_new', amount: -99 };
    const appended = await store.applyRecords(transactionsStream, [listed, changed, gone, fresh], { scanNumber: 4 });
    expect(appended.map((change) => [change.type, change.recordId])).toEqual([
      ['transaction.confirmed', 'txn_written'],
      ['transaction.created', 'txn_gone'],
      ['transaction.created', 'txn_new'],
    ]);
    expect(appended.map((change) => change.seq)).toEqual([...appended.map((change) => change.seq)].sort((a, b) => a - b));
    // Each appended change carries the seq its row holds.
    for (const change of appended) {
      expect(await connection.get('SELECT event_id, record_id FROM changes WHERE seq = ?', [change.seq])).toEqual({ event_id: change.eventId, record_id: change.recordId });
    }
    const rows = await connection.all(
      'SELECT id, status, amount, counterparty_name, irs_category, deleted_at, missed_scans, last_seen_scan FROM transactions ORDER BY id',
    );
    expect(rows).toEqual([
      { id: 'txn_1', status: 'PENDING', amount: -1250, counterparty_name: null, irs_category: null, deleted_at: null, missed_scans: 0, last_seen_scan: 4 },
      { id: 'txn_gone', status: 'PENDING', amount: -1250, counterparty_name: null, irs_category: null, deleted_at: null, missed_scans: 0, last_seen_scan: 4 },
      { id: 'txn_new', status: 'PENDING', amount: -99, counterparty_name: null, irs_category: null, deleted_at: null, missed_scans: 0, last_seen_scan: 4 },
      { id: 'txn_written', status: 'CONFIRMED', amount: -1250, counterparty_name: 'Acme', irs_category: 'SUPPLIES', deleted_at: null, missed_scans: 0, last_seen_scan: 4 },
    ]);
    const data = await connection.get<{ data: string }>('SELECT data FROM changes WHERE seq = ?', [appended[0]!.seq]);
    expect(JSON.parse(data!.data).changes).toEqual({ status: { old: 'PENDING', new: 'CONFIRMED' } });
    // A record written without a scan keeps the scan that last listed it; first_seen_at never moves.
    const firstSeen = await connection.get<{ first_seen_at: string }>('SELECT first_seen_at FROM transactions WHERE id = ?', ['txn_written']);
    await store.applyRecords(transactionsStream, [{ ...changed, amount: -1 }]);
    expect(await connection.get('SELECT first_seen_at, last_seen_scan, amount FROM transactions WHERE id = ?', ['txn_written'])).toEqual({
      first_seen_at: firstSeen!.first_seen_at,
      last_seen_scan: 4,
      amount: -1,
    });
  });

  it('tombstones every record two complete scans missed, with one change each in key order', async () => {
    const store = await open();
    const started = new Date(Date.now() + 1000).toISOString();
    const ids = ['txn_c', 'txn_a', 'txn_kept', 'txn_b'];
    await store.applyRecords(transactionsStream, ids.map((id) => ({ ...listed, id })), { scanNumber: 1 });
    for (const scan of [2, 3]) {
      await store.applyRecords(transactionsStream, [{ ...listed, id: 'txn_kept' }], { scanNumber: scan });
      const gone = await store.recordMisses(transactionsStream, scan, started, '2026-11-23T00:00:00.000Z');
      expect(gone.map((change) => [change.type, change.recordId])).toEqual(scan === 2 ? [] : [['transaction.deleted', 'txn_a'], ['transaction.deleted', 'txn_b'], ['transaction.deleted', 'txn_c']]);
    }
    expect(await connection.all('SELECT id, deleted_at FROM transactions ORDER BY id')).toEqual([
      { id: 'txn_a', deleted_at: '2026-11-23T00:00:00.000Z' },
      { id: 'txn_b', deleted_at: '2026-11-23T00:00:00.000Z' },
      { id: 'txn_c', deleted_at: '2026-11-23T00:00:00.000Z' },
      { id: 'txn_kept', deleted_at: null },
    ]);
  });

  it('one version per record per scan: a second copy with other content, in the page or on a later page of the scan, is not applied; the first version stands', async () => {
    const store = await open();
    const withWrite = { ...listed, counterpartyName: 'Acme' };
    const secondVersions: string[] = [];
    const appended = await store.applyRecords(transactionsStream, [withWrite, { ...listed, id: 'txn_2' }, { ...listed, status: 'CONFIRMED' }, withWrite], { scanNumber: 1, secondVersions });
    expect(appended.map((change) => [change.type, change.recordId])).toEqual([
      ['transaction.created', 'txn_1'],
      ['transaction.created', 'txn_2'],
    ]);
    expect(secondVersions).toEqual(['txn_1']);
    expect(await connection.get('SELECT status, counterparty_name FROM transactions WHERE id = ?', ['txn_1'])).toEqual({ status: 'PENDING', counterparty_name: 'Acme' });
    // A later page of the same scan: still the first version; the next scan applies the new one.
    expect(await store.applyRecords(transactionsStream, [{ ...listed, status: 'VOIDED' }], { scanNumber: 1 })).toEqual([]);
    expect((await store.applyRecords(transactionsStream, [{ ...listed, status: 'VOIDED' }], { scanNumber: 2 })).map((change) => change.type)).toEqual(['transaction.voided']);
    // Without seen marks (an incremental run), the caller says what the run listed before.
    expect(await store.applyRecords(transactionsStream, [{ ...listed, status: 'CONFIRMED' }], { listedBefore: (id) => id === 'txn_1' })).toEqual([]);
    expect(await connection.get('SELECT COUNT(*) AS n FROM changes')).toEqual({ n: 3 });
  });

  it('a page whose stored states are assumed none is written without asking them on PostgreSQL, and fails whole when the table holds one of its ids; SQLite ignores the assumption', async () => {
    await open();
    const counting = new CountingExecutor(connection);
    const store = new MirrorStore(counting);
    await store.applyRecords(transactionsStream, [listed], { scanNumber: 1 });
    const commit = async (ids: string[], assumeNone: boolean) => {
      const records = ids.map((id) => ({ ...listed, id }));
      counting.statements = 0;
      let asked: StoredStates | undefined;
      const appended = await store.transaction(async (tx) => {
        asked = tx.askStoredStates(transactionsStream, records, { assumeNone });
        return tx.applyRecords(transactionsStream, records, { scanNumber: 2, storedStates: asked });
      });
      return { changes: appended.map((change) => [change.type, change.recordId]), statements: counting.statements, foundNone: await foundNoneStored(asked!) };
    };
    const postgres = backend.name === 'postgres';
    const asking = await commit(['txn_a', 'txn_b'], false);
    expect(asking.changes).toEqual([
      ['transaction.created', 'txn_a'],
      ['transaction.created', 'txn_b'],
    ]);
    // None held: the next page may be assumed new (PostgreSQL; SQLite asks nothing up front).
    expect(asking.foundNone).toBe(postgres);
    const assumed = await commit(['txn_c', 'txn_d'], true);
    expect(assumed.changes).toEqual([
      ['transaction.created', 'txn_c'],
      ['transaction.created', 'txn_d'],
    ]);
    expect(assumed.foundNone).toBe(postgres);
    // PostgreSQL: no SELECT of the stored states.
    expect(assumed.statements).toBe(asking.statements - (postgres ? 1 : 0));
    const before = await connection.all('SELECT id, last_seen_scan FROM transactions ORDER BY id');
    const changesBefore = await connection.get('SELECT COUNT(*) AS n FROM changes');
    if (postgres) {
      // txn_1 is held: the key refuses the page, and nothing of it stays.
      const refused: unknown = await commit(['txn_e', 'txn_1'], true).catch((error: unknown) => error);
      expect(heldKeyConflict(refused, transactionsStream)).toBe(true);
      expect(await connection.all('SELECT id, last_seen_scan FROM transactions ORDER BY id')).toEqual(before);
      expect(await connection.get('SELECT COUNT(*) AS n FROM changes')).toEqual(changesBefore);
    }
    // Asked (SQLite: whatever assumed): the new record created, the held unchanged one only marked seen.
    const again = await commit(['txn_e', 'txn_1'], !postgres);
    expect(again.changes).toEqual([['transaction.created', 'txn_e']]);
    expect(again.foundNone).toBe(false);
    expect(await connection.get('SELECT last_seen_scan FROM transactions WHERE id = ?', ['txn_1'])).toEqual({ last_seen_scan: 2 });
    expect(heldKeyConflict(new Error('duplicate key'), transactionsStream)).toBe(false);
  });

  it('gives each appended change the seq its row holds, whether the seqs the page took are consecutive or not', async () => {
    const store = await open();
    const page = (from: number) => Array.from({ length: 5 }, (_, index) => ({ ...listed, id: `txn_${from + index}` }));
    const expectSeqsOfRows = async (appended: Awaited<ReturnType<MirrorStore['applyRecords']>>) => {
      expect(appended.map((change) => change.seq)).toEqual([...appended.map((change) => change.seq)].sort((a, b) => a - b));
      for (const change of appended) {
        expect(await connection.get('SELECT event_id, record_id FROM changes WHERE seq = ?', [change.seq])).toEqual({ event_id: change.eventId, record_id: change.recordId });
      }
    };
    const consecutive = await store.transaction((tx) => tx.applyRecords(transactionsStream, page(0), { seqsAtCommit: true }));
    expect(consecutive.map((change) => change.seq - consecutive[0]!.seq)).toEqual([0, 1, 2, 3, 4]);
    await expectSeqsOfRows(consecutive);
    // Gaps between the seqs (on PostgreSQL an identity stepping by 3; SQLite's rowids have none to make).
    if (backend.name === 'postgres') await connection.exec('ALTER TABLE changes ALTER COLUMN seq SET INCREMENT BY 3');
    const spaced = await store.transaction((tx) => tx.applyRecords(transactionsStream, page(10), { seqsAtCommit: true }));
    await expectSeqsOfRows(spaced);
    if (backend.name === 'postgres') expect(spaced.map((change) => change.seq - spaced[0]!.seq)).toEqual([0, 3, 6, 9, 12]);
  });

  it('writes a page in the same number of statements whatever its size on PostgreSQL, two more per record on SQLite (new records, then changed ones)', async () => {
    await open();
    const counting = new CountingExecutor(connection);
    const store = new MirrorStore(counting);
    const page = (size: number, from: number, status: string) =>
      Array.from({ length: size }, (_, index) => ({ ...listed, id: `txn_${from + index}`, status }));
    const statementsFor = async (records: ReturnType<typeof page>, scanNumber = 1) => {
      counting.statements = 0;
      await store.transaction(async (tx) => {
        await tx.applyRecords(transactionsStream, records, { scanNumber });
        await tx.saveRun('transactions', { mode: 'complete', reason: 'backfill', startedAt: '', offset: 0, pages: 1, records: records.length, changes: records.length });
      });
      return counting.statements;
    };
    // PostgreSQL: one multi-row upsert and one change-row INSERT per page; SQLite: the prepared upsert
    // and the prepared change-row INSERT per record (no round trips to save).
    const perRecord = backend.name === 'sqlite' ? 2 : 0;
    const small = await statementsFor(page(3, 0, 'PENDING'));
    expect(await statementsFor(page(300, 1000, 'PENDING'))).toBe(small + 297 * perRecord);
    // Changed by the next scan (one version per record per scan).
    const changedSmall = await statementsFor(page(3, 0, 'CONFIRMED'), 2);
    expect(await statementsFor(page(300, 1000, 'CONFIRMED'), 2)).toBe(changedSmall + 297 * perRecord);
    expect(await connection.get("SELECT COUNT(*) AS n FROM transactions WHERE status = 'CONFIRMED'")).toEqual({ n: 303 });
    expect(await connection.get('SELECT COUNT(*) AS n FROM changes')).toEqual({ n: 606 });
  });
});
