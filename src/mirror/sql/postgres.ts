/**
 * The PostgreSQL back end of the SQL executor (src/mirror/sql/executor.ts): a node-postgres pool
 * behind the asynchronous interface every mirror module uses (docs/mirror.md "PostgreSQL").
 *
 * - Statements are written with `?` placeholders; each is rewritten once to `$1..$n` (outside quoted
 *   strings, quoted identifiers and comments) and the rewrite cached per SQL text. A `?` is always a
 *   placeholder there: the jsonb operators `?`, `?|`, `?&` cannot be written (use `jsonb_exists`).
 * - A statement with parameters is a named prepared statement (`statementName`: one name per
 *   distinct text): each pooled connection parses it once, then only binds and executes it. Every
 *   execution is still planned with its parameters (`plan_cache_mode=force_custom_plan` on every
 *   pooled connection): a generic plan cached while a table was small would keep a sequential scan
 *   as it grows. A plan a migration made stale (a `SELECT *` of a table that gained a column) drops
 *   its connection, and a statement outside a transaction is sent again on another.
 * - Plans: inside a transaction, a statement marked `planOnce` (executor.ts: a write of bound rows,
 *   a function call, a primary-key lookup in a table of a row per stream) runs on its connection's
 *   cached generic plan, made once: the transaction switches `plan_cache_mode` to
 *   `force_generic_plan` before it (`SET LOCAL`, sent in the same write; after `BEGIN`, in its
 *   query) and back to `force_custom_plan` before the next statement with parameters that is not
 *   marked. A page commit plans none of its statements (planning them cost about an eighth of the
 *   server's CPU in a backfill). The setting ends with the transaction.
 * - An array parameter (executor.ts `SqlArray`) is bound as a binary `text[]`
 *   (postgres-arrays.ts): a page's rows go in one statement through `unnest`, with a fixed text.
 * - One schema per mirror (postgres-location.ts): every pooled connection starts with its
 *   `search_path` set to it, so the statements name tables unqualified, as on SQLite.
 * - `int8` (BIGINT, COUNT(*)) and `numeric` (SUM of a bigint) come back as JS numbers, like SQLite's
 *   INTEGER, through type parsers of this pool only (the driver's global ones are left alone).
 *   The mirror's integers (cents, seqs, counts) stay far below 2^53.
 * - A transaction holds one pooled connection from BEGIN to COMMIT, and first takes a
 *   transaction-scoped advisory lock of the mirror's schema: writing transactions of every process
 *   run one at a time per mirror, as SQLite's `BEGIN IMMEDIATE` makes them (a body that reads then
 *   writes, e.g. a record and its previous version, sees no other transaction's commit in between).
 *   A statement outside a transaction runs on any free pooled connection, at once.
 * - Pipelining: the pooled connections run in the driver's pipeline mode (`pipeline: true`): a
 *   statement is sent without waiting for the answers of those sent before it, and each is answered
 *   in order. A transaction sends its opening (`BEGIN`, the advisory lock) with its first statement,
 *   its `runAtCommit` statements with its next statement or its COMMIT, each batch in one write
 *   (`PostgresTransaction`): none costs a round trip of its own, and every value is a bound parameter.
 * - Wake-ups: a transaction that appended change rows (`changesAppended`) sends
 *   `SELECT pg_notify($1, $2)` (channel `bizops_changes`, its schema) with its COMMIT; `listen` hands
 *   those notifications to readers (`changes --follow`, the webhook dispatcher) through a connection
 *   of its own (postgres-listen.ts). Readers still poll: a notification only wakes them early.
 * - Errors: a connection that cannot be made (refused, unknown host, authentication, missing
 *   database) rejects with one message naming the URL with its password masked; the password never
 *   appears in a message. A failing statement rejects with the driver's `DatabaseError`.
 */
import pg from 'pg';
import { CHANGES_CHANNEL, DatabaseUnavailableError, isPlannedOnce, planOnce, type Listening, type RunResult, type SqlConnection, type SqlExecutor, type SqlArray, type SqlParameter, type SqlRow } from './executor.ts';
import { binaryTextArray } from './postgres-arrays.ts';
import { parsePostgresLocation, quoteIdentifier } from './postgres-location.ts';
import { listenOnPostgres } from './postgres-listen.ts';

/** `int8` and `numeric` as numbers, for this back end's pools only. */
const NUMBER_TYPES = new pg.TypeOverrides();
NUMBER_TYPES.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));
NUMBER_TYPES.setTypeParser(pg.types.builtins.NUMERIC, (value: string) => Number(value));

