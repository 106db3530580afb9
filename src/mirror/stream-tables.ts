/**
 * Stream tables from stream definitions, checked when the mirror opens (docs/mirror.md): a stream
 * whose table is missing gets it, created from its definition's columns plus the bookkeeping
 * columns every stream table has; an existing table must agree with its definition, column by
 * column (declared type, NOT NULL, primary key). A column the definition adds that the table lacks
 * is added when it may be (nullable); anything else stops the open with a message naming the table
 * and the column, before a sync could write a wrong row.
 *
 * The tables of migration 001 (transactions, deals, onboardings) are checked the same way: their
 * definitions describe them exactly, so the public mirror contract cannot drift from the code.
 */
import type { MirrorDatabase } from './database.ts';
import type { ColumnDefinition, StreamDefinition } from '../streams/define-stream.ts';

/**
 * The columns every stream table has besides its typed ones (docs/mirror.md):
 *   raw            the record exactly as the API last returned it (JSON text)
 *   content_hash   sha256 of the listed fields, for no-op suppression
 *   first_seen_at  when the mirror first saw the record (ISO 8601, local clock)
 *   synced_at      when a page or a write response last carried it (ISO 8601, local clock)
 *   deleted_at     set when tombstoned (gone from two consecutive complete scans); null while listed
 *   last_seen_scan the complete scan (sync_state.scan_number) that last listed it
 *   missed_scans   consecutive complete scans that did not list it
 */
const BOOKKEEPING_COLUMNS: readonly { column: string; declaration: string; type: string; notNull: boolean }[] = [
  { column: 'raw', declaration: 'TEXT NOT NULL', type: 'TEXT', notNull: true },
  { column: 'content_hash', declaration: 'TEXT NOT NULL', type: 'TEXT', notNull: true },
  { column: 'first_seen_at', declaration: 'TEXT NOT NULL', type: 'TEXT', notNull: true },
  { column: 'synced_at', declaration: 'TEXT NOT NULL', type: 'TEXT', notNull: true },
  { column: 'deleted_at', declaration: 'TEXT', type: 'TEXT', notNull: false },
  { column: 'last_seen_scan', declaration: 'INTEGER', type: 'INTEGER', notNull: false },
  { column: 'missed_scans', declaration: 'INTEGER NOT NULL DEFAULT 0', type: 'INTEGER', notNull: true },
];

interface TableColumn {
  name: string;
  type: string;
  notnull: number;
  pk: number;
}

function declaration(column: ColumnDefinition): string {
  return `${column.column} ${column.type}${column.primaryKey ? ' PRIMARY KEY' : ''}${column.notNull ? ' NOT NULL' : ''}`;
}

function describe(type: string, notNull: boolean, primaryKey: boolean): string {
  return `${type}${primaryKey ? ' PRIMARY KEY' : ''}${notNull ? ' NOT NULL' : ''}`;
}

/**
 * Creates the stream's table when it is missing, else checks it against the definition and adds
 * the nullable columns it lacks. Call inside a transaction with the other streams'.
 * @returns what it did, for the log: `created`, `added <columns>` or `unchanged`
 * @throws Error `mirror table <table>: column <column> ...` when the table disagrees with the definition
 */
function prepareStreamTable(db: MirrorDatabase, stream: StreamDefinition): string {
  const existing = db.prepare(`PRAGMA table_info(${stream.table})`).all() as TableColumn[];
  if (existing.length === 0) {
    const columns = [...stream.columns.map(declaration), ...BOOKKEEPING_COLUMNS.map((column) => `${column.column} ${column.declaration}`)];
    db.exec(`CREATE TABLE ${stream.table} (\n  ${columns.join(',\n  ')}\n)`);
    return 'created';
  }
  const byName = new Map(existing.map((column) => [column.name, column]));
  const wanted = [
    ...stream.columns.map((column) => ({ column: column.column, type: column.type, notNull: column.notNull, primaryKey: column.primaryKey, declaration: declaration(column) })),
    ...BOOKKEEPING_COLUMNS.map((column) => ({ ...column, primaryKey: false, declaration: `${column.column} ${column.declaration}` })),
  ];
  const added: string[] = [];
  for (const column of wanted) {
    const found = byName.get(column.column);
    const expected = describe(column.type, column.notNull, column.primaryKey);
    if (!found) {
      if (column.notNull || column.primaryKey) {
        throw new Error(
          `mirror table ${stream.table}: column ${column.column} is missing, and the ${stream.name} stream definition wants it ${expected}, which cannot be added to existing rows; add it with a migration`,
        );
      }
      db.exec(`ALTER TABLE ${stream.table} ADD COLUMN ${column.declaration}`);
      added.push(column.column);
      continue;
    }
    const actual = describe(found.type.toUpperCase(), found.notnull === 1, found.pk > 0);
    if (actual !== expected) {
      throw new Error(`mirror table ${stream.table}: column ${column.column} is ${actual}, but the ${stream.name} stream definition says ${expected}`);
    }
  }
  return added.length > 0 ? `added ${added.join(', ')}` : 'unchanged';
}

/**
 * `prepareStreamTable` for every stream, in one transaction: the mirror opens with every table in
 * place or not at all.
 * @throws Error naming the table and the column, as `prepareStreamTable`
 */
export function prepareStreamTables(db: MirrorDatabase, streams: readonly StreamDefinition[]): void {
  db.transaction(() => {
    for (const stream of streams) prepareStreamTable(db, stream);
  }).immediate();
}
