/**
 * The mirror's health. SQLite: its own consistency check (`PRAGMA quick_check`), run at daemon start
 * and by `status` (docs/operations.md "A damaged mirror"), so that a damaged page is reported before
 * anything is written next to it. PostgreSQL: `status` checks that every table of the mirror is in
 * its schema (`postgresTablesCheck`).
 */
import { STREAM_LIST } from '../streams/definitions.ts';
import type { MirrorDatabase } from './database.ts';
import type { SqlConnection, SqlExecutor } from './sql/executor.ts';
import { SqliteConnection } from './sql/sqlite.ts';

/** At most this many problems are kept from `PRAGMA quick_check` (SQLite lists one per row). */
const MAX_PROBLEMS = 5;

/**
 * Runs `PRAGMA quick_check(N)` on `db` (O(size of the file): it reads every page, without the index
 * cross-checks of `integrity_check`).
 * @returns `ok`, or the problems SQLite reported, one line, `; `-joined (at most five)
 * @throws SqliteError when the file cannot be read at all (`file is not a database`)
 */
export function mirrorQuickCheck(db: MirrorDatabase): string {
  const rows = db.pragma(`quick_check(${MAX_PROBLEMS})`) as { quick_check: string }[];
  // A row may hold several lines ("*** in database main ***\nPage 8: ..."): one problem a line, so the
  // result fits the one-line messages it goes into.
  const problems = rows
    .flatMap((row) => row.quick_check.split('\n'))
    .map((line) => line.trim())
    .filter((line) => line !== '' && !/^\*\*\* in database \w+ \*\*\*$/.test(line));
  if (problems.length === 1 && problems[0] === 'ok') return 'ok';
  return problems.length > 0 ? problems.slice(0, MAX_PROBLEMS).join('; ') : 'damaged';
}

/** The mirror's own tables (src/mirror/migrations), besides one table per stream. */
export const MIRROR_TABLES = ['changes', 'sync_state', 'webhook_endpoints', 'writes', 'rejected_records', 'record_clock', 'webhook_failed_deliveries', 'webhook_held_events', 'webhook_attempts', 'webhook_attempt_batches', 'stream_fields', 'consumers', 'changelog_pruned'] as const;

/**
 * The PostgreSQL counterpart of `mirrorQuickCheck` (PostgreSQL keeps its own storage consistent and
 * has no per-database check a client can run cheaply): every table the mirror needs (`MIRROR_TABLES`
 * and `streamTables`) is present in the mirror's schema (`current_schema()`, the connection's
 * search_path). O(number of tables).
 * @returns `ok`, or `missing tables: a, b` (sorted)
 * @throws the driver's error when the server cannot be asked
 */
export async function postgresTablesCheck(executor: SqlExecutor, streamTables: readonly string[]): Promise<string> {
  const rows = await executor.all<{ table_name: string }>('SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()');
  const present = new Set(rows.map((row) => row.table_name));
  const missing = [...MIRROR_TABLES, ...streamTables].filter((table) => !present.has(table)).sort();
  return missing.length === 0 ? 'ok' : `missing tables: ${missing.join(', ')}`;
}

/**
 * The health of the mirror behind `connection`, whichever back end: SQLite `mirrorQuickCheck` (the
 * whole file read), PostgreSQL `postgresTablesCheck` for the mirror's own tables and every
 * registered stream's.
 * @returns `ok`, or what is wrong, one line
 * @throws SqliteError when the SQLite file cannot be read at all; the driver's error when the server cannot be asked
 */
export async function mirrorHealthCheck(connection: SqlConnection): Promise<string> {
  if (connection instanceof SqliteConnection) return mirrorQuickCheck(connection.sqlite);
  return postgresTablesCheck(connection, STREAM_LIST.map((stream) => stream.table));
}

/**
 * The schema version of the mirror behind `connection`: SQLite `PRAGMA user_version`, PostgreSQL the
 * largest `schema_version` row (0 when none).
 */
export async function mirrorSchemaVersion(connection: SqlConnection): Promise<number> {
  if (connection instanceof SqliteConnection) return connection.sqlite.pragma('user_version', { simple: true }) as number;
  // Loaded here: a SQLite mirror's check loads no PostgreSQL driver.
  const { postgresSchemaVersion } = await import('./postgres-migrate.ts');
  return postgresSchemaVersion(connection);
}
