/**
 * Migration 18: the record clock per (stream, partition) (docs/sync.md "Record clock").
 *
 * `record_clock` is keyed by (stream, partition_value): a partition's own lag, high water and
 * window, '' for an unpartitioned stream. Rebuilt, as SQLite cannot change a primary key; every row
 * keeps its values with partition_value ''. Besides the columns it had (migrations 5 and 12):
 *
 *   window_from          the updatedAfter of the last incremental run of the stream or partition (ISO 8601, the cursor's clock)
 *   window_lag_seconds   the lag that window allowed for (seconds): a lag measured larger later
 *                        widens the next run's window back over it (src/sync/record-clock-lags.ts `windowStart`)
 *   unlisted_records     the records the list held that the incremental runs had not listed, found by
 *                        the stream's own probe (src/sync/record-clock-probe.ts); null when none: the
 *                        next run of the stream is a complete scan, which sets it back to null
 *   unlisted_at          when they were found (ISO 8601, local clock)
 */
export const sql = `
CREATE TABLE record_clock_by_partition (
  stream              TEXT NOT NULL,
  partition_value     TEXT NOT NULL DEFAULT '',
  lag_seconds         REAL NOT NULL DEFAULT 0,
  observations        INTEGER NOT NULL DEFAULT 0,
  last_observed_at    TEXT,
  source              TEXT,
  probe_at            TEXT,
  probe_high_water    TEXT,
  window_from         TEXT,
  window_lag_seconds  REAL,
  unlisted_records    INTEGER,
  unlisted_at         TEXT,
  PRIMARY KEY (stream, partition_value)
);
INSERT INTO record_clock_by_partition (stream, partition_value, lag_seconds, observations, last_observed_at, source, probe_at, probe_high_water)
SELECT stream, '', lag_seconds, observations, last_observed_at, source, probe_at, probe_high_water FROM record_clock;
DROP TABLE record_clock;
ALTER TABLE record_clock_by_partition RENAME TO record_clock;
`;