/**
 * The first key of the advisory locks this project takes (`pg_advisory_xact_lock(class, hashtext(schema))`);
 * the second is the schema's hash, so mirrors in one database do not wait on each other.
 */
export const ADVISORY_LOCK_CLASS = {
  /** Held by every writing transaction (see the module header). */
  transaction: 0x62697a74,
  /** Held while creating the schema and migrating it (src/mirror/postgres-migrate.ts). */
  migration: 0x62697a6d,
} as const;

/** A statement with `?` placeholders and the values bound to them; without `parameters`, a simple query (no placeholders, several statements allowed). */
export interface BoundStatement {
  sql: string;
  parameters?: readonly SqlParameter[];
}

/** The statement taking the transaction-scoped advisory lock `lockClass` of `schema` (both bound as parameters). */
export function advisoryLockStatement(lockClass: number, schema: string): BoundStatement {
  return { sql: ADVISORY_LOCK, parameters: [lockClass, schema] };
}

/** `advisoryLockStatement`'s text: a function call, planned once (executor.ts `planOnce`). */
const ADVISORY_LOCK = planOnce('SELECT pg_advisory_xact_lock(?::integer, hashtext(?::text))');

/** The statement waking the readers of `schema`'s changes (`listen`): `pg_notify` on `CHANGES_CHANNEL`, the schema as its payload. */
function notifyStatement(schema: string): BoundStatement {
  return { sql: NOTIFY, parameters: [CHANGES_CHANNEL, schema] };
}

/** `notifyStatement`'s text: a function call, planned once (executor.ts `planOnce`). */
const NOTIFY = planOnce('SELECT pg_notify(?::text, ?::text)');

const rewrites = new Map<string, string>();

/**
 * `sql` with its `?` placeholders numbered `$1..$n`, skipping string literals (`'...'`, `E'...'`),
 * quoted identifiers, dollar-quoted strings and comments. Cached per text (statements are a finite
 * set written in the code; the cache is emptied past 2000 texts in case some are built at run time).
 */
export function numberPlaceholders(sql: string): string {
  const cached = rewrites.get(sql);
  if (cached !== undefined) return cached;
  const out = replacePlaceholders(sql, (index) => `$${index + 1}`);
  if (rewrites.size >= 2000) rewrites.clear();
  rewrites.set(sql, out);
  return out;
}

/** `sql` with its `?` placeholders (outside literals, quoted identifiers and comments) replaced by `replace(index)`, index from 0. */
function replacePlaceholders(sql: string, replace: (index: number) => string): string {
  let out = '';
  let number = 0;
  let index = 0;
  const length = sql.length;
  while (index < length) {
    const char = sql[index]!;
    const next = sql[index + 1];
    if (char === '?') {
      out += replace(number++);
      index += 1;
    } else if (char === "'") {
      const escapes = index > 0 && /[eE]/.test(sql[index - 1]!) && (index < 2 || !/[A-Za-z0-9_$]/.test(sql[index - 2]!));
      let end = index + 1;
      while (end < length) {
        if (escapes && sql[end] === '\\') end += 2;
        else if (sql[end] === "'") {
          if (sql[end + 1] === "'") end += 2;
          else break;
        } else end += 1;
      }
      out += sql.slice(index, end + 1);
      index = end + 1;
    } else if (char === '"') {
      const end = sql.indexOf('"', index + 1);
      const stop = end === -1 ? length : end + 1;
      out += sql.slice(index, stop);
      index = stop;
    } else if (char === '-' && next === '-') {
      const end = sql.indexOf('\n', index);
      const stop = end === -1 ? length : end + 1;
      out += sql.slice(index, stop);
      index = stop;
    } else if (char === '/' && next === '*') {
      let depth = 1;
      let end = index + 2;
      while (end < length && depth > 0) {
        const pair = sql.slice(end, end + 2);
        if (pair === '/*' || pair === '*/') {
          depth += pair === '/*' ? 1 : -1;
          end += 2;
        } else end += 1;
      }
      out += sql.slice(index, end);
      index = end;
    } else if (char === '$' && (index === 0 || !/[A-Za-z0-9_]/.test(sql[index - 1]!))) {
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(index));
      if (tag) {
        const end = sql.indexOf(tag[0], index + tag[0].length);
        const stop = end === -1 ? length : end + tag[0].length;
        out += sql.slice(index, stop);
        index = stop;
      } else {
        out += char;
        index += 1;
      }
    } else {
      out += char;
      index += 1;
    }
  }
  return out;
}

