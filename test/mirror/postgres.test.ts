/**
 * The mirror on PostgreSQL (docs/mirror.md "PostgreSQL"): the same tables as a SQLite file after the
 * same migrations, a version newer than this build refused, migrating from two openers at once,
 * stream tables checked with the SQLite side's messages, connection errors naming the URL without
 * its password, read-only openers.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openMirror } from '../../src/mirror/database.ts';
import { MIGRATIONS } from '../../src/mirror/migrations/index.ts';
import { openMirrorConnection } from '../../src/mirror/open.ts';
import { migratePostgres, POSTGRES_SCHEMA_VERSION, postgresSchemaVersion } from '../../src/mirror/postgres-migrate.ts';
import { planOnce, type SqlConnection, type SqlExecutor } from '../../src/mirror/sql/executor.ts';
import { parsePostgresLocation } from '../../src/mirror/sql/postgres-location.ts';
import net from 'node:net';
import pg from 'pg';
import { numberPlaceholders, openPostgresConnection, statementName, type PostgresConnection } from '../../src/mirror/sql/postgres.ts';
import { postgresColumns } from '../../src/mirror/stream-tables.ts';
import { column, defineStream, listRequest } from '../../src/streams/define-stream.ts';
import { STREAM_LIST } from '../../src/streams/definitions.ts';
import { BACKENDS, freshPostgresUrl, freshSqlitePath, onTestServer, removeTestMirrors, TEST_POSTGRES_URL } from '../sql-backends.ts';
import { postgresSchema, sqliteSchema } from './schema-description.ts';

const opened: SqlConnection[] = [];
afterEach(async () => {
  for (const connection of opened.splice(0)) await connection.close();
  await removeTestMirrors();
});

async function openTracked(location: string, options: Parameters<typeof openMirrorConnection>[1] = {}): Promise<SqlConnection> {
  const connection = await openMirrorConnection(location, options);
  opened.push(connection);
  return connection;
}

describe('the mirror schema on PostgreSQL', () => {
  it('has every table, column, key, default and index of a SQLite file after the same migrations', async () => {
    const sqlitePath = freshSqlitePath();
    const sqlite = openMirror(sqlitePath);
    const sqliteIndexes = (sqlite.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name").all() as { name: string }[]).map((row) => row.name);
    const userVersion = sqlite.pragma('user_version', { simple: true });
    sqlite.close();

    const db = await openTracked(await freshPostgresUrl());
    const { schema_version: versionTable, ...tables } = await postgresSchema(db);
    const expected = sqliteSchema(sqlitePath);
    expect(Object.keys(tables).sort()).toEqual(Object.keys(expected).sort());
    expect(tables).toEqual(expected);
    expect(versionTable).toEqual(['version INTEGER NOT NULL PK', 'name TEXT NOT NULL', 'applied_at TEXT NOT NULL']);
    const indexes = await db.all<{ name: string }>(
      "SELECT indexname AS name FROM pg_indexes WHERE schemaname = current_schema() AND indexname NOT LIKE '%\\_pkey' AND indexname NOT LIKE '%\\_key' ORDER BY indexname",
    );
    expect(indexes.map((row) => row.name)).toEqual(sqliteIndexes);
    expect(await postgresSchemaVersion(db)).toBe(userVersion);
    expect(POSTGRES_SCHEMA_VERSION).toBe(userVersion);
    expect((await db.all<{ version: number; name: string }>('SELECT version, name FROM schema_version ORDER BY version')).map((row) => row.version)).toEqual(MIGRATIONS.map((m) => m.version));
    // The partial unique index means what SQLite's does: one write per created record of those kinds.
    const write = (id: string, kind: string) =>
      db.run("INSERT INTO writes (id, idempotency_key, kind, status, payload, payload_hash, remote_id, created_at, updated_at) VALUES (?, ?, ?, 'succeeded', '{}', 'h', 'txn_1', 'now', 'now')", [id, id, kind]);
    await write('wr_1', 'transaction.create');
    await write('wr_2', 'transaction.update');
    await expect(write('wr_3', 'transaction.create')).rejects.toThrow(/writes_created_record/);
    await expect(db.run("UPDATE writes SET status = 'lost' WHERE id = 'wr_1'")).rejects.toThrow(/check constraint/);
  });

  it('migrates once when two processes open a new mirror at the same time, and applies nothing on the next open', async () => {
    const url = await freshPostgresUrl();
    const [first, second] = await Promise.all([openTracked(url), openTracked(url)]);
    expect(await first.get('SELECT COUNT(*) AS n FROM schema_version')).toEqual({ n: MIGRATIONS.length });
    expect(await migratePostgres(second as PostgresConnection)).toEqual([]);
  });

  it('applies only the migrations a mirror lacks, and refuses a mirror newer than this build, naming it', async () => {
    const url = await freshPostgresUrl();
    const connection = await openPostgresConnection(url);
    opened.push(connection);
    expect(await migratePostgres(connection, MIGRATIONS.slice(0, 3))).toEqual([1, 2, 3]);
    expect(await migratePostgres(connection)).toEqual(MIGRATIONS.slice(3).map((migration) => migration.version));
    await connection.run("INSERT INTO schema_version (version, name, applied_at) VALUES (99, 'from the future', 'now')");
    const { location } = parsePostgresLocation(url);
    await expect(openMirrorConnection(url)).rejects.toThrow(`the mirror database ${location} is at schema version 99, newer than this bizops-sync (${POSTGRES_SCHEMA_VERSION}); upgrade bizops-sync`);
    // A read-only opener does not migrate, so it does not refuse either (as on SQLite).
    const reader = await openTracked(url, { readonly: true });
    expect(await reader.get('SELECT COUNT(*) AS n FROM changes')).toEqual({ n: 0 });
  });

  it('applies the missing migrations all or nothing: a failing one leaves the mirror at its version, without the earlier ones of the same upgrade', async () => {
    const url = await freshPostgresUrl();
    const connection = await openPostgresConnection(url);
    opened.push(connection);
    expect(await migratePostgres(connection, MIGRATIONS.slice(0, 2))).toEqual([1, 2]);
    const failing = { version: MIGRATIONS.length + 1, name: 'failing', sql: 'CREATE TABLE broken (id TEXT REFERENCES no_such_table (id))' };
    await expect(migratePostgres(connection, [...MIGRATIONS, failing])).rejects.toThrow(/no_such_table/);
    expect(await postgresSchemaVersion(connection)).toBe(2);
    // Migration 3's table (writes) is not there: the upgrade was rolled back as a whole.
    expect(await connection.get<{ found: string | null }>("SELECT to_regclass('writes')::text AS found")).toEqual({ found: null });
    expect(await migratePostgres(connection)).toEqual(MIGRATIONS.slice(2).map((migration) => migration.version));
  });
});

describe('connecting to PostgreSQL', () => {
  const withPassword = (url: string, port?: string, database?: string) => {
    const parsed = new URL(url);
    parsed.password = 'S3cret-Pa55';
    if (port) parsed.port = port;
    if (database) parsed.pathname = `/${database}`;
    return parsed.toString();
  };

  it('a new connection whose backend is terminated in the chunk that says it is ready fails the statement that meets it, not the process; the next statement connects afresh', async () => {
    const url = await freshPostgresUrl();
    await openTracked(url);
    // A relay in front of the server: the next connection made through it gets, in the same chunk as
    // its first ReadyForQuery, the FATAL an administrator's pg_terminate_backend sends, then the end.
    const upstream = new URL(TEST_POSTGRES_URL);
    let terminateNext = false;
    const fatal = Buffer.concat(['SFATAL', 'VFATAL', 'C57P01', 'Mterminating connection due to administrator command'].map((field) => Buffer.from(`${field}\0`)).concat(Buffer.from('\0')));
    const errorResponse = Buffer.concat([Buffer.from('E'), Buffer.alloc(4), fatal]);
    errorResponse.writeInt32BE(4 + fatal.length, 1);
    const relay = net.createServer((socket) => {
      const terminate = terminateNext;
      terminateNext = false;
      const server = net.connect(Number(upstream.port || 5432), upstream.hostname);
      socket.pipe(server);
      server.on('data', (chunk: Buffer) => {
        const ready = chunk.indexOf(Buffer.from([0x5a, 0, 0, 0, 5]));
        if (terminate && ready >= 0) {
          socket.end(Buffer.concat([chunk.subarray(0, ready + 6), errorResponse]));
          server.destroy();
        } else if (!socket.writableEnded) socket.write(chunk);
      });
      socket.on('error', () => server.destroy());
      server.on('error', () => socket.destroy());
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    let closeFirst: () => Promise<void> = async () => undefined;
    try {
      const relayed = new URL(url);
      relayed.hostname = '127.0.0.1';
      relayed.port = String((relay.address() as net.AddressInfo).port);
      const db = await openMirrorConnection(relayed.toString());
      closeFirst = () => db.close();
      // The pool's one connection held by a transaction, so the next statement needs a new one.
      let finish: () => void = () => undefined;
      const held = new Promise<void>((resolve) => (finish = resolve));
      const transaction = db.transaction(async (tx) => {
        await tx.get('SELECT 1 AS n');
        await held;
      });
      terminateNext = true;
      await expect(db.get('SELECT 1 AS n')).rejects.toThrow(/terminating connection due to administrator command/);
      finish();
      await transaction;
      expect(await db.get('SELECT 2 AS n')).toEqual({ n: 2 });
    } finally {
      await closeFirst();
      await new Promise<void>((resolve) => relay.close(() => resolve()));
    }
  });

  it('names the URL with its password masked when nothing answers on the port', async () => {
    const url = withPassword(TEST_POSTGRES_URL, '1');
    const error = await openMirrorConnection(url).then(
      () => undefined,
      (reason: unknown) => reason as Error,
    );
    // Whatever server, role and database BIZOPS_TEST_POSTGRES_URL names: the URL as given, its password masked.
    const given = new URL(TEST_POSTGRES_URL);
    const masked = `postgres://${given.username}:***@${given.hostname}:1${given.pathname}`;
    expect(error?.message.startsWith(`cannot connect to the PostgreSQL mirror at ${masked}: `), error?.message).toBe(true);
    expect(error?.message).toMatch(/ECONNREFUSED/);
    expect(error?.message).not.toContain('S3cret-Pa55');
    expect(JSON.stringify(error, Object.getOwnPropertyNames(error))).not.toContain('S3cret-Pa55');
  });

  it('names the URL with its password masked when the server refuses the login or the database', async () => {
    const url = withPassword(TEST_POSTGRES_URL, undefined, 'no_such_database_here');
    await expect(openMirrorConnection(url)).rejects.toThrow(
      `cannot connect to the PostgreSQL mirror at postgres://${new URL(TEST_POSTGRES_URL).username}:***@${new URL(TEST_POSTGRES_URL).host}/no_such_database_here: database "no_such_database_here" does not exist`,
    );
    const bad = new URL(withPassword(TEST_POSTGRES_URL));
    bad.username = 'no_such_role_here';
    const error = await openMirrorConnection(bad.toString()).catch((reason: unknown) => reason as Error);
    expect(String(error)).toMatch(/cannot connect to the PostgreSQL mirror at postgres:\/\/no_such_role_here:\*\*\*@.*role "no_such_role_here" does not exist/);
    expect(String(error)).not.toContain('S3cret-Pa55');
  });

  it('is not mistaken for a SQLite file by the synchronous openMirror (no file named postgres: is created)', () => {
    expect(() => openMirror('postgres://sync:pw-secret@127.0.0.1/db')).toThrow(
      'postgres://sync:***@127.0.0.1/db is a PostgreSQL mirror, which this command cannot open yet (it opens SQLite files); give dbPath a file path',
    );
  });

  it('refuses a URL whose schema is not a schema name, and a reader of a mirror that does not exist', async () => {
    await expect(openMirrorConnection('postgres://u:pw-secret@127.0.0.1/db?schema=Acme;drop')).rejects.toThrow(
      'postgres://u:***@127.0.0.1/db?schema=Acme;drop: schema "Acme;drop" must be lowercase letters, digits, _ and -',
    );
    const url = await freshPostgresUrl();
    await expect(openMirrorConnection(url, { readonly: true })).rejects.toThrow(/^the PostgreSQL mirror at .* has no schema test_\w+: no mirror there yet$/);
  });

  it('keeps each mirror in its schema (named with a hyphen, as connections may be) and shows the URL masked', async () => {
    const base = new URL(await freshPostgresUrl());
    const schema = `${base.searchParams.get('schema')}-eu`;
    base.searchParams.set('schema', schema);
    try {
      const db = await openTracked(withPassword(base.toString()));
      expect(db.location).toBe(`postgres://${base.username}:***@${base.host}${base.pathname}?schema=${schema}`);
      await db.run("INSERT INTO sync_state (stream) VALUES ('deals')");
      expect(await db.get("SELECT current_schema() AS schema, (SELECT COUNT(*) FROM sync_state) AS n")).toEqual({ schema, n: 1 });
      const reader = await openTracked(base.toString(), { readonly: true });
      expect(await reader.get('SELECT stream FROM sync_state')).toEqual({ stream: 'deals' });
      await expect(reader.run("INSERT INTO sync_state (stream) VALUES ('transactions')")).rejects.toThrow(/read-only transaction/);
      await expect(reader.transaction((tx) => tx.run("DELETE FROM sync_state"))).rejects.toThrow(/read-only transaction/);
    } finally {
      for (const connection of opened.splice(0)) await connection.close();
      await onTestServer((client) => client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
    }
  });
});

/** A stream the mirror has never seen, as a new stream would be defined. */
const invoicesStream = defineStream({
  name: 'invoices',
  specSection: 'not shown',
  request: listRequest('/invoices', 'invoices', { cursor: 'updatedAfter' }),
  itemSchema: z.looseObject({ id: z.string(), total: z.int(), customer: z.looseObject({ name: z.string() }) }),
  key: 'id',
  columns: [column('id', 'TEXT', { primaryKey: true }), column('total', 'INTEGER', { notNull: true }), column('customer.name', 'TEXT'), column('rate', 'REAL')],
  listedFields: ['id', 'total', 'customer.name', 'rate'],
  changes: {
    events: ['invoice.created', 'invoice.updated', 'invoice.deleted'],
    classify: (previous) => (previous ? 'invoice.updated' : 'invoice.created'),
    gone: 'invoice.deleted',
  },
});

