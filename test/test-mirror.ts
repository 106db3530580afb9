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
 * test), or all of them (`scope: 'file'`, after the file).
 * @throws Error naming the URL when PostgreSQL does not answer
 */
export async function dropTestMirrors(scope: 'test' | 'file'): Promise<void> {
  const dropped: string[] = [];
  for (const [path, entry] of handedOut) {
    if (scope === 'test' && !entry.inTest) continue;
    handedOut.delete(path);
    dropped.push(entry.schema);
  }
  if (dropped.length === 0) return;
  await onTestServer(async (client) => {
    for (const schema of dropped) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  });
}

/**
 * Runs `work` with a client of the test server, outside any mirror (creating and dropping schemas).
 * @throws Error naming the URL when PostgreSQL does not answer
 */
export async function onTestServer<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: TEST_POSTGRES_URL });
  try {
    await client.connect();
  } catch (error) {
    throw new Error(
      `PostgreSQL does not answer at ${maskUrlPassword(TEST_POSTGRES_URL)} (${(error as Error).message || String(error)}): ` +
        'the tests need it; start it (bash .ci/run does) or point BIZOPS_TEST_POSTGRES_URL at one',
      { cause: error },
    );
  }
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