/** Network error codes of a socket that could not connect or was cut. */
const NETWORK_CODES = /^(ECONN|ETIMEDOUT|ENOTFOUND|EAI_|EPIPE|EHOSTUNREACH|ENETUNREACH)/;

/**
 * SQLSTATEs of a database that is away for now: 08 connection exception; 57P01 admin shutdown (also
 * `pg_terminate_backend`), 57P02 crash shutdown, 57P03 cannot connect now (starting up); 25P03 a
 * session ended by `idle_in_transaction_session_timeout`; 53300 too many connections.
 */
function transientCode(code: string): boolean {
  return code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || code === '25P03' || code === '53300';
}

/** The driver's words for a connection that is gone (no SQLSTATE: the socket closed). */
const LOST_CONNECTION = /connection terminated|not queryable|connection error|terminating connection/i;

/** True when `error` means the database is away for now (refused, cut, shutting down, starting up): worth trying again. */
function isTransientError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error instanceof pg.DatabaseError) return transientCode(error.code ?? '');
  const code = (error as NodeJS.ErrnoException).code;
  return error instanceof AggregateError || (typeof code === 'string' && NETWORK_CODES.test(code)) || LOST_CONNECTION.test(error.message);
}

/** True for an error of a connection that could not be made or was lost (not of a statement). */
function isConnectionError(error: unknown): boolean {
  if (isTransientError(error)) return true;
  if (!(error instanceof pg.DatabaseError)) return false;
  // 28: invalid authorization; 3D000: no such database.
  const code = error.code ?? '';
  return code.startsWith('28') || code === '3D000';
}

/**
 * Most distinct statement texts that get a prepared-statement name (`statementName`): every text
 * written in the code, with room to spare; texts built at run time past it run unnamed, so that no
 * connection holds an unbounded number of prepared statements.
 */
export const NAMED_STATEMENTS_MAX = 2000;

const statementNames = new Map<string, string>();

/**
 * The prepared-statement name of the statement text `sql` (`$1..$n` already numbered): one name per
 * distinct text in this process (`bz1`, `bz2`, ...), so that a pooled connection parses and plans
 * each statement once and then only binds and executes it. Undefined past `NAMED_STATEMENTS_MAX`
 * texts (the statement then runs unnamed, parsed every time).
 */
export function statementName(sql: string): string | undefined {
  let name = statementNames.get(sql);
  if (name === undefined && statementNames.size < NAMED_STATEMENTS_MAX) statementNames.set(sql, (name = `bz${statementNames.size + 1}`));
  return name;
}

/**
 * True for the server's refusal to run a prepared statement whose result columns changed since it
 * was parsed (a migration of another process altered a table a `SELECT *` reads: SQLSTATE 0A000,
 * "cached plan must not change result type"). The connection holding it is destroyed at release;
 * a statement outside a transaction is sent again on a fresh connection.
 */
function isStalePlanError(error: unknown): boolean {
  return error instanceof pg.DatabaseError && error.code === '0A000' && /cached plan must not change result type/.test(error.message);
}

/** What the two executors share: where the mirror is, and how to word an error. */
interface PostgresTarget {
  readonly location: string;
  readonly password: string;
}

/** `error`'s message with the password masked, should a driver ever echo it. */
function withoutPassword(message: string, password: string): string {
  return password === '' ? message : message.replaceAll(password, '***');
}

/**
 * The error of a connection that could not be made (`phase` `connect`) or broke under a statement
 * (`lost`): one line naming the masked URL, the driver's reason (every address tried, for a refused
 * connection) and the cause kept. A transient one (the database away for now) is a
 * `DatabaseUnavailableError`: the work may be tried again.
 */
export function connectionError(target: PostgresTarget, error: unknown, phase: 'connect' | 'lost' = 'connect'): Error {
  const reasons =
    error instanceof AggregateError && error.errors.length > 0
      ? [...new Set(error.errors.map((inner: unknown) => (inner instanceof Error ? inner.message : String(inner))))].join('; ')
      : error instanceof Error
        ? error.message || (error as NodeJS.ErrnoException).code || error.name
        : String(error);
  const what = phase === 'connect' ? `cannot connect to the PostgreSQL mirror at ${target.location}` : `lost the connection to the PostgreSQL mirror at ${target.location}`;
  const message = `${what}: ${withoutPassword(reasons, target.password)}`;
  return isTransientError(error) ? new DatabaseUnavailableError(message, { cause: error }) : new Error(message, { cause: error });
}

