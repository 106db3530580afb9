/**
 * Each test run its own PostgreSQL database (vitest `globalSetup`): `setup` creates
 * `bizops_test_<host>_<pid>` (from template0) on the server of `BIZOPS_TEST_POSTGRES_URL` (default
 * postgres://postgres@127.0.0.1:5432/postgres) and points `BIZOPS_TEST_POSTGRES_URL` at it for the
 * test workers and the commands they start; `teardown` drops it with whatever is left in it.
 *
 * Why: every test makes and drops schemas of about forty tables, and each leaves dead rows in its
 * database's catalogs (pg_class, pg_attribute, pg_depend) until a vacuum. On a server without
 * autovacuum the shared database's catalogs grew to 1.25 million dead pg_attribute rows, and
 * migrating a new mirror there took 180-290 ms of server CPU against 85-120 ms in a new database
 * (the same migrations, measured on the backend's /proc stat). A database of the run's own starts
 * with clean catalogs, and is gone, catalogs and all, after the run.
 *
 * A database left by a run on this machine that was killed (its pid no longer runs) is dropped by
 * the next run's setup. When the server does not answer, or refuses CREATE DATABASE (a role
 * without CREATEDB), the URL stays as given: the tests then fail, or run, there as before.
 */
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import pg from 'pg';
import { processRuns } from './postgres-server.ts';

/** The database the tests use when `BIZOPS_TEST_POSTGRES_URL` does not name one. */
const DEFAULT_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * A run database's name: this prefix, then the pid of the vitest process that made it. The prefix
 * names this machine (a hash of its host name): a run on another machine or container sharing the
 * server, whose pids this machine cannot check, has another prefix and is never taken for ended.
 */
const PREFIX = `bizops_test_${createHash('sha256').update(hostname()).digest('hex').slice(0, 8)}_`;

/** The run database `setup` made: its name and the server URL (of the given database) to drop it from. */
let created: { name: string; serverUrl: string } | undefined;

/** A connected client of `url`, or undefined when it cannot connect (the tests then say so, naming the URL). */
async function connect(url: string): Promise<pg.Client | undefined> {
  const client = new pg.Client({ connectionString: url, application_name: 'bizops-test-admin' });
  client.on('error', () => {});
  try {
    await client.connect();
    return client;
  } catch {
    await client.end().catch(() => undefined);
    return undefined;
  }
}

/**
 * vitest's global setup: creates this run's database and sets `BIZOPS_TEST_POSTGRES_URL` to it,
 * after dropping the run databases of processes that no longer run. Never throws: on any failure
 * the URL stays as it was.
 */
export async function setup(): Promise<void> {
  const serverUrl = process.env.BIZOPS_TEST_POSTGRES_URL || DEFAULT_URL;
  const client = await connect(serverUrl);
  if (client === undefined) return;
  try {
    const { rows } = await client.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [`${PREFIX}%`]);
    for (const { datname } of rows) {
      const pid = Number(datname.slice(PREFIX.length));
      if (!datname.startsWith(PREFIX) || !Number.isInteger(pid) || pid === process.pid || processRuns(pid)) continue;
      await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`).catch(() => undefined);
    }
    const name = `${PREFIX}${process.pid}`;
    await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await client.query(`CREATE DATABASE "${name}" TEMPLATE template0`);
    created = { name, serverUrl };
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    process.env.BIZOPS_TEST_POSTGRES_URL = url.toString();
  } catch {
    // No CREATEDB right, or the server went away: the tests use the URL as given.
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** vitest's global teardown: drops this run's database (`WITH (FORCE)`: a connection a test left open does not keep it). */
export async function teardown(): Promise<void> {
  if (created === undefined) return;
  const { name, serverUrl } = created;
  created = undefined;
  const client = await connect(serverUrl);
  if (client === undefined) return;
  try {
    await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await client.end().catch(() => undefined);
  }
}
