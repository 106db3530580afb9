/**
 * Opens the mirror: one SQLite file (docs/mirror.md), WAL mode so that downstream readers never
 * block the worker, migrated forward to the latest schema on open, and every registered stream's
 * table checked against its definition (created when missing: stream-tables.ts).
 */
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import type { StreamDefinition } from '../streams/define-stream.ts';
import { STREAM_LIST } from '../streams/definitions.ts';
import { maskUrlPassword } from '../logging/mask-url.ts';
import { MIGRATIONS } from './migrations/index.ts';
import { ensureMirrorDirectory } from './mirror-directory.ts';
import { isPostgresUrl } from './sql/postgres-location.ts';
import { prepareStreamTables } from './stream-tables.ts';

export type MirrorDatabase = Database.Database;

// SQLite URI file names, for reading a mirror on read-only storage (`file:...?immutable=1`:
// `readOnlyStorage` below). better-sqlite3 reads this when it loads SQLite, at its first Database;
// it only changes how a path starting with `file:` is read.
process.env.SQLITE_USE_URI ??= '1';

const preparedStatements = new WeakMap<MirrorDatabase, Map<string, Database.Statement<unknown[]>>>();

/**
 * `sql` prepared once per connection and reused: compiling a statement cost more than running it,
 * on every page of a backfill. The cache lives as long as the connection.
 * @throws SqliteError when `sql` does not compile
 */
export function preparedStatement(db: MirrorDatabase, sql: string): Database.Statement<unknown[]> {
  return preparedIn(preparedStatementCache(db), db, sql);
}

/**
 * `preparedStatement` with the connection's cache at hand (`preparedStatementCache(db)`).
 * @throws SqliteError when `sql` does not compile
 */
export function preparedIn(cache: Map<string, Database.Statement<unknown[]>>, db: MirrorDatabase, sql: string): Database.Statement<unknown[]> {
  let statement = cache.get(sql);
  if (!statement) cache.set(sql, (statement = db.prepare<unknown[]>(sql)));
  return statement;
}

/**
 * The connection's cache of `preparedStatement` (statements by SQL text), for a caller that runs
 * statements often enough to keep the cache at hand instead of finding it per statement.
 */
export function preparedStatementCache(db: MirrorDatabase): Map<string, Database.Statement<unknown[]>> {
  let cache = preparedStatements.get(db);
  if (!cache) preparedStatements.set(db, (cache = new Map()));
  return cache;
}

/** Options of `openMirror`. */
export interface OpenMirrorOptions {
  /** Open read-only (downstream readers, `changes`, `write`): no migration, no table check, no writes. */
  readonly?: boolean;
  /** The streams whose tables must be in place. Default: every registered stream (src/streams/definitions.ts). */
  streams?: readonly StreamDefinition[];
  /**
   * How long a statement waits for another connection's lock before it fails with `database is
   * locked`, ms (`PRAGMA busy_timeout`; better-sqlite3 waits synchronously, so the process waits
   * with it). Default 5000; tests shorten it.
   */
  busyTimeoutMs?: number;
}

/** `OpenMirrorOptions.busyTimeoutMs` by default, ms. */
export const DEFAULT_BUSY_TIMEOUT_MS = 5000;

/**
 * Opens (creating if needed) the mirror at `path`, applies pending migrations, and prepares the
 * stream tables (stream-tables.ts).
 * @throws Error naming the file when it cannot be opened, or when it was written by a newer
 *   bizops-sync, or `path` is a PostgreSQL URL (src/mirror/open.ts opens those); Error naming the table and column when a stream table disagrees with its definition
 */
