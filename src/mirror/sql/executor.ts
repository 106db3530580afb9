/**
 * The one way the mirror's modules talk to their database, whichever back end holds it: SQLite (the
 * embedded default, src/mirror/sql/sqlite.ts) or PostgreSQL (src/mirror/sql/postgres.ts).
 *
 * Statements are written once, with `?` placeholders, in the SQL both engines understand
 * (`INSERT ... ON CONFLICT`, `RETURNING`, `COUNT(*) FILTER (...)`); what differs lives in
 * src/mirror/sql/dialect.ts. Every call is asynchronous: PostgreSQL answers over the network.
 *
 * Transactions: `transaction(fn)` runs `fn` in one transaction and hands it an executor bound to
 * that transaction; every statement of the transaction must go through that executor (a statement
 * on the outer connection waits until the transaction ends: calling it from inside `fn` deadlocks).
 * A transaction body awaits only its executor: no network, no timers (on SQLite it holds the file's
 * write lock while it runs; PostgreSQL takes the mirror's lock with the body's first statement, so
 * the code of a body before its first statement may run while another transaction holds it).
 * Calling `transaction` on a transaction's executor joins it.
 */

/** Which engine runs the statements (src/mirror/sql/dialect.ts holds what differs between them). */
export type SqlDialect = 'sqlite' | 'postgres';

/** A value bound to a `?` placeholder. Booleans are stored as 0/1, objects as JSON text, by the caller. */
export type SqlValue = string | number | null;

/**
 * An array bound to one placeholder as a PostgreSQL `text[]` (read it as `?::text[]`; numbers come
 * as their decimal text, to cast where needed), so that a statement handles many rows through
 * `unnest` with a fixed text (src/mirror/sql/postgres-arrays.ts). PostgreSQL only: SQLite binds no
 * arrays (its driver throws a TypeError).
 */
export type SqlArray = readonly SqlValue[];

/** What a placeholder binds: a value, or (PostgreSQL only) an array of values. */
export type SqlParameter = SqlValue | SqlArray;

/** One row as the engine returns it: column name to value (INTEGER columns as numbers on both back ends). */
export type SqlRow = Record<string, unknown>;

/** What a statement changed. */
export interface RunResult {
  /** Rows inserted, updated or deleted by the statement. */
  changes: number;
}

/**
 * Statements run at once, synchronously: what a SQLite connection's `readNow` hands its reader
 * (better-sqlite3's calls are synchronous). Same rows as `get` and `all`.
 */
export interface SqlReaderNow {
  /** The first row of a query, or undefined when it returns none. @throws the driver's error */
  getNow<Row = SqlRow>(sql: string, parameters?: readonly SqlValue[]): Row | undefined;
  /** Every row of a query. @throws the driver's error */
  allNow<Row = SqlRow>(sql: string, parameters?: readonly SqlValue[]): Row[];
}

/**
 * Statements run at once, synchronously, inside a SQLite transaction (`SqlExecutor.writeNow`): a
 * page's per-row statements without a promise each. Same rows as `get` and `all`.
 */
export interface SqlWriterNow extends SqlReaderNow {
  /**
   * Runs one statement (INSERT, UPDATE, DELETE). `lastInsertRowid`: the rowid of the last row this
   * connection inserted (after an INSERT, its INTEGER PRIMARY KEY: a change row's `seq`).
   * @throws the driver's error
   */
  runNow(sql: string, parameters?: readonly SqlValue[]): RunResult & { lastInsertRowid: number };
  /**
   * `sql` prepared once, to run many times in this transaction (a page's upserts, its change rows):
   * each `run` is `runNow(sql, parameters)` without looking the statement up again.
   * @throws the driver's error when `sql` does not compile
   */
  statementNow(sql: string): StatementNow;
}

/** One statement of a SQLite transaction, run at once as often as needed (`SqlWriterNow.statementNow`). */
export interface StatementNow {
  /**
   * Runs the statement with `parameters` (one value per placeholder). `lastInsertRowid` as `runNow`'s.
   * @throws the driver's error; Error when the transaction has ended
   */
  run(parameters: readonly SqlValue[]): RunResult & { lastInsertRowid: number };
}

/** The texts `planOnce` marked (`isPlannedOnce`). */
const plannedOnce = new Set<string>();

/**
 * Marks `sql` as a statement whose best plan does not depend on the data or on the values bound:
 * a write of bound rows (`INSERT ... VALUES`, `INSERT ... SELECT FROM unnest(...)`, with or without
 * `ON CONFLICT` on a key), a function call (`SELECT pg_notify(...)`), a lookup by the whole primary
 * key of a table that holds a row per stream or lease. Inside a PostgreSQL transaction such a
 * statement runs on the plan its connection made the first time (src/mirror/sql/postgres.ts
 * "Plans"), instead of being planned again at every execution. Mark nothing whose plan should
 * change as a table grows (a scan, a range, a list of keys to look up). SQLite: no effect.
 * @returns `sql`, unchanged
 */
export function planOnce(sql: string): string {
  plannedOnce.add(sql);
  return sql;
}

/** True when `planOnce` marked `sql`. */
export function isPlannedOnce(sql: string): boolean {
  return plannedOnce.has(sql);
}

