/**
 * Migration 15: partitioned streams (docs/sync.md "Partitioned streams"): a stream whose list
 * requires a parameter (spec §4.4 `GET /qa-corrective-actions?locationId=...`) is read once per
 * value of it, each value a partition with its own sync state.
 *
 * `sync_state` is keyed by (stream, partition_value): `partition_value` is the partition's value
 * (`loc_1`), or '' for an unpartitioned stream and for a partitioned stream's own row (what the run
 * of all its partitions did: its last run, its error, whether it is supported). Rebuilt, as SQLite
 * cannot change a primary key; every row keeps its values with partition_value ''.
 *
 * `changes.partition_value`: the partition a change was listed in (null for an unpartitioned stream,
 * a write, or an event of no stream).
 *
 * `rejected_records.partition_value`: the partition that listed a quarantined item ('' when none),
 * so that a partition's complete scan releases only its own unlisted items.
 */
export const sql = `
CREATE TABLE sync_state_by_partition (
  stream               TEXT NOT NULL,
  partition_value      TEXT NOT NULL DEFAULT '',
  cursor               TEXT,
  supported            INTEGER NOT NULL DEFAULT 1,
  run                  TEXT,
  scan_number          INTEGER NOT NULL DEFAULT 0,
  last_run_started_at  TEXT,
  last_run_finished_at TEXT,
  last_success_at      TEXT,
  last_error           TEXT,
  last_run_mode        TEXT,
  last_run_requests    INTEGER,
  last_run_records     INTEGER,
  last_run_changes     INTEGER,
  lock_owner           TEXT,
  lock_expires_at      TEXT,
  last_scan            TEXT,
  deletion_hold        TEXT,
  PRIMARY KEY (stream, partition_value)
);
INSERT INTO sync_state_by_partition (stream, partition_value, cursor, supported, run, scan_number, last_run_started_at,
  last_run_finished_at, last_success_at, last_error, last_run_mode, last_run_requests, last_run_records, last_run_changes,
  lock_owner, lock_expires_at, last_scan, deletion_hold)
SELECT stream, '', cursor, supported, run, scan_number, last_run_started_at, last_run_finished_at, last_success_at, last_error,
  last_run_mode, last_run_requests, last_run_records, last_run_changes, lock_owner, lock_expires_at, last_scan, deletion_hold
FROM sync_state;
DROP TABLE sync_state;
ALTER TABLE sync_state_by_partition RENAME TO sync_state;

ALTER TABLE changes ADD COLUMN partition_value TEXT;
ALTER TABLE rejected_records ADD COLUMN partition_value TEXT NOT NULL DEFAULT '';
`;
