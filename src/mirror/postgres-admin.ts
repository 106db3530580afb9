/**
 * What jobs/ do with a PostgreSQL mirror besides opening it: ask whether one exists, drop one. Each
 * loads the PostgreSQL driver (pg, through sql/postgres.ts) when it is called, so a command working
 * on a SQLite mirror never loads it (docs/operations.md "Start-up").
 */

/**
 * True when the schema `url` names exists and holds a migrated mirror (a `schema_version` row).
 * Connects once, read-only, with one connection.
 * @param url `postgres://user:password@host:5432/database?schema=name`
 * @throws Error naming the masked URL when PostgreSQL does not answer
 */
export async function postgresMirrorExists(url: string): Promise<boolean> {
  const [{ PostgresConnection }, { postgresSchemaVersion }] = await Promise.all([import('./sql/postgres.ts'), import('./postgres-migrate.ts')]);
  const probe = new PostgresConnection(url, { readonly: true, maxConnections: 1 });
  try {
    const schema = await probe.get('SELECT 1 AS found FROM pg_namespace WHERE nspname = ?', [probe.schema]);
    return schema !== undefined && (await postgresSchemaVersion(probe)) > 0;
  } finally {
    await probe.close();
  }
}

/**
 * Drops the schema `url` names with every table in it (`DROP SCHEMA IF EXISTS ... CASCADE`): the
 * demo's previous mirror.
 * @throws Error naming the masked URL when PostgreSQL does not answer
 */
export async function dropPostgresMirror(url: string): Promise<void> {
  const [{ PostgresConnection }, { quoteIdentifier }] = await Promise.all([import('./sql/postgres.ts'), import('./sql/postgres-location.ts')]);
  const connection = new PostgresConnection(url, { maxConnections: 1 });
  try {
    await connection.exec(`DROP SCHEMA IF EXISTS ${quoteIdentifier(connection.schema)} CASCADE`);
  } finally {
    await connection.close();
  }
}
