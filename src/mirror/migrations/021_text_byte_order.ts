/**
 * Migration 21: every text column of a PostgreSQL mirror compares in byte order (`COLLATE "C"`),
 * as SQLite's TEXT (its BINARY collation) always has (docs/decisions.md "Text in byte order").
 *
 * PostgreSQL compared text in the database's default collation: a locale's order (`en_US`: `a` before
 * `B`) where SQLite gives byte order (`B` before `a`), so `ORDER BY` of an id could page in another
 * order on each back end, and every comparison of the key indexes (ids, event ids) went through the
 * locale's `strcoll`. A new mirror declares every text column so from the start (the translation of
 * every migration, src/mirror/sql/postgres-ddl.ts `byteOrder`; stream tables,
 * src/mirror/stream-tables.ts): this migration finds nothing to do there. PostgreSQL only: its text
 * (`postgres`) alters every text column of a mirror made before it that is not in byte order yet,
 * its indexes rebuilt (on a large mirror that takes a while, under the migration's lock, once);
 * SQLite runs nothing.
 */
export const sql = `
-- SQLite compares TEXT in byte order (BINARY) already: nothing to do.
`;

/** What PostgreSQL runs instead of a translation of `sql`. */
export const postgres = `
DO $$
DECLARE
  text_column record;
BEGIN
  FOR text_column IN
    SELECT t.relname AS table_name, a.attname AS column_name
      FROM pg_catalog.pg_attribute a
      JOIN pg_catalog.pg_class t ON t.oid = a.attrelid
     WHERE t.relnamespace = current_schema()::regnamespace AND t.relkind = 'r'
       AND a.attnum > 0 AND NOT a.attisdropped AND a.atttypid = 'text'::regtype
       AND a.attcollation <> (SELECT oid FROM pg_catalog.pg_collation WHERE collname = 'C' AND collnamespace = 'pg_catalog'::regnamespace)
     ORDER BY t.relname, a.attnum
  LOOP
    EXECUTE format('ALTER TABLE %I ALTER COLUMN %I TYPE text COLLATE "C"', text_column.table_name, text_column.column_name);
  END LOOP;
END
$$;
`;
