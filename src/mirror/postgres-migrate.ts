/**
 * Migrating a PostgreSQL mirror (docs/mirror.md "PostgreSQL"): the migrations of
 * src/mirror/migrations/index.ts, each one's text translated for PostgreSQL (`postgresDdl`,
 * src/mirror/sql/postgres-ddl.ts), applied in order, each with its row in `schema_version`
 * (PostgreSQL has no `PRAGMA user_version`). The migrations a mirror lacks are applied in one
 * transaction (PostgreSQL's DDL is transactional): an upgrade is all or nothing, so a failing
 * migration leaves the mirror at the version it had, which the previous build still opens; and a new
 * mirror's schema costs one commit, not one per migration.
 *
 * `schema_version` holds one row per applied migration: `version`, `name`, `applied_at` (ISO 8601);
 * the mirror's version is the largest. Every migrating transaction first takes the schema's
 * migration lock (a transaction-scoped advisory lock), so two processes opening the mirror at once
 * do not both apply a migration: the second finds it applied.
 */
import { MIGRATIONS, type Migration } from './migrations/index.ts';
import type { SqlExecutor } from './sql/executor.ts';
import { postgresDdl } from './sql/postgres-ddl.ts';
import { ADVISORY_LOCK_CLASS, advisoryLockStatement, type PostgresConnection } from './sql/postgres.ts';

/** The schema version this build writes: the last migration's. */
export const POSTGRES_SCHEMA_VERSION = MIGRATIONS.at(-1)?.version ?? 0;

const SCHEMA_VERSION_TABLE = `
CREATE TABLE IF NOT EXISTS schema_version (
  version    bigint PRIMARY KEY,
  name       text COLLATE "C" NOT NULL,
  applied_at text COLLATE "C" NOT NULL
)`;

/**
 * The mirror's schema version: the largest applied migration, 0 when none (or no `schema_version` table).
 */
export async function postgresSchemaVersion(executor: SqlExecutor): Promise<number> {
  const table = await executor.get<{ found: string | null }>("SELECT to_regclass('schema_version')::text AS found");
  if (!table?.found) return 0;
  const row = await executor.get<{ version: number | null }>('SELECT MAX(version) AS version FROM schema_version');
  return row?.version ?? 0;
}

/**
 * Applies every migration newer than the mirror's version, in order, in one transaction under the
 * migration lock.
 * @param migrations the list to apply (default: this build's; tests pass others)
 * @returns the versions applied, in order (empty when the mirror was up to date)
 * @throws Error when the mirror's version is newer than this build knows (`... newer than this
 *   bizops-sync (6); upgrade bizops-sync`), the translation's error when a migration's text holds
 *   what PostgreSQL would read otherwise (`migration 8 (name): ...`), or the driver's error of a
 *   failing migration (every migration of this call rolled back: the mirror keeps its version)
 */
export async function migratePostgres(connection: PostgresConnection, migrations: readonly Migration[] = MIGRATIONS): Promise<number[]> {
  const latest = migrations.at(-1)?.version ?? 0;
  return connection.transaction(async (tx) => {
    const lock = advisoryLockStatement(ADVISORY_LOCK_CLASS.migration, connection.schema);
    await tx.run(lock.sql, lock.parameters);
    await tx.exec(SCHEMA_VERSION_TABLE);
    const current = await postgresSchemaVersion(tx);
    if (current > latest) {
      throw new Error(`the mirror database ${connection.location} is at schema version ${current}, newer than this bizops-sync (${latest}); upgrade bizops-sync`);
    }
    const applied: number[] = [];
    for (const migration of migrations) {
      if (migration.version <= current) continue;
      await tx.exec(migration.postgres ?? postgresDdl(migration.sql, `migration ${migration.version} (${migration.name})`, { byteOrder: true }));
      await tx.run('INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)', [migration.version, migration.name, new Date().toISOString()]);
      applied.push(migration.version);
    }
    return applied;
  });
}