/**
 * The first error of each pooled connection, kept from the moment it connected (`keepConnectionErrors`).
 * The pool listens only to its idle clients: a connection that breaks while checked out (its backend
 * terminated between two statements of a transaction), or in the instant between a new connection's
 * checkout and its first use (the server's termination read in the same chunk as its ReadyForQuery),
 * would otherwise emit an unhandled `error` and end the process.
 */
const connectionErrors = new WeakMap<pg.Client, Error>();

/** Listens to every connection of `pool` from the moment it connects (its `connect` event), keeping its first error (`connectionErrors`). */
function keepConnectionErrors(pool: pg.Pool): void {
  pool.on('connect', (client) => {
    client.on('error', (error: Error) => {
      if (!connectionErrors.has(client)) connectionErrors.set(client, error);
    });
  });
}

/**
 * A pooled client checked out of the pool. An error its connection broke with (`connectionErrors`)
 * is kept: the next statement fails with it (a `DatabaseUnavailableError`), and the client is
 * destroyed at release instead of going back.
 */
class CheckedOutClient {
  readonly client: pg.PoolClient;

  constructor(client: pg.PoolClient) {
    this.client = client;
  }

  /** The error the connection broke with, if it did. */
  get lost(): Error | undefined {
    return connectionErrors.get(this.client);
  }

  /** Set when a prepared statement of this connection went stale (`isStalePlanError`): destroyed at release. */
  stale: Error | undefined;

  /** True while `holdWrites` holds the socket's writes. */
  #holding = false;

  /**
   * Holds the socket's writes (`cork`) until this turn of the event loop ends (`setImmediate`):
   * the statements sent meanwhile (a transaction's opening, its first statement, a statement the
   * body sends without awaiting it and the next one) leave in one write instead of one each.
   */
  holdWrites(): void {
    if (this.#holding) return;
    this.#holding = true;
    const stream = this.client.connection.stream;
    stream.cork();
    setImmediate(() => {
      this.#holding = false;
      stream.uncork();
    });
  }

  /**
   * Sends one query; a connection already lost fails at once with its error. With `parameters`, the
   * statement is a named prepared one (`statementName`): parsed once per connection, then only bound
   * and executed. Without, a simple query (several statements allowed).
   */
  async query(sql: string, parameters: readonly SqlParameter[] | undefined): Promise<pg.QueryResult> {
    if (this.lost) throw this.lost;
    if (parameters === undefined) return this.client.query(sql);
    const name = statementName(sql);
    try {
      const values = parameters.map((value) => (Array.isArray(value) ? binaryTextArray(value as SqlArray) : value));
      return await this.client.query(name === undefined ? { text: sql, values } : { name, text: sql, values });
    } catch (error) {
      if (isStalePlanError(error)) this.stale ??= error as Error;
      throw error;
    }
  }

  /** Gives the client back; `broken` (or a lost or stale connection) destroys it instead. */
  release(broken?: Error): void {
    this.client.release(broken ?? this.lost ?? this.stale);
  }
}

/**
 * `run`, `get`, `all` and `exec` of both executors (a transaction's and the pool's), on the one
 * `query` each provides: the driver's result read.
 */
abstract class PostgresStatements {
  /**
   * Sends one query: `sql` with `?` placeholders and its `parameters` (numbered by `numberPlaceholders`),
   * or, with `parameters` undefined, a simple query (several statements allowed, no placeholders).
   */
  protected abstract query(sql: string, parameters: readonly SqlParameter[] | undefined): Promise<pg.QueryResult>;

  async run(sql: string, parameters?: readonly SqlParameter[]): Promise<RunResult> {
    return { changes: (await this.query(sql, parameters)).rowCount ?? 0 };
  }

  async get<Row = SqlRow>(sql: string, parameters?: readonly SqlParameter[]): Promise<Row | undefined> {
    return (await this.query(sql, parameters)).rows[0] as Row | undefined;
  }

  async all<Row = SqlRow>(sql: string, parameters?: readonly SqlParameter[]): Promise<Row[]> {
    return (await this.query(sql, parameters)).rows as Row[];
  }

