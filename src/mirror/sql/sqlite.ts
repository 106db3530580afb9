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
 *
 * Another process's write lock: better-sqlite3 waits on it synchronously (`busy_timeout`), the
 * event loop blocked. A connection opened `nonBlocking` (the daemon's) never does: its handle's
 * busy timeout is 0, so a statement or `BEGIN IMMEDIATE` that finds the file locked fails at once
 * (SQLITE_BUSY) and is tried again after short timers (`LOCKED_RETRY`, p-retry), then fails with
 * `MirrorFileLockedError`; the daemon's parts try again at their next round or tick. A holder paused
 * inside a write transaction keeps the lock for the whole pause (docs/operations.md "Running two
 * daemons (replicas)"); health, metrics and readiness keep answering meanwhile.
 */
import { resolve } from 'node:path';
import { Mutex } from 'async-mutex';
import type Database from 'better-sqlite3';
import { preparedIn, preparedStatement, preparedStatementCache, type MirrorDatabase } from '../database.ts';
import type { RunResult, SqlConnection, SqlExecutor, SqlReaderNow, SqlRow, SqlValue, SqlWriterNow, StatementNow } from './executor.ts';

/** The lock of each file open in this process, by absolute path (`:memory:` databases get their own). */
const fileLocks = new Map<string, { mutex: Mutex; users: number }>();

/**
 * How a `nonBlocking` connection's statement or transaction that found the file write-locked by
 * another process is tried again (p-retry options): 5 more tries, after waits of 5 ms growing 2.8
 * times a try up to 200 ms (5, 14, 39, 110, 200: about 370 ms in all), enough for a one-off
 * command's transaction of a page to end, short beside a lease round.
 */
export const LOCKED_RETRY = { retries: 5, minTimeout: 5, factor: 2.8, maxTimeout: 200, randomize: false } as const;

/** How many writes gave up on a locked file (`MirrorFileLockedError`), by absolute path, since this process started. */
const lockedCounts = new Map<string, number>();

/**
 * How many statements and transactions of this process's `nonBlocking` connections to the SQLite
 * file `location` gave up because another process held its write lock (`MirrorFileLockedError`),
 * since the process started (the daemon's `bizops_mirror_file_locked_total`). 0 for a file never locked.
 */
export function mirrorFileLockedCount(location: string): number {
  return lockedCounts.get(resolve(location)) ?? 0;
}

/**
 * Another process holds the SQLite mirror file's write lock (it is inside a write transaction:
 * running, stuck, or paused), and a `nonBlocking` connection did not wait for it. Nothing was
 * written; try again later. `code` is SQLite's, `SQLITE_BUSY`.
 */
export class MirrorFileLockedError extends Error {
  override name = 'MirrorFileLockedError';
  readonly code = 'SQLITE_BUSY';

  constructor(location: string, options?: ErrorOptions) {
    super(`the mirror file is locked by another process: ${location} (another process is inside a write transaction)`, options);
  }
}

/** True for SQLite's "the file is locked" errors (SQLITE_BUSY and its extended codes). */
function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY') && !(error instanceof MirrorFileLockedError);
}

/** `BEGIN IMMEDIATE` found the file locked (so `fn` never ran: the transaction may be tried again); `error` is SQLite's. */
class BeginBusy extends Error {
  readonly error: unknown;

  constructor(error: unknown) {
    super('BEGIN IMMEDIATE found the mirror file locked', { cause: error });
    this.error = error;
  }
}

/** Options of `sqliteConnection`. */
export interface SqliteConnectionOptions {
  /**
   * Never wait on another process's write lock with the event loop blocked (the daemon): the
   * handle's busy timeout is set to 0, and a statement or transaction that finds the file locked is
   * tried again (`LOCKED_RETRY`), then fails with `MirrorFileLockedError` (module
   * header). Default false: statements wait on the handle's busy timeout (`OpenMirrorOptions.busyTimeoutMs`), as the one-off commands do.
   */
  nonBlocking?: boolean;
}

/** Statements on a connection or in a transaction, run at once (the caller holds the file's lock). */
class SqliteStatements implements SqlExecutor, SqlWriterNow {
  readonly dialect = 'sqlite' as const;
  readonly inTransaction: boolean;
  /** In a transaction: this executor itself (executor.ts `writeNow`); undefined on a connection, whose statements wait for the file's lock. */
  readonly writeNow: SqlWriterNow | undefined;
  protected readonly database: MirrorDatabase;
  /** The connection's prepared statements by SQL text (database.ts `preparedStatement`), kept at hand: every statement looks one up. */
  readonly #statements: Map<string, Database.Statement<unknown[]>>;
  /** Set when the transaction this executor belongs to has ended: later use is a bug. */
  ended = false;

  constructor(database: MirrorDatabase, inTransaction: boolean) {
    this.database = database;
    this.inTransaction = inTransaction;
    this.writeNow = inTransaction ? this : undefined;
    this.#statements = preparedStatementCache(database);
  }

  protected check(): void {
    if (this.ended) throw new Error('this transaction has already ended: use the connection, or run the statement inside the transaction');
  }

  /** `sql` prepared once per connection (the same cache as database.ts `preparedStatement`). */
  #prepared(sql: string): Database.Statement<unknown[]> {
    return preparedIn(this.#statements, this.database, sql);
  }

  runNow(sql: string, parameters: readonly SqlValue[] = []): RunResult & { lastInsertRowid: number } {
    this.check();
    const result = this.#prepared(sql).run(...parameters);
    return { changes: result.changes, lastInsertRowid: Number(result.lastInsertRowid) };
  }

  statementNow(sql: string): StatementNow {
    this.check();
    const statement = this.#prepared(sql);
    return {
      run: (parameters) => {
        this.check();
        const result = statement.run(...parameters);
        // better-sqlite3's own result object (no copy per row); its rowid is a number, the mirror never turns on safeIntegers.
        return result as RunResult & { lastInsertRowid: number };
      },
    };
  }

  getNow<Row>(sql: string, parameters: readonly SqlValue[] = []): Row | undefined {
    this.check();
    return this.#prepared(sql).get(...parameters) as Row | undefined;
  }

  allNow<Row>(sql: string, parameters: readonly SqlValue[] = []): Row[] {
    this.check();
    return this.#prepared(sql).all(...parameters) as Row[];
  }

  execNow(sql: string): void {
    this.check();
    this.database.exec(sql);
  }

  run(sql: string, parameters?: readonly SqlValue[]): Promise<RunResult> {
    return settle(() => ({ changes: this.runNow(sql, parameters).changes }));
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

  /** Runs at once: SQLite's statements cost no round trip (executor.ts `runAtCommit`). */
  async runAtCommit(sql: string, parameters?: readonly SqlValue[]): Promise<void> {
    await this.run(sql, parameters);
  }

  /** Runs at once, then `onRows` (executor.ts `allAtCommit`). */
  async allAtCommit<Row = SqlRow>(sql: string, parameters: readonly SqlValue[], onRows: (rows: Row[]) => void): Promise<void> {
    onRows(await this.all<Row>(sql, parameters));
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
  /** True when this connection never waits on another process's write lock (`SqliteConnectionOptions.nonBlocking`). */
  readonly nonBlocking: boolean;
  readonly #lock: Mutex;
  readonly #lockKey: string;
  #closed = false;

  constructor(database: MirrorDatabase, options: SqliteConnectionOptions = {}) {
    super(database, false);
    this.location = database.name;
    this.nonBlocking = options.nonBlocking ?? false;
    if (this.nonBlocking) database.pragma('busy_timeout = 0');
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

  /**
   * `#whenFree(work)`; on a `nonBlocking` connection, tried again while the file is locked by
   * another process (`retryable`: one statement, which did nothing when it found the lock taken).
   */
  #statement<T>(work: () => T, retryable = true): Promise<T> {
    const first = this.#whenFree(work);
    if (!this.nonBlocking) return first;
    return first.catch((error: unknown) => this.#whileLocked(error, retryable ? () => this.#whenFree(work) : undefined));
  }

  /**
   * After the first try failed with `error`: while the failure says the file is locked
   * (SQLITE_BUSY; for a transaction only its `BEGIN IMMEDIATE`'s, `BeginBusy`), `again()` as
   * `LOCKED_RETRY` says; still locked: `MirrorFileLockedError` (counted). Other errors pass as they are.
   */
  async #whileLocked<T>(error: unknown, again: (() => Promise<T>) | undefined, onlyBegin = false): Promise<T> {
    const locked = (candidate: unknown): boolean => candidate instanceof BeginBusy || (!onlyBegin && isBusy(candidate));
    let last = error;
    if (again && locked(error)) {
      try {
        // Attempt 1 is the try that already failed (run outside p-retry, so that an unlocked file's
        // statement settles at once). p-retry is loaded here, when a file is first found locked, so
        // that the commands that only read the mirror load none of the worker's libraries.
        const { default: pRetry } = await import('p-retry');
        return await pRetry((attempt) => (attempt === 1 ? Promise.reject(error as Error) : again()), { ...LOCKED_RETRY, shouldRetry: ({ error: next }) => locked(next) });
      } catch (next) {
        last = next;
      }
    }
    const cause = last instanceof BeginBusy ? last.error : last;
    if (!locked(last)) throw cause;
    lockedCounts.set(this.#lockKey, (lockedCounts.get(this.#lockKey) ?? 0) + 1);
    throw new MirrorFileLockedError(this.location, { cause });
  }

  /**
   * Runs `read` at once when no transaction of this process holds the file's lock; undefined when
   * one does, or when this `nonBlocking` connection found the file locked by another process
   * (SQLITE_BUSY): the caller reads asynchronously instead (executor.ts `SqlExecutor.readNow`).
   * @throws whatever `read` throws, but SQLITE_BUSY on a `nonBlocking` connection
   */
  readNow<T>(read: (reader: SqlReaderNow) => T): T | undefined {
    if (this.#lock.isLocked()) return undefined;
    try {
      return read(this);
    } catch (error) {
      if (this.nonBlocking && isBusy(error)) return undefined;
      throw error;
    }
  }

  override run(sql: string, parameters?: readonly SqlValue[]): Promise<RunResult> {
    return this.#statement(() => ({ changes: this.runNow(sql, parameters).changes }));
  }

  override get<Row = SqlRow>(sql: string, parameters?: readonly SqlValue[]): Promise<Row | undefined> {
    return this.#statement(() => this.getNow<Row>(sql, parameters));
  }

  override all<Row = SqlRow>(sql: string, parameters?: readonly SqlValue[]): Promise<Row[]> {
    return this.#statement(() => this.allNow<Row>(sql, parameters));
  }

  /** Not tried again when locked (a script of several statements may have run part of itself). */
  override exec(sql: string): Promise<void> {
    return this.#statement(() => this.execNow(sql), false);
  }

  /**
   * Runs `fn` in one `BEGIN IMMEDIATE` transaction holding the file's lock (executor.ts). On a
   * `nonBlocking` connection a `BEGIN IMMEDIATE` that finds the file locked is tried again (module
   * header), the process's lock released between tries so that its reads go on.
   * @throws SqliteError SQLITE_BUSY when another process holds the write lock past the busy timeout;
   *   MirrorFileLockedError instead on a `nonBlocking` connection; whatever `fn` throws (after the rollback)
   */
  override transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    if (!this.nonBlocking) return this.#transactionOnce(fn);
    const attempt = (): Promise<T> => this.#transactionOnce(fn, true);
    return attempt().catch((error: unknown) => this.#whileLocked(error, attempt, true));
  }

  /** One try of `transaction`; with `markBusyBegin`, a `BEGIN IMMEDIATE` that found the file locked rejects with `BeginBusy`. */
  #transactionOnce<T>(fn: (tx: SqlExecutor) => Promise<T>, markBusyBegin = false): Promise<T> {
    return this.#lock.runExclusive(async () => {
      this.check();
      try {
        // Prepared once per connection (database.ts `preparedStatement`), as COMMIT: no parse per transaction.
        preparedStatement(this.database, 'BEGIN IMMEDIATE').run();
      } catch (error) {
        throw markBusyBegin && isBusy(error) ? new BeginBusy(error) : error;
      }
      const tx = new SqliteStatements(this.database, true);
      try {
        const result = await fn(tx);
        preparedStatement(this.database, 'COMMIT').run();
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
 * gives the same object, with the options of the first ask). Closing it closes the handle.
 */
export function sqliteConnection(database: MirrorDatabase, options: SqliteConnectionOptions = {}): SqliteConnection {
  let connection = connections.get(database);
  if (!connection) connections.set(database, (connection = new SqliteConnection(database, options)));
  return connection;
}
