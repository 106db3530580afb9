/**
 * Migration 5: what a page cannot be trusted with (docs/sync.md "Invalid records", "Record clock").
 *
 * `rejected_records`: list items that failed their stream's schema, quarantined so that the valid
 * records of their page commit and the stream goes on (src/mirror/rejected-records.ts owns every
 * statement on it). One row per stream and record; a row leaves when the record is accepted.
 *
 *   stream         the stream that listed it
 *   record_key     its id when the item carries a string id, else `raw:<sha256 of raw>`
 *   record_id      its id when known, else null
 *   raw            the item as received (JSON text), secrets such as a vault's `sensitiveData` removed
 *   error          why it failed: the field and the rule (`item 3 field status: expected one of ...`)
 *   first_seen_at, last_seen_at   ISO 8601, local clock
 *   times_seen     pages that listed it invalid
 *
 * `record_clock`: how far a stream's record timestamps (`updatedAt`, `createdAt`) lag the clock its
 * cursor is taken from (the server's `Date`, or ours when there is none), measured from the records
 * themselves (src/sync/record-clock-lags.ts); the engine widens the `updatedAfter` overlap by it.
 *
 *   stream             the stream
 *   lag_seconds        the largest lag observed (>= 0), seconds
 *   observations       how many observations measured a lag
 *   last_observed_at   ISO 8601, local clock, of the last observation that measured a lag
 *   source             what measured the largest lag: `list` (a changed record) or `write` (a write response)
 */
export const sql = `
CREATE TABLE rejected_records (
  stream         TEXT NOT NULL,
  record_key     TEXT NOT NULL,
  record_id      TEXT,
  raw            TEXT NOT NULL,
  error          TEXT NOT NULL,
  first_seen_at  TEXT NOT NULL,
  last_seen_at   TEXT NOT NULL,
  times_seen     INTEGER NOT NULL DEFAULT 1,
  PRIMARY KEY (stream, record_key)
);

CREATE TABLE record_clock (
  stream            TEXT PRIMARY KEY,
  lag_seconds       REAL NOT NULL DEFAULT 0,
  observations      INTEGER NOT NULL DEFAULT 0,
  last_observed_at  TEXT,
  source            TEXT
);
`;