  /** Runs several statements without parameters (one simple query). */
  async exec(sql: string): Promise<void> {
    await this.query(sql, undefined);
  }
}

/**
 * Statements of one transaction, on the pooled client that holds it (a connection in pipeline mode:
 * module header). No statement but the body's awaited ones costs a round trip (docs/mirror.md
 * "Round trips per page"):
 * - The opening (`BEGIN`, then the schema's advisory lock) is sent with the body's first statement,
 *   without waiting for its answers.
 * - `runAtCommit` statements are held until the body's next statement (sent ahead of it) or the
 *   COMMIT: they run in the order the body issued them, and nothing waits for them.
 * - The COMMIT goes with the statements still held and the `pg_notify`.
 * - What is sent in one turn of the event loop leaves in one write (`CheckedOutClient.holdWrites`):
 *   a statement the body does not await yet (a lease confirmation) and the next one share it.
 * Every value is a bound parameter. A statement sent unawaited that fails aborts the transaction on
 * the server, so every later statement fails too: the body's next statement, or the commit, rejects
 * with the first failure, not with the "transaction is aborted" that follows it.
 */
class PostgresTransaction extends PostgresStatements implements SqlExecutor {
  readonly dialect = 'postgres' as const;
  readonly inTransaction = true;
  readonly #client: CheckedOutClient;
  readonly #target: PostgresTarget;
  /** The opening statements (`BEGIN`, the advisory lock), until sent. */
  readonly #opening: readonly BoundStatement[];
  /** True once the opening was sent: a transaction is open on the server. */
  begun = false;
  /** `runAtCommit` statements not sent yet, in order. */
  readonly #held: BoundStatement[] = [];
  /** The answers of every statement sent, in the order sent (the commit reads them: `#firstFailure`). */
  readonly #answers: Promise<pg.QueryResult>[] = [];
  /** The `allAtCommit` callbacks' completions, which the commit waits for. */
  readonly #atCommit: Promise<void>[] = [];
  /** Set when the transaction has ended: later use is a bug. */
  ended = false;
  /** Set by `changesAppended`: the COMMIT goes with a `pg_notify`. */
  notifyAtCommit = false;
  /** The `plan_cache_mode` the statements sent so far left in force (module header "Plans"). */
  #plans: 'custom' | 'generic' = 'custom';

  constructor(client: CheckedOutClient, target: PostgresTarget, opening: readonly BoundStatement[]) {
    super();
    this.#client = client;
    this.#target = target;
    this.#opening = opening;
  }

  protected async query(sql: string, parameters: readonly SqlParameter[] | undefined): Promise<pg.QueryResult> {
    if (this.ended) throw new Error('this transaction has already ended: use the connection, or run the statement inside the transaction');
    const answer = this.#send({ sql, parameters });
    try {
      return await answer;
    } catch (error) {
      throw await this.#firstFailure(error);
    }
  }

  /**
   * Sends, in one write, the opening (when not sent yet), the held statements, then `last`; waits for
   * nothing.
   * @returns the answer to `last`
   */
  #send(last: BoundStatement): Promise<pg.QueryResult> {
    const batch: BoundStatement[] = [];
    if (!this.begun) for (const statement of this.#opening) this.#planned(batch, statement);
    this.begun = true;
    for (const statement of this.#held.splice(0)) this.#planned(batch, statement);
    this.#planned(batch, last);
    this.#client.holdWrites();
    let answer: Promise<pg.QueryResult> | undefined;
    for (const statement of batch) {
      answer = this.#client.query(numbered(statement), statement.parameters);
      // Read by `#firstFailure` or at the commit; never an unhandled rejection meanwhile.
      answer.catch(() => {});
      this.#answers.push(answer);
    }
    return answer!;
  }

  /**
   * Appends `statement` to `batch`, preceded by the `SET LOCAL plan_cache_mode` it needs when it
   * has parameters and its plan is not the kind in force (module header "Plans"); a switch right
   * after a statement without parameters (the opening's `BEGIN`) joins that statement's query.
   */
  #planned(batch: BoundStatement[], statement: BoundStatement): void {
    if (statement.parameters !== undefined && statement.parameters.length > 0) {
      const plans = isPlannedOnce(statement.sql) ? 'generic' : 'custom';
      if (plans !== this.#plans) {
        this.#plans = plans;
        const switched = `SET LOCAL plan_cache_mode = ${plans === 'generic' ? 'force_generic_plan' : 'force_custom_plan'}`;
        const previous = batch.at(-1);
        if (previous !== undefined && previous.parameters === undefined && previous.sql === 'BEGIN') batch[batch.length - 1] = { sql: `BEGIN; ${switched}` };
        else batch.push({ sql: switched });
      }
    }
    batch.push(statement);
  }

