/**
 * The SQLite back end of the SQL executor (src/mirror/sql/executor.ts): better-sqlite3, whose calls
 * are synchronous, behind the asynchronous interface every mirror module uses.
 *
 * One lock per file per process: a transaction holds it from `BEGIN IMMEDIATE` to `COMMIT`, and a
 * statement outside a transaction runs only while nobody holds it. Without it, another part of the
 * process (the webhook dispatcher, the write worker on its own connection) could run a statement
 * between two awaits of a transaction: on the same connection it would join the transaction, on
 * another it would wait synchronously on SQLite's busy timeout for a lock that the waiting thread
 * itself holds. Other processes are kept apart by SQLite's own file lock, as before.
 *
 * When nobody holds the lock a statement runs at once, synchronously, and its promise is already
 * settled: a page of a backfill costs no more than the synchronous calls did.
 */
import { resolve } from 'node:path';
import { Mutex } from 'async-mutex';
import { preparedStatement, type MirrorDatabase } from '../database.ts';
import type { RunResult, SqlConnection, SqlExecutor, SqlRow, SqlValue } from './executor.ts';

/** The lock of each file open in this process, by absolute path (`:memory:` databases get their own). */
const fileLocks = new Map<string, { mutex: Mutex; users: number }>();

/** Statements on a connection or in a transaction, run at once (the caller holds the file's lock). */
class SqliteStatements implements SqlExecutor {
  readonly dialect = 'sqlite' as const;
  readonly inTransaction: boolean;
  protected readonly database: MirrorDatabase;
  /** Set when the transaction this executor belongs to has ended: later use is a bug. */
  ended = false;

  constructor(database: MirrorDatabase, inTransaction: boolean) {
    this.database = database;
    this.inTransaction = inTransaction;
  }

  protected check(): void {
    if (this.ended) throw new Error('this transaction has already ended: use the connection, or run the statement inside the transaction');
  }

  runNow(sql: string, parameters: readonly SqlValue[] = []): RunResult {
    this.check();
    return { changes: preparedStatement(this.database, sql).run(...parameters).changes };
  }

  getNow<Row>(sql: string, parameters: readonly SqlValue[] = []): Row | undefined {
    this.check();
    return preparedStatement(this.database, sql).get(...parameters) as Row | undefined;
  }

  allNow<Row>(sql: string, parameters: readonly SqlValue[] = []): Row[] {
    this.check();
    return preparedStatement(this.database, sql).all(...parameters) as Row[];
  }

  execNow(sql: string): void {
    this.check();
    this.database.exec(sql);
  }

  run(sql: string, parameters?: readonly SqlValue[]): Promise<RunResult> {
    return settle(() => this.runNow(sql, parameters));
  }

  get<Row = SqlRow>(sql: string, parameters?: readonly SqlValue[]): Promise<Row | undefined> {
    return settle(() => this.getNow<Row>(sql, parameters));
  }

  all<Row = SqlRow>(sql: string, parameters?: readonly SqlValue[]): Promise<Row[]> {
    return settle(() => this.allNow<Row>(sql, parameters));
  }

  exec(sql: string): Promise<void> {
    return settle(() => this.execNow(sql));
  }

  /** Inside a transaction: joins it. */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return fn(this);
  }

  /** SQLite has no notifications: its readers poll (executor.ts). */
  changesAppended(): Promise<void> {
    return Promise.resolve();
  }
}

/** A promise of `work()`'s result, rejected (never thrown synchronously) when it throws. */
function settle<T>(work: () => T): Promise<T> {
  try {
    return Promise.resolve(work());
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * A connection to one SQLite mirror file, asynchronous like every back end (module header).
 * Build it with `sqliteConnection(database)`.
 */
export class SqliteConnection extends SqliteStatements implements SqlConnection {
  readonly location: string;
  readonly #lock: Mutex;
  readonly #lockKey: string;
  #closed = false;

  constructor(database: MirrorDatabase) {
    super(database, false);
    this.location = database.name;
    this.#lockKey = database.memory || database.name === '' ? `memory:${Math.random()}` : resolve(database.name);
    let entry = fileLocks.get(this.#lockKey);
    if (!entry) fileLocks.set(this.#lockKey, (entry = { mutex: new Mutex(), users: 0 }));
    entry.users += 1;
    this.#lock = entry.mutex;
  }

  /** The better-sqlite3 handle, for what only SQLite has (PRAGMAs, the schema version, backups). */
  get sqlite(): MirrorDatabase {
    return this.database;
  }

  /** Runs `work` now when nobody holds the file's lock, else once the lock is free. */
  #whenFree<T>(work: () => T): Promise<T> {
    if (!this.#lock.isLocked()) return settle(work);
    return this.#lock.runExclusive(work);
  }

  override run(sql: string, parameters?: readonly SqlValue[]): Promise<RunResult> {
    return this.#whenFree(() => this.runNow(sql, parameters));
  }

  override get<Row = SqlRow>(sql: string, parameters?: readonly SqlValue[]): Promise<Row | undefined> {
    return this.#whenFree(() => this.getNow<Row>(sql, parameters));
  }

  override all<Row = SqlRow>(sql: string, parameters?: readonly SqlValue[]): Promise<Row[]> {
    return this.#whenFree(() => this.allNow<Row>(sql, parameters));
  }

  override exec(sql: string): Promise<void> {
    return this.#whenFree(() => this.execNow(sql));
  }

  /**
   * Runs `fn` in one `BEGIN IMMEDIATE` transaction holding the file's lock (executor.ts).
   * @throws SqliteError SQLITE_BUSY when another process holds the write lock past the busy timeout;
   *   whatever `fn` throws (after the rollback)
   */
  override transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return this.#lock.runExclusive(async () => {
      this.check();
      this.database.exec('BEGIN IMMEDIATE');
      const tx = new SqliteStatements(this.database, true);
      try {
        const result = await fn(tx);
        this.database.exec('COMMIT');
        return result;
      } catch (error) {
        if (this.database.inTransaction) this.database.exec('ROLLBACK');
        throw error;
      } finally {
        tx.ended = true;
      }
    });
  }

  /** Closes the file once no transaction runs on it. Safe to call twice. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#lock.runExclusive(() => {
      if (this.database.open) this.database.close();
    });
    const entry = fileLocks.get(this.#lockKey);
    if (entry && --entry.users === 0) fileLocks.delete(this.#lockKey);
  }
}

const connections = new WeakMap<MirrorDatabase, SqliteConnection>();

/**
 * The asynchronous connection over an open better-sqlite3 handle (one per handle: asking twice
 * gives the same object). Closing it closes the handle.
 */
export function sqliteConnection(database: MirrorDatabase): SqliteConnection {
  let connection = connections.get(database);
  if (!connection) connections.set(database, (connection = new SqliteConnection(database)));
  return connection;
}
