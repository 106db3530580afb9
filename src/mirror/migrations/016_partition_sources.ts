/**
 * Migration 16: partitions as a key of the stream's state (docs/sync.md "Partitioned streams").
 *
 * `sync_state.partitions`, on a partitioned stream's own row (partition_value ''): where its
 * partition values came from at its last run, JSON `{"count": n, "sources": {"configured": n,
 * "derived": n, "mirrored": n}, "key": "sync.partitions.<stream>.<param>", "derivedFrom": text|null}`
 * (src/sync/partition-values.ts), for `status` and the console; null for other rows.
 *
 * `stream_conditions` is keyed by (stream, partition_value) like `sync_state`: a partition's own
 * condition (a location whose list keeps failing while the others answer), '' for the stream's.
 * Rebuilt, as SQLite cannot change a primary key; every row keeps its values with partition_value ''.
 */
export const sql = `
ALTER TABLE sync_state ADD COLUMN partitions TEXT;

CREATE TABLE stream_conditions_by_partition (
  stream           TEXT NOT NULL,
  partition_value  TEXT NOT NULL DEFAULT '',
  condition        TEXT NOT NULL DEFAULT 'ok',
  failed_runs      INTEGER NOT NULL DEFAULT 0,
  since            TEXT,
  updated_at       TEXT NOT NULL,
  PRIMARY KEY (stream, partition_value)
);
INSERT INTO stream_conditions_by_partition (stream, partition_value, condition, failed_runs, since, updated_at)
SELECT stream, '', condition, failed_runs, since, updated_at FROM stream_conditions;
DROP TABLE stream_conditions;
ALTER TABLE stream_conditions_by_partition RENAME TO stream_conditions;
`;
