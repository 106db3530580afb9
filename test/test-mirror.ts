/**
 * Which back end the test helpers put mirrors on: SQLite files (the default), or PostgreSQL when
 * `BIZOPS_TEST_MIRROR=postgres` (the `postgres` project of vitest.config.ts runs test/sync,
 * test/notify and test/writes so). Helpers that hand out a mirror (testConfig, tempMirror,
 * writeTestBed, the CLI and worker fixtures) pass the path they would use through
 * `testMirrorLocation`: unchanged on SQLite, a PostgreSQL URL with a fresh schema of its own on
 * PostgreSQL (the same URL for the same path, so a CLI and a context share the mirror). A schema
 * handed out during a test is dropped after it, one handed out in a `beforeAll` after the file
 * (test/postgres-setup.ts).
 *
 * PostgreSQL not answering fails the test with a message naming the URL (the mirror's open says
 * `cannot connect to the PostgreSQL mirror at <url>`; dropping says `PostgreSQL does not answer at
 * <url>`); nothing is skipped.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { maskUrlPassword } from '../src/logging/mask-url.ts';

/** The back end of this test run's mirrors. */
export const TEST_MIRROR_BACKEND: 'sqlite' | 'postgres' = process.env.BIZOPS_TEST_MIRROR === 'postgres' ? 'postgres' : 'sqlite';

/** The PostgreSQL server the tests use. */
export const TEST_POSTGRES_URL = process.env.BIZOPS_TEST_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

/** Schemas handed out, by path, and whether a test (rather than a `beforeAll`) asked for them. */
const handedOut = new Map<string, { schema: string; location: string; inTest: boolean }>();
let inTest = false;

/** Marks the start and end of a test (test/postgres-setup.ts): schemas handed out meanwhile live until its end. */
export function markTest(running: boolean): void {
  inTest = running;
}

/** A schema name no other test (nor test process) uses. */
export function uniqueTestSchema(): string {
  return `test_${process.pid}_${randomBytes(6).toString('hex')}`;
}

/** The URL of `schema` on the test server. */
export function testSchemaUrl(schema: string): string {
  const url = new URL(TEST_POSTGRES_URL);
  url.searchParams.set('schema', schema);
  return url.toString();
}

/**
 * Where the mirror a test would keep in the file `filePath` lives in this run: `filePath` itself
 * (SQLite), or a PostgreSQL URL of a fresh schema (not yet created), the same one for the same path
 * until it is dropped.
 */
export function testMirrorLocation(filePath: string): string {
  if (TEST_MIRROR_BACKEND === 'sqlite') return filePath;
  let entry = handedOut.get(filePath);
  if (entry === undefined) {
    const schema = uniqueTestSchema();
    entry = { schema, location: testSchemaUrl(schema), inTest };
    handedOut.set(filePath, entry);
  }
  return entry.location;
}

/**
 * Drops the schemas `testMirrorLocation` handed out during the test (`scope: 'test'`, after each
 * test), or all of them (`scope: 'file'`, after the file), in one statement on the file's admin
 * connection (`onTestServerShared`).
 * @throws Error naming the URL when PostgreSQL does not answer
 */
export async function dropTestMirrors(scope: 'test' | 'file'): Promise<void> {
  const dropped: string[] = [];
  for (const [path, entry] of handedOut) {
    if (scope === 'test' && !entry.inTest) continue;
    handedOut.delete(path);
    dropped.push(entry.schema);
  }
  await dropTestSchemas(dropped);
}

/**
 * Drops `schemas` (`DROP SCHEMA IF EXISTS ... CASCADE`, every one in one statement) on the admin
 * connection `onTestServerShared` keeps; nothing when the list is empty.
 * @throws Error naming the URL when PostgreSQL does not answer
 */
export async function dropTestSchemas(schemas: readonly string[]): Promise<void> {
  if (schemas.length === 0) return;
  await onTestServerShared(async (client) => void (await client.query(`DROP SCHEMA IF EXISTS ${schemas.map((schema) => `"${schema}"`).join(', ')} CASCADE`)));
}

/** The admin connection `onTestServerShared` keeps until `closeTestServer`. */
let shared: Promise<pg.Client> | undefined;

/**
 * Runs `work` on one admin connection of the test server kept between calls (each new connection
 * costs the server about 33 ms of CPU on a slow host), until `closeTestServer` ends it (after each
 * test file: test/postgres-setup.ts, test/sql-backends.ts `removeTestMirrors`). A connection that
 * broke is replaced at the next call.
 * @throws Error naming the URL when PostgreSQL does not answer
 */
export async function onTestServerShared<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const opening = (shared ??= connectTestServer());
  opening.catch(() => {
    if (shared === opening) shared = undefined;
  });
  const client = await opening;
  try {
    return await work(client);
  } catch (error) {
    // A connection error (not a statement's): the next call connects afresh.
    if (!(error instanceof pg.DatabaseError) && shared === opening) {
      shared = undefined;
      await client.end().catch(() => undefined);
    }
    throw error;
  }
}

/** Ends the admin connection `onTestServerShared` keeps, if any. Safe to call twice. */
export async function closeTestServer(): Promise<void> {
  const opening = shared;
  shared = undefined;
  if (opening === undefined) return;
  const client = await opening.catch(() => undefined);
  await client?.end().catch(() => undefined);
}

/**
 * A new connected client of the test server; an error from it later (the server gone) is ignored
 * here: the next query on it fails instead.
 * @throws Error naming the URL when PostgreSQL does not answer
 */
async function connectTestServer(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: TEST_POSTGRES_URL });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (error) {
    throw new Error(
      `PostgreSQL does not answer at ${maskUrlPassword(TEST_POSTGRES_URL)} (${(error as Error).message || String(error)}): ` +
        'the tests need it; start it (bash .ci/run does) or point BIZOPS_TEST_POSTGRES_URL at one',
      { cause: error },
    );
  }
  return client;
}

/**
 * Runs `work` with a client of the test server of its own, ended after it, outside any mirror.
 * @throws Error naming the URL when PostgreSQL does not answer
 */
export async function onTestServer<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = await connectTestServer();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
