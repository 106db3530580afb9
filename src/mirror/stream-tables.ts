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
 *
 * Both back ends share the comparison (`planStreamTable`) and its messages: SQLite reads a table
 * with `PRAGMA table_info`, PostgreSQL with `information_schema.columns` and `pg_index`. On
 * PostgreSQL the definition's types are stored as the type map says (src/mirror/sql/column-types.ts:
 * TEXT -> text, INTEGER -> bigint, REAL -> double precision, as in the migrations), and named back
 * the same way in messages (another type shows as its own name: INT4).
 */
import type Database from 'better-sqlite3';
import { POSTGRES_TEXT_IN_BYTE_ORDER, POSTGRES_TYPE_NAMES, STORED_TYPE } from './sql/column-types.ts';
import type { SqlDialect, SqlExecutor } from './sql/executor.ts';
import type { ColumnDefinition, ColumnType, StreamDefinition } from '../streams/define-stream.ts';

/** A column wanted in a stream table: a definition's column or a bookkeeping one. */
interface WantedColumn {
  column: string;
  type: ColumnType;
  notNull: boolean;
  primaryKey: boolean;
  /** The default, as SQL (`0`), or undefined. */
  defaultValue?: string;
}

/**
 * The columns every stream table has besides its typed ones (docs/mirror.md):
 *   raw            the record exactly as the API last returned it (JSON text)
 *   content_hash   sha256 of the listed fields, for no-op suppression
 *   first_seen_at  when the mirror first saw the record (ISO 8601, local clock)
 *   synced_at      when a page or a write response last carried it (ISO 8601, local clock)
 *   deleted_at     set when tombstoned (gone from two consecutive complete scans); null while listed
 *   last_seen_scan the complete scan (sync_state.scan_number) that last listed it
 *   missed_scans   consecutive complete scans that did not list it
 *   written_seq    the changelog `seq` of the write whose response last wrote it through (the
 *                  write's outcome row); null when no write-through did. A page requested before
 *                  that seq existed does not overwrite the row (docs/sync.md "Write-throughs during a run")
 */
const BOOKKEEPING_COLUMNS: readonly WantedColumn[] = [
  { column: 'raw', type: 'TEXT', notNull: true, primaryKey: false },
  { column: 'content_hash', type: 'TEXT', notNull: true, primaryKey: false },
  { column: 'first_seen_at', type: 'TEXT', notNull: true, primaryKey: false },
  { column: 'synced_at', type: 'TEXT', notNull: true, primaryKey: false },
  { column: 'deleted_at', type: 'TEXT', notNull: false, primaryKey: false },
  { column: 'last_seen_scan', type: 'INTEGER', notNull: false, primaryKey: false },
  { column: 'missed_scans', type: 'INTEGER', notNull: true, primaryKey: false, defaultValue: '0' },
  { column: 'written_seq', type: 'INTEGER', notNull: false, primaryKey: false },
];

/**
 * A column as a table has it, in the definition's words: `type` is TEXT, INTEGER or REAL when the
 * back end stores one of those, else the engine's own name upper-cased.
 */
export interface ExistingColumn {
  name: string;
  type: string;
  notNull: boolean;
  primaryKey: boolean;
}

/** What `planStreamTable` found to do. */
export type StreamTablePlan =
  | { action: 'create'; statements: string[] }
  | { action: 'add'; statements: string[]; added: string[] }
  | { action: 'unchanged'; statements: [] };

function wantedColumns(stream: StreamDefinition): WantedColumn[] {
  return [
    ...stream.columns.map((column: ColumnDefinition) => ({ column: column.column, type: column.type, notNull: column.notNull, primaryKey: column.primaryKey })),
    ...BOOKKEEPING_COLUMNS,
  ];
}

/** A column's declaration on `dialect` (a TEXT column in byte order on PostgreSQL: column-types.ts `POSTGRES_TEXT_IN_BYTE_ORDER`). */
function declaration(column: WantedColumn, dialect: SqlDialect): string {
  return (
    `${column.column} ${dialect === 'postgres' && column.type === 'TEXT' ? POSTGRES_TEXT_IN_BYTE_ORDER : STORED_TYPE[dialect][column.type]}${column.primaryKey ? ' PRIMARY KEY' : ''}${column.notNull ? ' NOT NULL' : ''}` +
    (column.defaultValue === undefined ? '' : ` DEFAULT ${column.defaultValue}`)
  );
}

function describe(type: string, notNull: boolean, primaryKey: boolean): string {
  return `${type}${primaryKey ? ' PRIMARY KEY' : ''}${notNull ? ' NOT NULL' : ''}`;
}

/**
 * What to do with the stream's table on `dialect`, given its columns as they are (`existing`, empty
 * when the table is missing): create it, add the nullable columns it lacks, or nothing. The same
 * comparison and messages on both back ends. On PostgreSQL a primary key is always NOT NULL, so a
 * primary-key column's NOT NULL is not compared there.
 * @throws Error `mirror table <table>: column <column> ...` when the table disagrees with the definition
 */
