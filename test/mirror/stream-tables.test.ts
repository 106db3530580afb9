/**
 * Stream tables derived from stream definitions (src/mirror/stream-tables.ts), checked when the
 * mirror opens: a missing table is created from its definition, an existing one must agree column
 * by column, a nullable column it lacks is added, anything else stops the open naming table and column.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openMirror, type MirrorDatabase } from '../../src/mirror/database.ts';
import { sqliteConnection } from '../../src/mirror/sql/sqlite.ts';
import { MirrorStore } from '../../src/mirror/mirror-store.ts';
import { column, defineStream, listRequest } from '../../src/streams/define-stream.ts';
import { STREAM_LIST } from '../../src/streams/definitions.ts';
import { tempDir, type TempDir } from '../helpers.ts';

let dir: TempDir | undefined;
const open: MirrorDatabase[] = [];
afterEach(() => {
  for (const db of open.splice(0)) if (db.open) db.close();
  dir?.remove();
  dir = undefined;
});

function mirrorFile(): string {
  dir = tempDir();
  return dir.file('mirror.db');
}

function opened(db: MirrorDatabase): MirrorDatabase {
  open.push(db);
  return db;
}

/** A stream the mirror has never seen, as a new stream would be defined. */
const invoicesStream = defineStream({
  name: 'invoices',
  specSection: 'not shown',
  request: listRequest('/invoices', 'invoices', { cursor: 'updatedAfter' }),
  itemSchema: z.looseObject({ id: z.string(), total: z.int(), customer: z.looseObject({ name: z.string() }) }),
  key: 'id',
  columns: [column('id', 'TEXT', { primaryKey: true }), column('total', 'INTEGER', { notNull: true }), column('customer.name', 'TEXT')],
  listedFields: ['id', 'total', 'customer.name'],
  changes: {
    events: ['invoice.created', 'invoice.updated', 'invoice.deleted'],
    classify: (previous) => (previous ? 'invoice.updated' : 'invoice.created'),
    gone: 'invoice.deleted',
  },
});

function columnsOf(db: MirrorDatabase, table: string): string[] {
  return (db.prepare(`PRAGMA table_info(${table})`).all() as { name: string; type: string; notnull: number; pk: number }[]).map(
    (row) => `${row.name} ${row.type}${row.pk ? ' PK' : ''}${row.notnull ? ' NOT NULL' : ''}`,
  );
}

describe('stream tables', () => {
  it('creates a missing stream table from its definition, and the store mirrors records into it', async () => {
    const db = opened(openMirror(mirrorFile(), { streams: [...STREAM_LIST, invoicesStream] }));
    expect(columnsOf(db, 'invoices')).toEqual([
      'id TEXT PK',
      'total INTEGER NOT NULL',
      'customer_name TEXT',
      'raw TEXT NOT NULL',
      'content_hash TEXT NOT NULL',
      'first_seen_at TEXT NOT NULL',
      'synced_at TEXT NOT NULL',
      'deleted_at TEXT',
      'last_seen_scan INTEGER',
      'missed_scans INTEGER NOT NULL',
      'written_seq INTEGER',
    ]);
    const store = new MirrorStore(sqliteConnection(db));
    const [created] = await store.applyRecords(invoicesStream, [{ id: 'inv_1', total: 1250, customer: { name: 'Acme' } }]);
    expect(created).toMatchObject({ type: 'invoice.created', stream: 'invoices', recordId: 'inv_1' });
    expect((await store.applyRecords(invoicesStream, [{ id: 'inv_1', total: 1300, customer: { name: 'Acme' } }])).map((change) => change.type)).toEqual(['invoice.updated']);
    expect(db.prepare('SELECT total, customer_name FROM invoices').get()).toEqual({ total: 1300, customer_name: 'Acme' });
    // Opening again finds the table as the definition wants it.
    await sqliteConnection(db).close();
    expect(() => opened(openMirror(dir!.file('mirror.db'), { streams: [...STREAM_LIST, invoicesStream] }))).not.toThrow();
  });

  it('refuses to open a mirror whose stream table disagrees with the definition, naming the table and the column', () => {
    const path = mirrorFile();
    const db = openMirror(path);
    db.exec('ALTER TABLE deals DROP COLUMN value; ALTER TABLE deals ADD COLUMN value TEXT');
    db.close();
    expect(() => opened(openMirror(path))).toThrow('mirror table deals: column value is TEXT, but the deals stream definition says INTEGER');
    // Read-only readers are not checked: they never write.
    expect(() => opened(openMirror(path, { readonly: true }))).not.toThrow();
  });

  it('adds a nullable column the table lacks; a missing NOT NULL column stops the open', () => {
    const path = mirrorFile();
    const db = openMirror(path);
    db.exec('ALTER TABLE transactions DROP COLUMN irs_category');
    db.close();
    const reopened = opened(openMirror(path));
    expect(columnsOf(reopened, 'transactions')).toContain('irs_category TEXT');
    reopened.exec('ALTER TABLE transactions DROP COLUMN amount');
    reopened.close();
    expect(() => opened(openMirror(path))).toThrow(/^mirror table transactions: column amount is missing, and the transactions stream definition wants it INTEGER NOT NULL/);
  });

  it('defineStream checks its own consistency', () => {
    const base = { ...invoicesStream, key: 'id' as const };
    expect(() => defineStream({ ...base, columns: [column('id', 'TEXT'), column('total', 'INTEGER'), column('customer.name', 'TEXT')] })).toThrow(
      'stream invoices: the key id needs the one primary-key column',
    );
    expect(() => defineStream({ ...base, listedFields: ['id', 'dueDate'] })).toThrow('stream invoices: listed field dueDate has no column');
    expect(() => defineStream({ ...base, changes: { ...base.changes, gone: 'invoice.voided' as 'invoice.deleted' } })).toThrow('changes.gone must be one of changes.events');
  });
});