/** Runs statements on one connection or inside one transaction. */
export interface SqlExecutor {
  readonly dialect: SqlDialect;
  /** True when bound to an open transaction (statements go into it; `transaction` joins it). */
  readonly inTransaction: boolean;
  /**
   * Runs one statement (INSERT, UPDATE, DELETE, DDL).
   * @throws the driver's error (SqliteError, pg DatabaseError) when the statement fails
   */
  run(sql: string, parameters?: readonly SqlParameter[]): Promise<RunResult>;
  /** The first row of a query, or undefined when it returns none. */
  get<Row = SqlRow>(sql: string, parameters?: readonly SqlParameter[]): Promise<Row | undefined>;
  /** Every row of a query. */
  all<Row = SqlRow>(sql: string, parameters?: readonly SqlParameter[]): Promise<Row[]>;
  /** Runs several statements without parameters (migrations, DDL). */
  exec(sql: string): Promise<void>;
  /**
   * Runs a statement whose result the transaction's body does not read (an INSERT, UPDATE or DELETE
   * that must commit with it), in the order the body issues its statements. PostgreSQL, inside a
   * transaction: held, then sent ahead of the body's next statement or with the COMMIT, in the same
   * write, its values bound as parameters; nothing waits for its answer (no round trip of its own). A
   * failure fails the transaction: the body's next statement, or the commit, rejects with its error
   * and the transaction rolls back. Elsewhere (SQLite, or outside a transaction): runs at once.
   * @throws the driver's error when it runs at once and fails
   */
  runAtCommit(sql: string, parameters?: readonly SqlParameter[]): Promise<void>;
  /**
   * Runs a query whose rows the transaction's body does not wait for: `onRows` receives them (it
   * must not throw), at the latest before `transaction` resolves. PostgreSQL, inside a transaction:
   * sent at once without waiting for its answer, so the body's next statements, or its COMMIT, leave
   * in the same write (no round trip of its own); the commit waits for its answer and `onRows`, and a
   * failure fails the transaction. Elsewhere (SQLite, or outside a transaction): runs at once, and
   * `onRows` is called before the returned promise resolves.
   * @throws the driver's error when it runs at once and fails
   */
  allAtCommit<Row = SqlRow>(sql: string, parameters: readonly SqlParameter[], onRows: (rows: Row[]) => void): Promise<void>;
  /**
   * Runs `fn` in one transaction (SQLite: `BEGIN IMMEDIATE`, taking the write lock at once;
   * PostgreSQL: `BEGIN` and the schema's advisory lock sent with the body's first statement, in one
   * write) and commits when it resolves, rolls back when it throws (the error is rethrown). On an
   * executor already in a transaction, runs `fn` in it.
   */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  /**
   * Tells readers waiting on this mirror (`listen`) that change rows were appended: call after
   * appending them. PostgreSQL: inside a transaction, one `pg_notify` sent with its COMMIT (no extra
   * round trip, once per transaction however often called; nothing on rollback); outside one, sent
   * at once. SQLite: nothing (its readers poll).
   */
  changesAppended(): Promise<void>;
  /**
   * PostgreSQL connections only (absent on SQLite and on a transaction's executor): calls `onNotify`
   * whenever a transaction of this mirror (same schema, any process) that appended change rows
   * commits, through a connection of its own running `LISTEN`. A notification can be missed (the
   * listening connection lost and made again: `onNotify` is then called once), so a reader keeps
   * polling as the fallback. Resolves once listening.
   * @throws Error naming the masked URL when the listening connection cannot be made
   */
  listen?(channel: string, onNotify: () => void): Promise<Listening>;
  /**
   * SQLite connections only (absent on PostgreSQL and on a transaction's executor): runs `read`'s
   * statements at once, synchronously, when they can run without waiting, and gives its result;
   * undefined when they cannot (a transaction of this process holds the file's lock, or, on a
   * connection that never waits, another process's lock made a statement fail with SQLITE_BUSY):
   * the caller then reads through the asynchronous calls, which wait or try again. A hot read path
   * (the pull API's page) uses it to read without a promise per statement. `read` must not return
   * undefined, and must only read.
   * @throws whatever `read` throws, but SQLITE_BUSY on such a connection
   */
  readNow?<T>(read: (reader: SqlReaderNow) => T): T | undefined;
  /**
   * A SQLite transaction's executor only (absent on PostgreSQL and on a connection): its statements
   * run at once, synchronously (the transaction holds the file's lock), in the same transaction and
   * in the order run, mixed freely with the asynchronous calls. A page's per-row statements (the
   * records' upserts, the change rows) use it: no promise per row.
   */
  readonly writeNow?: SqlWriterNow;
}

/** A `listen` in progress: `close()` stops it (safe to call twice). */
export interface Listening {
  close(): Promise<void>;
}

/** The channel of `changesAppended` notifications (payload: the mirror's schema). */
export const CHANGES_CHANNEL = 'bizops_changes';

/**
 * The mirror's database does not answer, or the connection to it broke (PostgreSQL: refused,
 * terminated by an administrator or a failover, shut down, starting up, a session ended by its
 * `idle_in_transaction_session_timeout`). Transient: a transaction it interrupted rolled back (a
 * COMMIT cut off may have committed), and the same work may be tried again once the database
 * answers; the next statement takes a fresh connection. The sync engine waits for the database a
 * bounded time (docs/sync.md "When the database goes away"). The message names the mirror (a
 * PostgreSQL URL with its password masked) and the driver's reason.
 */
export class DatabaseUnavailableError extends Error {
  override name = 'DatabaseUnavailableError';
}

/** A connection to the mirror: an executor that can be closed. */
export interface SqlConnection extends SqlExecutor {
  /** Where the mirror lives, for messages: a file path, or a PostgreSQL URL with its password masked. */
  readonly location: string;
  /** Closes the connection (waits for a transaction in progress). Safe to call twice. */
  close(): Promise<void>;
}
