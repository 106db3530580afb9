/**
 * A mirror's schema described as text, column by column, so that two mirrors (or a SQLite file and
 * a PostgreSQL schema) compare with one `toEqual`: `name TYPE [NOT NULL] [PK] [DEFAULT x]` per
 * column, per table, types named as the stream definitions name them (TEXT, INTEGER, REAL).
 */
import Database from 'better-sqlite3';
import type { SqlExecutor } from '../../src/mirror/sql/executor.ts';
import { postgresColumns } from '../../src/mirror/stream-tables.ts';

/** The tables of a SQLite file, described column by column. */
export function sqliteSchema(path: string): Record<string, string[]> {
  const db = new Database(path, { readonly: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as { name: string }[];
    return Object.fromEntries(
      tables.map(({ name }) => [
        name,
        (db.prepare(`PRAGMA table_info(${name})`).all() as { name: string; type: string; notnull: number; pk: number; dflt_value: string | null }[]).map(
          (row) => `${row.name} ${row.type}${row.notnull || row.pk ? ' NOT NULL' : ''}${row.pk ? ' PK' : ''}${row.dflt_value === null ? '' : ` DEFAULT ${row.dflt_value}`}`,
        ),
      ]),
    );
  } finally {
    db.close();
  }
}

/** The same description of the tables of the PostgreSQL schema on the executor's search_path. */
export async function postgresSchema(db: SqlExecutor): Promise<Record<string, string[]>> {
  const tables = await db.all<{ name: string }>("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name");
  const described: Record<string, string[]> = {};
  for (const { name } of tables) {
    const defaults = new Map(
      (await db.all<{ name: string; value: string | null }>('SELECT column_name AS name, column_default AS value FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?', [name])).map(
        (row) => [row.name, row.value],
      ),
    );
    described[name] = (await postgresColumns(db, name)).map((row) => {
      const value = defaults.get(row.name)?.replace(/::[a-z ]+$/, '');
      return `${row.name} ${row.type}${row.notNull || row.primaryKey ? ' NOT NULL' : ''}${row.primaryKey ? ' PK' : ''}${value ? ` DEFAULT ${value}` : ''}`;
    });
  }
  return described;
}

/**
 * What `postgresSchema` leaves out, for comparing two PostgreSQL mirrors: every column's exact type
 * and identity, every constraint's and index's definition (the schema's name taken out).
 */
export async function postgresSchemaDetails(db: SqlExecutor): Promise<{ columns: string[]; constraints: string[]; indexes: string[] }> {
  const columns = await db.all<{ line: string }>(
    `SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' identity:' || is_identity || coalesce(' ' || identity_generation, '')
            || coalesce(' default ' || column_default, '') AS line
       FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`,
  );
  const constraints = await db.all<{ line: string }>(
    `SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) AS line
       FROM pg_constraint WHERE connamespace = current_schema()::regnamespace ORDER BY 1`,
  );
  const indexes = await db.all<{ line: string; schema: string }>(
    'SELECT indexdef AS line, schemaname AS schema FROM pg_indexes WHERE schemaname = current_schema() ORDER BY indexname',
  );
  return {
    columns: columns.map((row) => row.line),
    constraints: constraints.map((row) => row.line),
    indexes: indexes.map((row) => row.line.replaceAll(`${row.schema}.`, '')),
  };
}
