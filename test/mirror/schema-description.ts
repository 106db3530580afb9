/**
 * A mirror's schema described as text, column by column, so that two mirrors (or a SQLite file and
 * a PostgreSQL schema) compare with one `toEqual`: `name TYPE [NOT NULL] [PK] [DEFAULT x]` per
 * column, per table, types named as the stream definitions name them (TEXT, INTEGER, REAL).
 */
import Database from 'better-sqlite3';
import type { SqlExecutor } from '../../src/mirror/sql/executor.ts';
import { POSTGRES_TYPE_NAMES } from '../../src/mirror/sql/column-types.ts';

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

/**
 * The same description of the tables of the PostgreSQL schema on the executor's search_path: each
 * column as `postgresColumns` (src/mirror/stream-tables.ts) reads it (its type by
 * `POSTGRES_TYPE_NAMES`, NOT NULL, primary key) with its default, every table's in one query (a
 * mirror's 22 tables: about 0.1 s; a query per table and a sub-query per column, five times that).
 */
export async function postgresSchema(db: SqlExecutor): Promise<Record<string, string[]>> {
  const tables = await db.all<{ name: string }>("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name");
  const columns = await db.all<{ table_name: string; name: string; type: string; not_null: boolean; primary_key: boolean; value: string | null }>(
    `WITH pk AS (
       SELECT t.relname AS table_name, a.attname AS name
         FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
        WHERE i.indisprimary AND t.relnamespace = current_schema()::regnamespace
     )
     SELECT c.table_name, c.column_name AS name, c.udt_name AS type, c.is_nullable = 'NO' AS not_null, pk.name IS NOT NULL AS primary_key, c.column_default AS value
     FROM information_schema.columns c LEFT JOIN pk ON pk.table_name = c.table_name AND pk.name = c.column_name
     WHERE c.table_schema = current_schema()
     ORDER BY c.table_name, c.ordinal_position`,
  );
  const described: Record<string, string[]> = Object.fromEntries(tables.map(({ name }) => [name, []]));
  for (const row of columns) {
    const type = POSTGRES_TYPE_NAMES[row.type] ?? row.type.toUpperCase();
    const value = row.value?.replace(/::[a-z ]+$/, '');
    described[row.table_name]?.push(`${row.name} ${type}${row.not_null || row.primary_key ? ' NOT NULL' : ''}${row.primary_key ? ' PK' : ''}${value ? ` DEFAULT ${value}` : ''}`);
  }
  return described;
}

/**
 * What `postgresSchema` leaves out, for comparing two PostgreSQL mirrors: every column's exact type,
 * identity and collation, every constraint's and index's definition (the schema's name taken out).
 */
export async function postgresSchemaDetails(db: SqlExecutor): Promise<{ columns: string[]; constraints: string[]; indexes: string[] }> {
  const columns = await db.all<{ line: string }>(
    `SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' identity:' || is_identity || coalesce(' ' || identity_generation, '')
            || coalesce(' default ' || column_default, '') || coalesce(' collate ' || collation_name, '') AS line
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