describe.each(BACKENDS)('stream tables on $name (the same messages on both back ends)', (backend) => {
  const columnNames = async (db: SqlConnection, table: string) =>
    db.dialect === 'sqlite' ? (await db.all<{ name: string }>(`PRAGMA table_info(${table})`)).map((row) => row.name) : (await postgresColumns(db, table)).map((row) => row.name);

  it('creates a missing stream table from its definition and finds it in place on the next open', async () => {
    const location = await backend.location();
    const db = await openTracked(location, { streams: [...STREAM_LIST, invoicesStream] });
    expect(await columnNames(db, 'invoices')).toEqual(['id', 'total', 'customer_name', 'rate', 'raw', 'content_hash', 'first_seen_at', 'synced_at', 'deleted_at', 'last_seen_scan', 'missed_scans', 'written_seq']);
    await db.run("INSERT INTO invoices (id, total, rate, raw, content_hash, first_seen_at, synced_at) VALUES ('inv_1', 1250, 0.25, '{}', 'h', 'now', 'now')");
    expect(await db.get('SELECT total, rate, missed_scans FROM invoices')).toEqual({ total: 1250, rate: 0.25, missed_scans: 0 });
    await db.close();
    await expect(openTracked(location, { streams: [...STREAM_LIST, invoicesStream] })).resolves.toBeDefined();
  });

  it('refuses a stream table column of another type, naming the table and the column; a reader is not checked', async () => {
    const location = await backend.location();
    const db = await openTracked(location);
    await db.exec('ALTER TABLE deals DROP COLUMN value; ALTER TABLE deals ADD COLUMN value TEXT');
    await expect(openMirrorConnection(location)).rejects.toThrow('mirror table deals: column value is TEXT, but the deals stream definition says INTEGER');
    await expect(openTracked(location, { readonly: true })).resolves.toBeDefined();
  });

  it('adds a nullable column the table lacks; a missing NOT NULL column stops the open', async () => {
    const location = await backend.location();
    const db = await openTracked(location);
    await db.exec('ALTER TABLE transactions DROP COLUMN irs_category');
    const reopened = await openTracked(location);
    expect(await columnNames(reopened, 'transactions')).toContain('irs_category');
    await reopened.exec('ALTER TABLE transactions DROP COLUMN amount');
    await expect(openMirrorConnection(location)).rejects.toThrow(
      /^mirror table transactions: column amount is missing, and the transactions stream definition wants it INTEGER NOT NULL, which cannot be added/,
    );
  });
});

