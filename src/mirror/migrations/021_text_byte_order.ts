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
 * its indexes rebuilt (on a large mirror that takes a while, under the migration's lock, once), in
 * the mirror's own tables only; a column a view of the user's reads keeps the database's collation
 * (PostgreSQL cannot change the type of a column a view reads), so the upgrade never fails on one.
 * SQLite runs nothing.
 */
export const sql = `
-- SQLite compares TEXT in byte order (BINARY) already: nothing to do.
`;

/** The tables migrations 1 to 20 made (a stream's table is known by its record columns instead). */
const MIRROR_TABLES = [
  'changelog_pruned', 'changes', 'consumers', 'daemons', 'deals', 'leases', 'onboardings', 'record_clock', 'record_clock_by_partition',
  'rejected_records', 'schema_version', 'stream_conditions', 'stream_conditions_by_partition', 'stream_fields', 'sync_state',
  'sync_state_by_partition', 'transactions', 'verify_listed', 'webhook_attempt_batches', 'webhook_attempts', 'webhook_endpoints',
  'webhook_failed_deliveries', 'webhook_held_events', 'writes',
];

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
       -- The mirror's own tables: those its migrations 1 to 20 made, and the stream tables (a record's
       -- columns raw, content_hash, first_seen_at and synced_at). A table of the user's is not touched.
       AND (t.relname IN (${MIRROR_TABLES.map((name) => `'${name}'`).join(', ')})
            OR (SELECT count(*) FROM pg_catalog.pg_attribute r
                 WHERE r.attrelid = t.oid AND NOT r.attisdropped AND r.attname IN ('raw', 'content_hash', 'first_seen_at', 'synced_at')) = 4)
       -- A column a view (or rule) reads cannot change type: it keeps the database's collation, and the
       -- upgrade goes on (a comparison of it with a "C" column is done in "C").
       AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d
                        WHERE d.classid = 'pg_catalog.pg_rewrite'::regclass AND d.refobjid = t.oid AND d.refobjsubid = a.attnum)
     ORDER BY t.relname, a.attnum
  LOOP
    EXECUTE format('ALTER TABLE %I ALTER COLUMN %I TYPE text COLLATE "C"', text_column.table_name, text_column.column_name);
  END LOOP;
END
$$;
`;
