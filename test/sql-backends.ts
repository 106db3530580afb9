/**
 * The two back ends of the mirror for tests that run against both (`describe.each(BACKENDS)`): a
 * SQLite file in a temp dir, and a fresh schema of the test PostgreSQL database
 * (`BIZOPS_TEST_POSTGRES_URL`, default postgres://postgres@127.0.0.1:5432/postgres), dropped after
 * the test by `removeTestMirrors` (call it in `afterEach`).
 *
 * PostgreSQL is a required part of the test environment, like Redis: when it does not answer, the
 * test fails with a message naming the URL; it is never skipped.
 */
import Database from 'better-sqlite3';
import type { SqlConnection } from '../src/mirror/sql/executor.ts';
import { openPostgresConnection } from '../src/mirror/sql/postgres.ts';
import { sqliteConnection } from '../src/mirror/sql/sqlite.ts';
import { tempDir } from './helpers.ts';

import { closeTestServer, dropTestSchemas, onTestServerShared, testSchemaUrl, uniqueTestSchema } from './test-mirror.ts';

export { onTestServer, TEST_POSTGRES_URL } from './test-mirror.ts';

const cleanups: (() => Promise<void> | void)[] = [];
/** The schemas `freshPostgresUrl` handed out, dropped together by `removeTestMirrors`. */
const schemas: string[] = [];

/**
 * The URL of a fresh, not yet created schema on the test server (`?schema=test_<random>`), dropped
 * by `removeTestMirrors`. Fails naming the URL when PostgreSQL does not answer.
 */
export async function freshPostgresUrl(): Promise<string> {
  const schema = uniqueTestSchema();
  await onTestServerShared(async (client) => client.query('SELECT 1')); // fails here, clearly, when the server is down
  schemas.push(schema);
  return testSchemaUrl(schema);
}

/** A fresh SQLite file path in a temp dir, removed by `removeTestMirrors`. */
export function freshSqlitePath(): string {
  const dir = tempDir('bizops-backend-');
  cleanups.push(() => dir.remove());
  return dir.file('mirror.db');
}

/**
 * Closes the connections opened by `openBare`, removes every file handed out, then drops every
 * schema handed out in one statement and ends the admin connection (test/test-mirror.ts
 * `onTestServerShared`).
 */
export async function removeTestMirrors(): Promise<void> {
  try {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    await dropTestSchemas(schemas.splice(0));
  } finally {
    await closeTestServer();
  }
}

/** One back end, for `describe.each`. */
export interface TestBackend {
  name: 'sqlite' | 'postgres';
  /** A fresh, empty mirror location: a file path or a PostgreSQL URL with its own schema. */
  location(): Promise<string>;
  /**
   * A plain connection to `location` (no migration, no stream tables): a better-sqlite3 handle in
   * WAL mode, or a pool on the schema (created). Closed by `removeTestMirrors`.
   */
  openBare(location: string): Promise<SqlConnection>;
}

export const BACKENDS: readonly TestBackend[] = [
  {
    name: 'sqlite',
    location: async () => freshSqlitePath(),
    openBare: async (location) => {
      const database = new Database(location);
      database.pragma('journal_mode = WAL');
      database.pragma('busy_timeout = 5000');
      const connection = sqliteConnection(database);
      cleanups.push(() => connection.close());
      return connection;
    },
  },
  {
    name: 'postgres',
    location: freshPostgresUrl,
    openBare: async (location) => {
      const connection = await openPostgresConnection(location);
      cleanups.push(() => connection.close());
      return connection;
    },
  },
];