describe('stream tables on PostgreSQL only', () => {
  it('names a type the definitions never use by its PostgreSQL name, and a primary key that moved', async () => {
    const location = await freshPostgresUrl();
    const db = await openTracked(location);
    await db.exec('ALTER TABLE onboardings ALTER COLUMN onboarding_step TYPE integer');
    await expect(openMirrorConnection(location)).rejects.toThrow('mirror table onboardings: column onboarding_step is INT4 NOT NULL, but the onboardings stream definition says INTEGER NOT NULL');
    await db.exec('ALTER TABLE onboardings ALTER COLUMN onboarding_step TYPE bigint; ALTER TABLE onboardings DROP CONSTRAINT onboardings_pkey');
    await expect(openMirrorConnection(location)).rejects.toThrow('mirror table onboardings: column id is TEXT NOT NULL, but the onboardings stream definition says TEXT PRIMARY KEY');
  });
});

describe('numberPlaceholders', () => {
  it('numbers ? outside strings, E-strings, quoted identifiers, dollar quotes and comments', () => {
    expect(numberPlaceholders('SELECT ?, ? FROM t WHERE a = ?')).toBe('SELECT $1, $2 FROM t WHERE a = $3');
    expect(numberPlaceholders("SELECT 'a?''b?', E'c\\'?', \"d?\" FROM t WHERE x = ?")).toBe("SELECT 'a?''b?', E'c\\'?', \"d?\" FROM t WHERE x = $1");
    expect(numberPlaceholders('SELECT $$ ? $$, $tag$ ? $tag$, ? -- ?\n, /* ? /* ? */ ? */ ?')).toBe('SELECT $$ ? $$, $tag$ ? $tag$, $1 -- ?\n, /* ? /* ? */ ? */ $2');
    expect(numberPlaceholders('SELECT (SELECT jsonb_array_elements_text(?::jsonb))')).toBe('SELECT (SELECT jsonb_array_elements_text($1::jsonb))');
  });
});