export function openMirror(path: string, options: OpenMirrorOptions = {}): MirrorDatabase {
  if (isPostgresUrl(path)) {
    throw new Error(`${maskUrlPassword(path)} is a PostgreSQL mirror, which this command cannot open yet (it opens SQLite files); give dbPath a file path`);
  }
  // Not mkdirSync's `recursive`: it never returns under /proc (mirror-directory.ts).
  if (!options.readonly && path !== ':memory:') ensureMirrorDirectory(dirname(path));
  let db: MirrorDatabase;
  try {
    db = new Database(path, { readonly: options.readonly ?? false, fileMustExist: options.readonly ?? false });
  } catch (error) {
    throw new Error(`cannot open the mirror database ${path}: ${(error as Error).message}`, { cause: error });
  }
  db.pragma(`busy_timeout = ${Math.max(0, Math.round(options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS))}`);
  if (options.readonly) return readableOnReadOnlyStorage(db, path);
  db.pragma('journal_mode = WAL');
  // NORMAL is durable across process crashes in WAL mode (only an OS crash can lose the last commits).
  db.pragma('synchronous = NORMAL');
  // A checkpoint every 10,000 WAL pages (40 MB) instead of SQLite's 1,000: a backfill rewrites the
  // same random-id index pages in many commits, and each checkpoint writes them back and syncs; fewer
  // checkpoints made 100,000 records' commits about a third faster, the CLI backfill of them ~13% (docs/decisions.md).
  db.pragma('wal_autocheckpoint = 10000');
  db.pragma('foreign_keys = ON');
  try {
    migrate(db);
    prepareStreamTables(db, options.streams ?? STREAM_LIST);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

/**
 * `db`, opened read-only, once it has read: or, when the file lies on read-only storage (a
 * read-only volume mount) and no writer has it open, the same file opened immutable.
 *
 * A WAL-mode database is read through its `-shm` index, which the first reader creates when it is
 * missing; on read-only storage that fails (SQLITE_READONLY_DIRECTORY, SQLITE_CANTOPEN). The index is
 * missing only when no process has the database open (a writer keeps it while it runs, and SQLite
 * then reads it read-only), so the file is then read as immutable: without locks or WAL index,
 * which is sound while nothing writes it.
 * @throws the SQLite error of the first read when it is not one of read-only storage
 */
function readableOnReadOnlyStorage(db: MirrorDatabase, path: string): MirrorDatabase {
  try {
    db.prepare('SELECT COUNT(*) FROM sqlite_master').get();
    return db;
  } catch (error) {
    const code = String((error as { code?: unknown }).code ?? '');
    if (path === ':memory:' || !/^SQLITE_(READONLY|CANTOPEN)/.test(code)) {
      db.close();
      throw new Error(`cannot open the mirror database ${path}: ${(error as Error).message}`, { cause: error });
    }
    db.close();
    const immutable = new Database(`${pathToFileURL(resolve(path)).href}?immutable=1`, { readonly: true, fileMustExist: true });
    immutable.pragma('busy_timeout = 5000');
    return immutable;
  }
}

/** The schema version this build writes (`PRAGMA user_version`). */
export const SCHEMA_VERSION = MIGRATIONS.at(-1)?.version ?? 0;

/**
 * Applies every migration newer than the file's `user_version`, all in one transaction: an upgrade
 * is all or nothing, as on PostgreSQL (src/mirror/postgres-migrate.ts), and a new file's schema is
 * written in one commit (about 7 ms of CPU where a commit per migration took about 13 ms).
 * The transaction takes the write lock (IMMEDIATE) before it reads the version, so two processes
 * opening a new file at once (a `sync` beside a starting daemon) never both apply a migration: the
 * second waits for the first's commit, then finds it applied. A file at this build's version takes
 * no lock.
 * @throws Error when the file's version is newer than this build knows; the SQLite error of a
 *   failing migration, the file left at the version it had.
 */
function migrate(db: MirrorDatabase): void {
  const version = (): number => db.pragma('user_version', { simple: true }) as number;
  const newer = (current: number): void => {
    if (current > SCHEMA_VERSION) {
      throw new Error(`the mirror database is at schema version ${current}, newer than this bizops-sync (${SCHEMA_VERSION}); upgrade bizops-sync`);
    }
  };
  const found = version();
  newer(found);
  if (found === SCHEMA_VERSION) return;
  db.transaction(() => {
    const current = version();
    newer(current);
    for (const migration of MIGRATIONS) {
      if (migration.version <= current) continue;
      db.exec(migration.sql);
      db.pragma(`user_version = ${migration.version}`);
    }
  }).immediate();
}