  /** The error to report for `error`: the first failure of a statement sent before it, else `error`; a lost connection's as `connectionError`. */
  async #firstFailure(error: unknown): Promise<unknown> {
    let first = error;
    for (const answer of this.#answers) {
      try {
        await answer;
      } catch (earlier) {
        first = earlier;
        break;
      }
    }
    return isConnectionError(first) ? connectionError(this.#target, first, 'lost') : first;
  }

  /** Inside a transaction: joins it. */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return fn(this);
  }

  /** The COMMIT will carry one `pg_notify` (however often this is called). */
  changesAppended(): Promise<void> {
    this.notifyAtCommit = true;
    return Promise.resolve();
  }

  /** Held for the body's next statement or the COMMIT (class comment). */
  runAtCommit(sql: string, parameters: readonly SqlParameter[] = []): Promise<void> {
    if (this.ended) return Promise.reject(new Error('this transaction has already ended: use the connection, or run the statement inside the transaction'));
    this.#held.push({ sql, parameters });
    return Promise.resolve();
  }

  /** Sent at once, not awaited: the commit waits for its answer and `onRows` (executor.ts `allAtCommit`). */
  allAtCommit<Row = SqlRow>(sql: string, parameters: readonly SqlParameter[], onRows: (rows: Row[]) => void): Promise<void> {
    if (this.ended) return Promise.reject(new Error('this transaction has already ended: use the connection, or run the statement inside the transaction'));
    const done = this.#send({ sql, parameters }).then((result) => onRows(result.rows as Row[]));
    done.catch(() => {});
    this.#atCommit.push(done);
    return Promise.resolve();
  }

