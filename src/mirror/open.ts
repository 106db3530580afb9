/**
 * Opening the mirror wherever it lives (docs/mirror.md): a file path is a SQLite file
 * (src/mirror/database.ts), a `postgres://` or `postgresql://` URL a schema of a PostgreSQL
 * database (src/mirror/sql/postgres.ts). Either way the caller gets the one executor interface
 * (src/mirror/sql/executor.ts), migrated and with every stream table in place.
 */
import type { StreamDefinition } from '../streams/define-stream.ts';
import { STREAM_LIST } from '../streams/definitions.ts';
import { openMirror } from './database.ts';
import type { SqlConnection } from './sql/executor.ts';
import { isPostgresUrl } from './sql/postgres-location.ts';
import { sqliteConnection } from './sql/sqlite.ts';
import { preparePostgresStreamTables } from './stream-tables.ts';

/** Options of `openMirrorConnection`. */
export interface OpenMirrorConnectionOptions {
  /**
   * Open read-only (downstream readers, `changes`, `status`): no migration, no table check, no
   * writes (SQLite: a read-only handle on an existing file; PostgreSQL: read-only transactions on an
   * existing schema).
   */
  readonly?: boolean;
  /** The streams whose tables must be in place. Default: every registered stream (src/streams/definitions.ts). */
  streams?: readonly StreamDefinition[];
  /**
   * PostgreSQL: `idle_in_transaction_session_timeout` of the pool's connections, ms (src/mirror/sql/postgres.ts
   * `PostgresConnectionOptions`); the commands and the daemon give a third of `sync.leaseSeconds`.
   */
  idleInTransactionTimeoutMs?: number;
  /** SQLite: `OpenMirrorOptions.busyTimeoutMs` (default 5000 ms): how long opening (and, unless `nonBlocking`, every statement) waits on another process's lock. */
  busyTimeoutMs?: number;
  /**
   * SQLite: never wait on another process's write lock with the event loop blocked once open (the
   * daemon): a write that finds the file locked fails with MirrorFileLockedError after a few short
   * timers (src/mirror/sql/sqlite.ts `SqliteConnectionOptions.nonBlocking`). Default false.
   */
  nonBlocking?: boolean;
}

/**
 * Opens the mirror at `location`: a SQLite file path (created when missing), or a PostgreSQL URL
 * `postgres://user:password@host:5432/database?schema=name` (the schema created when missing,
 * default `bizops`). Applies pending migrations and prepares the stream tables, unless read-only.
 * @throws Error naming the file, or the URL with its password masked, when it cannot be opened or
 *   reached, or was written by a newer bizops-sync; Error naming the table and column when a stream
 *   table disagrees with its definition
 */
export async function openMirrorConnection(location: string, options: OpenMirrorConnectionOptions = {}): Promise<SqlConnection> {
  if (!isPostgresUrl(location)) return sqliteConnection(openMirror(location, options), { nonBlocking: options.nonBlocking ?? false });
  // Loaded here, not at the top: a SQLite mirror loads no PostgreSQL driver (docs/operations.md "Start-up").
  const [{ openPostgresConnection }, { migratePostgres }] = await Promise.all([import('./sql/postgres.ts'), import('./postgres-migrate.ts')]);
  const connection = await openPostgresConnection(location, { readonly: options.readonly ?? false, idleInTransactionTimeoutMs: options.idleInTransactionTimeoutMs });
  if (options.readonly) return connection;
  try {
    await migratePostgres(connection);
    await preparePostgresStreamTables(connection, options.streams ?? STREAM_LIST);
  } catch (error) {
    await connection.close();
    throw error;
  }
  return connection;
}