/**
 * What the pooled connections send while `body` runs: every query's text and values, and the writes
 * on their sockets to the test server (one write per batch sent without waiting).
 */
async function traced<T>(body: () => Promise<T>): Promise<{ result: T; sent: { text: string; values?: unknown[] }[]; writes: number }> {
  const sent: { text: string; values?: unknown[] }[] = [];
  let writes = 0;
  const port = Number(new URL(TEST_POSTGRES_URL).port || 5432);
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: Parameters<typeof query>) {
    const first = args[0] as unknown;
    sent.push(typeof first === 'string' ? { text: first } : { text: (first as { text: string }).text, values: (first as { values?: unknown[] }).values });
    return (query as (...inner: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  const socket = net.Socket.prototype as unknown as Record<'_write' | '_writev', (...args: unknown[]) => unknown>;
  const originals = { _write: socket._write, _writev: socket._writev };
  for (const method of ['_write', '_writev'] as const) {
    socket[method] = function (this: net.Socket, ...args: unknown[]) {
      if (this.remotePort === port) writes += 1;
      return originals[method].apply(this, args);
    };
  }
  try {
    const result = await body();
    return { result, sent, writes };
  } finally {
    pg.Client.prototype.query = query;
    socket._write = originals._write;
    socket._writev = originals._writev;
  }
}

describe('round trips of a transaction on PostgreSQL', () => {
  it('sends BEGIN and the lock with the first statement, runAtCommit statements with the COMMIT: two writes, every value bound, values intact', async () => {
    const db = await openTracked(await freshPostgresUrl(), { streams: [] });
    await db.exec('CREATE TABLE probe (id text PRIMARY KEY, n bigint, note text, tags text)');
    const values = ['plain', "it's", 'back\\slash', 'ünïcødé ✓ 😀', '', 'NULL'];
    const { result: lockedByFirst, sent, writes } = await traced(() =>
      db.transaction(async (tx) => {
        const locked = await tx.get("SELECT COUNT(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND mode = ?", ['ExclusiveLock']);
        for (const [index, value] of values.entries()) await tx.runAtCommit("INSERT INTO probe (id, n, note, tags) VALUES (?, ?, ?, array_to_string(?::text[], ','))", [`r${index}`, index - 2, value, [value, 'tag_x']]);
        return locked;
      }),
    );
    expect(lockedByFirst).toEqual({ n: 1 });
    expect(writes).toBe(2);
    expect(sent.map((query) => query.text.split(' (')[0])).toEqual([
      // The lock is planned once (executor.ts `planOnce`); the statements after it are planned at each execution.
      'BEGIN; SET LOCAL plan_cache_mode = force_generic_plan',
      'SELECT pg_advisory_xact_lock($1::integer, hashtext($2::text))',
      'SET LOCAL plan_cache_mode = force_custom_plan',
      "SELECT COUNT(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND mode = $1",
      ...values.map(() => 'INSERT INTO probe'),
      'COMMIT',
    ]);
    // Every value bound as a parameter, none written into a statement's text.
    for (const query of sent) for (const value of ["it's", 'back\\slash', 'ünïcødé', 'r0', 'tag_x']) expect(query.text).not.toContain(value);
    expect(await db.all('SELECT id, n, note, tags FROM probe ORDER BY n')).toEqual(values.map((value, index) => ({ id: `r${index}`, n: index - 2, note: value, tags: `${value},tag_x` })));
    // A body that sends nothing begins nothing.
    const empty = await traced(() => db.transaction(async () => {}));
    expect(empty.sent).toEqual([]);
  });

  it('sends a statement the body does not await yet and the next one in one write, each answered in order', async () => {
    const db = await openTracked(await freshPostgresUrl(), { streams: [] });
    await db.exec('CREATE TABLE probe (id text PRIMARY KEY, n bigint)');
    const { result, writes } = await traced(() =>
      db.transaction(async (tx) => {
        const first = tx.run('INSERT INTO probe (id, n) VALUES (?, ?)', ['a', 1]);
        const second = tx.get<{ n: number }>('SELECT SUM(n) AS n FROM probe');
        return [await first, await second];
      }),
    );
    expect(result).toEqual([{ changes: 1 }, { n: 1 }]);
    // The opening and both statements: one write; the COMMIT: another.
    expect(writes).toBe(2);
  });

  it('reports the failure of a runAtCommit statement, not the aborted transaction after it, at the next statement or at the commit; nothing commits', async () => {
    const db = await openTracked(await freshPostgresUrl(), { streams: [] });
    await db.exec('CREATE TABLE probe (id text PRIMARY KEY, n bigint)');
    await db.run('INSERT INTO probe (id, n) VALUES (?, ?)', ['a', 1]);
    const atNext = db.transaction(async (tx) => {
      await tx.run('INSERT INTO probe (id, n) VALUES (?, ?)', ['b', 2]);
      await tx.runAtCommit('INSERT INTO probe (id, n) VALUES (?, ?)', ['a', 3]);
      await tx.get('SELECT COUNT(*) AS n FROM probe');
    });
    await expect(atNext).rejects.toThrow(/duplicate key value violates unique constraint/);
    const atCommit = db.transaction(async (tx) => {
      await tx.run('INSERT INTO probe (id, n) VALUES (?, ?)', ['c', 2]);
      await tx.runAtCommit('INSERT INTO probe (id, n) VALUES (?, ?)', ['a', 3]);
      await tx.runAtCommit('UPDATE probe SET n = n + 1');
    });
    await expect(atCommit).rejects.toThrow(/duplicate key value violates unique constraint/);
    expect(await db.all('SELECT id, n FROM probe')).toEqual([{ id: 'a', n: 1 }]);
    // The connection is whole afterwards.
    await db.transaction((tx) => tx.run('INSERT INTO probe (id, n) VALUES (?, ?)', ['d', 4]));
    expect(await db.get('SELECT COUNT(*) AS n FROM probe')).toEqual({ n: 2 });
  });

  it('sends an allAtCommit query with the COMMIT and hands its rows over before the transaction resolves', async () => {
    const db = await openTracked(await freshPostgresUrl(), { streams: [] });
    await db.exec('CREATE TABLE probe (id text PRIMARY KEY, n bigint GENERATED ALWAYS AS IDENTITY)');
    let rows: { id: string; n: number }[] | undefined;
    let inBody: unknown = 'unset';
    const { writes } = await traced(() =>
      db.transaction(async (tx) => {
        await tx.run('INSERT INTO probe (id) VALUES (?)', ['a']);
        await tx.allAtCommit<{ id: string; n: number }>('INSERT INTO probe (id) SELECT unnest(?::text[]) RETURNING id, n', [['b', 'c']], (returned) => {
          rows = returned;
        });
        inBody = rows;
      }),
    );
    expect(inBody).toBeUndefined();
    expect(rows).toEqual([
      { id: 'b', n: 2 },
      { id: 'c', n: 3 },
    ]);
    // The opening with the first INSERT; the second INSERT with the COMMIT.
    expect(writes).toBe(2);
    // A failing one fails the commit; nothing of the transaction stays.
    const failing = db.transaction(async (tx) => {
      await tx.run('INSERT INTO probe (id) VALUES (?)', ['d']);
      await tx.allAtCommit('INSERT INTO probe (id) SELECT unnest(?::text[]) RETURNING n', [['a']], () => {});
    });
    await expect(failing).rejects.toThrow(/duplicate key value violates unique constraint/);
    expect(await db.get('SELECT COUNT(*) AS n FROM probe')).toEqual({ n: 3 });
  });

  it('rejects a transaction whose body went on after a failed statement: the server rolled it back', async () => {
    const db = await openTracked(await freshPostgresUrl(), { streams: [] });
    await db.exec('CREATE TABLE probe (id text PRIMARY KEY)');
    await db.run('INSERT INTO probe (id) VALUES (?)', ['a']);
    const swallowed = db.transaction(async (tx) => {
      await tx.run('INSERT INTO probe (id) VALUES (?)', ['b']);
      await tx.run('INSERT INTO probe (id) VALUES (?)', ['a']).catch(() => undefined);
    });
    await expect(swallowed).rejects.toThrow(/duplicate key value violates unique constraint/);
    expect(await db.all('SELECT id FROM probe')).toEqual([{ id: 'a' }]);
  });
});


describe('statements on PostgreSQL', () => {
  it('prepares each statement with parameters once per connection under one name, and plans it at every execution', async () => {
    const db = (await openTracked(await freshPostgresUrl())) as PostgresConnection;
    const sql = 'SELECT count(*) AS n FROM sync_state WHERE stream = ?';
    const name = statementName(numberPlaceholders(sql));
    expect(name).toMatch(/^bz\d+$/);
    const prepared = await db.transaction(async (tx) => {
      for (const stream of ['deals', 'transactions', 'onboardings']) expect(await tx.get(sql, [stream])).toEqual({ n: 0 });
      return tx.all<{ name: string; statement: string }>('SELECT name, statement FROM pg_prepared_statements');
    });
    expect(prepared.filter((row) => row.name === name)).toEqual([{ name, statement: numberPlaceholders(sql) }]);
    expect(await db.get('SHOW plan_cache_mode')).toEqual({ plan_cache_mode: 'force_custom_plan' });
  });

  it('runs a planOnce statement on its cached generic plan inside a transaction, the others on a plan of their own at every execution; the setting ends with the transaction', async () => {
    const db = (await openTracked(await freshPostgresUrl())) as PostgresConnection;
    const once = planOnce('SELECT stream, partition_value FROM sync_state WHERE stream = ? AND partition_value = ? AND 1 = 1');
    const each = 'SELECT count(*) AS n FROM sync_state WHERE stream = ? AND 2 = 2';
    const plans = (tx: SqlExecutor) =>
      tx.all<{ statement: string; generic: number; custom: number }>('SELECT statement, generic_plans AS generic, custom_plans AS custom FROM pg_prepared_statements WHERE statement = ? OR statement = ? ORDER BY statement', [
        numberPlaceholders(each),
        numberPlaceholders(once),
      ]);
    const counted = await db.transaction(async (tx) => {
      for (const stream of ['deals', 'transactions', 'onboardings']) {
        expect(await tx.get(once, [stream, ''])).toBeUndefined();
        expect(await tx.get(each, [stream])).toEqual({ n: 0 });
      }
      // Switched back after each: the setting in force for a statement that is not marked.
      expect(await tx.get('SELECT current_setting(?) AS mode', ['plan_cache_mode'])).toEqual({ mode: 'force_custom_plan' });
      return plans(tx);
    });
    expect(counted).toEqual([
      { statement: numberPlaceholders(each), generic: 0, custom: 3 },
      // Its one generic plan, cached with the prepared statement, ran all three times.
      { statement: numberPlaceholders(once), generic: 3, custom: 0 },
    ]);
    // Outside a transaction, and after one: custom plans (the setting ended with the transaction).
    expect(await db.get('SHOW plan_cache_mode')).toEqual({ plan_cache_mode: 'force_custom_plan' });
  });

  it('sends a statement again on another connection when a migration changed the columns its prepared plan returns', async () => {
    const db = await openTracked(await freshPostgresUrl(), { streams: [] });
    await db.exec('CREATE TABLE probe (id text PRIMARY KEY)');
    await db.run('INSERT INTO probe (id) VALUES (?)', ['a']);
    expect(await db.get('SELECT * FROM probe WHERE id = ?', ['a'])).toEqual({ id: 'a' });
    await db.exec('ALTER TABLE probe ADD COLUMN note text');
    expect(await db.get('SELECT * FROM probe WHERE id = ?', ['a'])).toEqual({ id: 'a', note: null });
  });

  it('binds arrays as text[] in binary: NULLs, quotes, backslashes, braces, non-ASCII text, numbers, and none at all', async () => {
    const db = await openTracked(await freshPostgresUrl(), { streams: [] });
    const values = ['plain', null, 'a "quoted" {braced}, comma', 'back\\slash', 'ünïcødé ✓ 😀', '', 'NULL', 42, -1.5];
    expect(await db.get('SELECT ?::text[] AS a, cardinality(?::text[]) AS n', [values, values])).toEqual({ a: values.map((value) => (value === null ? null : String(value))), n: values.length });
    expect(await db.get('SELECT ?::text[] AS a, cardinality(?::text[]) AS n', [[], []])).toEqual({ a: [], n: 0 });
    const rows = await db.all<{ v: string | null; i: number | null }>('SELECT u.v, u.i::bigint AS i FROM unnest(?::text[], ?::text[]) AS u(v, i) ORDER BY u.i', [
      ['x', null, 'z'],
      [3, 1, null],
    ]);
    expect(rows).toEqual([
      { v: null, i: 1 },
      { v: 'x', i: 3 },
      { v: 'z', i: null },
    ]);
  });
});