  /**
   * Commits: sends the opening when no statement sent it yet, the held statements, the notification
   * and the COMMIT in one write, and waits for every answer not read yet and every `allAtCommit`
   * callback. Sends nothing when the body sent and held nothing (no transaction was begun on the server).
   * @throws the first failure of a statement of the transaction (the server then rolled it back)
   */
  async commit(schema: string): Promise<void> {
    this.ended = true;
    if (!this.begun && this.#held.length === 0 && !this.notifyAtCommit) return;
    if (this.notifyAtCommit) this.#held.push(notifyStatement(schema));
    const answer = this.#send({ sql: 'COMMIT' });
    try {
      await answer;
    } catch (error) {
      throw await this.#firstFailure(error);
    }
    // A COMMIT of a transaction a statement aborted answers ROLLBACK, not an error: report that statement's.
    const failure = await this.#firstFailure(undefined);
    if (failure !== undefined) throw failure;
    if ((await answer).command !== 'COMMIT') throw new Error('the transaction was rolled back: one of its statements failed');
    for (const done of this.#atCommit) await done;
  }
}

/** `statement`'s text, its placeholders numbered `$1..$n` when it has parameters. */
function numbered(statement: BoundStatement): string {
  return statement.parameters === undefined ? statement.sql : numberPlaceholders(statement.sql);
}

/** Options of `openPostgresConnection`. */
export interface PostgresConnectionOptions {
  /**
   * Read-only (downstream readers, `changes`, `status`): the schema must exist (it is not created),
   * every transaction is `READ ONLY` (`default_transaction_read_only`), no advisory lock is taken.
   */
  readonly?: boolean;
  /** Most pooled connections at once (default 10). */
  maxConnections?: number;
  /**
   * `idle_in_transaction_session_timeout` of every pooled connection, ms (0: none). Default
   * `DEFAULT_IDLE_IN_TRANSACTION_MS`; the daemon and the commands give a third of `sync.leaseSeconds`.
   * A process paused (SIGSTOP, a VM pause) inside a transaction holds the mirror's transaction lock:
   * the server ends its session after this long, so the other processes go on and its leases lapse
   * as they would on SQLite (docs/operations.md "Running two daemons (replicas)"). A transaction body
   * awaits only its statements, so a live one is never idle that long. The URL's `options` may set
   * another value (`?options=-c idle_in_transaction_session_timeout=...`).
   */
  idleInTransactionTimeoutMs?: number;
}

/** Default of `PostgresConnectionOptions.idleInTransactionTimeoutMs`: a third of the default lease (30 s). */
export const DEFAULT_IDLE_IN_TRANSACTION_MS = 10_000;

/**
 * A connection to one PostgreSQL mirror (one schema of one database): a pool of connections behind
 * the executor interface (module header). Build it with `openPostgresConnection(url)`.
 */
export class PostgresConnection extends PostgresStatements implements SqlConnection, PostgresTarget {
  readonly dialect = 'postgres' as const;
  readonly inTransaction = false;
  /** The URL with its password masked (`postgres://user:***@host/db?schema=acme`). */
  readonly location: string;
  /** The schema holding the mirror's tables. */
  readonly schema: string;
  readonly readonly: boolean;
  readonly password: string;
  readonly #pool: pg.Pool;
  /** The pool's connection settings, for the listening connections of `listen`. */
  readonly #clientConfig: pg.ClientConfig;
  readonly #listening = new Set<Listening>();
  #closed = false;

  /**
   * A pool for `url`; no connection is made yet (`openPostgresConnection` makes one and prepares
   * the schema).
   * @throws Error naming the masked URL when it is not a valid PostgreSQL mirror URL
   */
  constructor(url: string, options: PostgresConnectionOptions = {}) {
    super();
    const target = parsePostgresLocation(url);
    this.location = target.location;
    this.schema = target.schema;
    this.password = target.password;
    this.readonly = options.readonly ?? false;
    // The driver lets the URL's `options` win over ours: move them over so search_path stays set.
    const connection = new URL(target.connectionString);
    const urlOptions = connection.searchParams.get('options');
    connection.searchParams.delete('options');
    const idleMs = Math.max(0, Math.round(options.idleInTransactionTimeoutMs ?? DEFAULT_IDLE_IN_TRANSACTION_MS));
    const startup = [
      `-c search_path=${quoteIdentifier(this.schema)}`,
      ...(this.readonly ? ['-c default_transaction_read_only=on'] : []),
      `-c idle_in_transaction_session_timeout=${idleMs}`,
      // Named statements are parsed once per connection but planned at every execution: a generic
      // plan cached while a table was small (a sequential scan) would stay as it grows.
      '-c plan_cache_mode=force_custom_plan',
      ...(urlOptions ? [urlOptions] : []),
    ];
    this.#clientConfig = { connectionString: connection.toString(), options: startup.join(' '), application_name: 'bizops-sync', types: NUMBER_TYPES };
    // Pipeline mode: a transaction sends statements without waiting for earlier answers (PostgresTransaction).
    this.#pool = new pg.Pool({ ...this.#clientConfig, pipeline: true, max: options.maxConnections ?? 10 });
    // An idle pooled connection lost (the server restarted): the pool drops it and the next
    // statement connects afresh. Without a listener the error would end the process.
    this.#pool.on('error', () => {});
    keepConnectionErrors(this.#pool);
  }

  /**
   * A pooled client, checked out with an error listener (`CheckedOutClient`), or an error naming the
   * masked URL when no connection can be made.
   * @throws DatabaseUnavailableError `cannot connect to the PostgreSQL mirror at <url>: <reason>`
   *   when the server does not answer (Error when it refuses the login or has no such database)
   */
  async #checkOut(): Promise<CheckedOutClient> {
    if (this.#closed) throw new Error(`the PostgreSQL mirror connection to ${this.location} is closed`);
    try {
      return new CheckedOutClient(await this.#pool.connect());
    } catch (error) {
      throw connectionError(this, error);
    }
  }

  /**
   * Runs one query on a pooled client; a client whose connection broke is dropped from the pool. A
   * prepared statement gone stale (`isStalePlanError`) is sent once more, on another connection.
   */
  protected async query(sql: string, parameters: readonly SqlParameter[] | undefined): Promise<pg.QueryResult> {
    try {
      return await this.#queryOnce(sql, parameters);
    } catch (error) {
      if (isStalePlanError(error)) return this.#queryOnce(sql, parameters);
      throw error;
    }
  }

  async #queryOnce(sql: string, parameters: readonly SqlParameter[] | undefined): Promise<pg.QueryResult> {
    const client = await this.#checkOut();
    let broken: Error | undefined;
    try {
      return await client.query(parameters === undefined ? sql : numberPlaceholders(sql), parameters);
    } catch (error) {
      if (!(error instanceof pg.DatabaseError) || isConnectionError(error)) broken = error as Error;
      if (isConnectionError(error)) throw connectionError(this, error, 'lost');
      throw error;
    } finally {
      client.release(broken);
    }
  }

  /**
   * Runs `fn` in one transaction on one pooled connection, after taking the mirror's transaction
   * lock (module header; not on a read-only connection). Commits when `fn` resolves, rolls back when
   * it throws (the error is rethrown).
   * @throws DatabaseUnavailableError naming the masked URL when no connection can be made or it
   *   broke (the transaction rolled back; a COMMIT cut off may have committed); the driver's
   *   `DatabaseError` when a statement or the commit fails; whatever `fn` throws
   */
  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const client = await this.#checkOut();
    // Sent with the body's first statement (PostgresTransaction): BEGIN costs no round trip of its own.
    const opening: BoundStatement[] = [{ sql: 'BEGIN' }, ...(this.readonly ? [] : [advisoryLockStatement(ADVISORY_LOCK_CLASS.transaction, this.schema)])];
    const tx = new PostgresTransaction(client, this, opening);
    let broken: Error | undefined;
    try {
      const result = await fn(tx);
      // One write: the statements held for it, and the notification, delivered when (and only if) the COMMIT succeeds.
      await tx.commit(this.schema);
      return result;
    } catch (error) {
      tx.ended = true;
      if (client.lost) broken = client.lost;
      else if (tx.begun) {
        try {
          await client.query('ROLLBACK', undefined);
        } catch (rollbackError) {
          broken = rollbackError as Error;
        }
      }
      throw error;
    } finally {
      tx.ended = true;
      client.release(broken);
    }
  }

  /** Outside a transaction: runs at once (executor.ts `runAtCommit`). */
  async runAtCommit(sql: string, parameters?: readonly SqlParameter[]): Promise<void> {
    await this.run(sql, parameters);
  }

  /** Outside a transaction: runs at once, then `onRows` (executor.ts `allAtCommit`). */
  async allAtCommit<Row = SqlRow>(sql: string, parameters: readonly SqlParameter[], onRows: (rows: Row[]) => void): Promise<void> {
    onRows(await this.all<Row>(sql, parameters));
  }

  /** Outside a transaction (a statement that appended change rows committed on its own): notifies at once. */
  async changesAppended(): Promise<void> {
    const notify = notifyStatement(this.schema);
    await this.query(notify.sql, notify.parameters);
  }

  /**
   * Calls `onNotify` on every notification on `channel` from a transaction of this mirror (payload:
   * its schema), through a connection of its own (postgres-listen.ts; executor.ts `listen`). Closed
   * with the connection at the latest.
   * @throws Error naming the masked URL when the listening connection cannot be made
   */
  async listen(channel: string, onNotify: () => void): Promise<Listening> {
    if (this.#closed) throw new Error(`the PostgreSQL mirror connection to ${this.location} is closed`);
    const listening = await listenOnPostgres({
      client: this.#clientConfig,
      channel,
      payload: this.schema,
      onNotify,
      connectionError: (error) => connectionError(this, error),
    });
    this.#listening.add(listening);
    return {
      close: async () => {
        this.#listening.delete(listening);
        await listening.close();
      },
    };
  }

  /** Closes the listening connections, then every pooled connection once the transactions in progress have ended. Safe to call twice. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const listening of [...this.#listening]) await listening.close();
    this.#listening.clear();
    await this.#pool.end();
  }
}

/**
 * Opens the PostgreSQL mirror at `url` (`postgres://user:password@host:5432/database?schema=acme`):
 * connects once (so a wrong URL fails here, with a clear message), and creates the schema when it is
 * missing (not when read-only), under the migration lock so that two processes opening at once do
 * not both create it. Migrating is src/mirror/postgres-migrate.ts's job.
 * @throws Error naming the masked URL: not a PostgreSQL URL, bad schema name, no connection, or
 *   (read-only) no such schema
 */
export async function openPostgresConnection(url: string, options: PostgresConnectionOptions = {}): Promise<PostgresConnection> {
  const connection = new PostgresConnection(url, options);
  try {
    const exists = async (executor: SqlExecutor) => (await executor.get('SELECT 1 AS found FROM pg_namespace WHERE nspname = ?', [connection.schema])) !== undefined;
    if (!(await exists(connection))) {
      if (connection.readonly) throw new Error(`the PostgreSQL mirror at ${connection.location} has no schema ${connection.schema}: no mirror there yet`);
      await connection.transaction(async (tx) => {
        const lock = advisoryLockStatement(ADVISORY_LOCK_CLASS.migration, connection.schema);
        await tx.run(lock.sql, lock.parameters);
        if (!(await exists(tx))) await tx.exec(`CREATE SCHEMA ${quoteIdentifier(connection.schema)}`);
      });
    }
  } catch (error) {
    await connection.close();
    throw error;
  }
  return connection;
}