export function planStreamTable(stream: StreamDefinition, existing: readonly ExistingColumn[], dialect: SqlDialect): StreamTablePlan {
  const wanted = wantedColumns(stream);
  if (existing.length === 0) {
    return { action: 'create', statements: [`CREATE TABLE ${stream.table} (\n  ${wanted.map((column) => declaration(column, dialect)).join(',\n  ')}\n)`] };
  }
  const byName = new Map(existing.map((column) => [column.name, column]));
  const statements: string[] = [];
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
      statements.push(`ALTER TABLE ${stream.table} ADD COLUMN ${declaration(column, dialect)}`);
      added.push(column.column);
      continue;
    }
    const notNull = dialect === 'postgres' && found.primaryKey ? column.notNull : found.notNull;
    const actual = describe(found.type, notNull, found.primaryKey);
    if (actual !== expected) {
      throw new Error(`mirror table ${stream.table}: column ${column.column} is ${actual}, but the ${stream.name} stream definition says ${expected}`);
    }
  }
  return added.length > 0 ? { action: 'add', statements, added } : { action: 'unchanged', statements: [] };
}

/** What a plan did, for the log: `created`, `added <columns>` or `unchanged`. */
function outcome(plan: StreamTablePlan): string {
  return plan.action === 'add' ? `added ${plan.added.join(', ')}` : plan.action === 'create' ? 'created' : 'unchanged';
}

/** The stream table's columns in a SQLite file (`PRAGMA table_info`). */
function sqliteColumns(db: Database.Database, table: string): ExistingColumn[] {
  const rows = db.prepare(`PRAGMA table_info(${table})`).all() as { name: string; type: string; notnull: number; pk: number }[];
  return rows.map((row) => ({ name: row.name, type: row.type.toUpperCase(), notNull: row.notnull === 1, primaryKey: row.pk > 0 }));
}

/**
 * Creates the stream's table when it is missing, else checks it against the definition and adds
 * the nullable columns it lacks. Call inside a transaction with the other streams'.
 * @returns what it did, for the log: `created`, `added <columns>` or `unchanged`
 * @throws Error `mirror table <table>: column <column> ...` when the table disagrees with the definition
 */
function prepareStreamTable(db: Database.Database, stream: StreamDefinition): string {
  const plan = planStreamTable(stream, sqliteColumns(db, stream.table), 'sqlite');
  for (const statement of plan.statements) db.exec(statement);
  return outcome(plan);
}

/**
 * `prepareStreamTable` for every stream, in one transaction: the mirror opens with every table in
 * place or not at all. When every table already agrees with its definition (read without a lock),
 * nothing is written and no write lock is taken: a process opening the mirror while another holds
 * the file's write lock (a long transaction, a stuck writer) opens it at once instead of failing
 * with `database is locked` after the busy timeout.
 * @throws Error naming the table and the column, as `prepareStreamTable`
 */
export function prepareStreamTables(db: Database.Database, streams: readonly StreamDefinition[]): void {
  if (streams.every((stream) => planStreamTable(stream, sqliteColumns(db, stream.table), 'sqlite').action === 'unchanged')) return;
  db.transaction(() => {
    for (const stream of streams) prepareStreamTable(db, stream);
  }).immediate();
}

/**
 * The stream table's columns in the PostgreSQL schema on the executor's `search_path`, in the
 * definition's words (`ExistingColumn`); empty when the table is missing.
 */
export async function postgresColumns(executor: SqlExecutor, table: string): Promise<ExistingColumn[]> {
  const rows = await executor.all<{ name: string; type: string; not_null: boolean; primary_key: boolean }>(
    `SELECT c.column_name AS name, c.udt_name AS type, c.is_nullable = 'NO' AS not_null,
       EXISTS (
         SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
         WHERE i.indisprimary AND i.indrelid = format('%I.%I', c.table_schema, c.table_name)::regclass AND a.attname = c.column_name
       ) AS primary_key
     FROM information_schema.columns c
     WHERE c.table_schema = current_schema() AND c.table_name = ?
     ORDER BY c.ordinal_position`,
    [table],
  );
  return rows.map((row) => ({ name: row.name, type: POSTGRES_TYPE_NAMES[row.type] ?? row.type.toUpperCase(), notNull: row.not_null, primaryKey: row.primary_key }));
}

/**
 * The PostgreSQL side of `prepareStreamTables`: every stream's table created, checked and completed
 * in one transaction (the mirror opens with every table in place or not at all).
 * @returns what was done per table (`created`, `added <columns>`, `unchanged`), by table name
 * @throws Error naming the table and the column, with the SQLite side's messages
 */
export async function preparePostgresStreamTables(executor: SqlExecutor, streams: readonly StreamDefinition[]): Promise<Record<string, string>> {
  return executor.transaction(async (tx) => {
    const done: Record<string, string> = {};
    for (const stream of streams) {
      const plan = planStreamTable(stream, await postgresColumns(tx, stream.table), 'postgres');
      for (const statement of plan.statements) await tx.exec(statement);
      done[stream.table] = outcome(plan);
    }
    return done;
  });
}
