/**
 * Migration 1: the mirror contract (docs/mirror.md). Downstream systems depend on these tables and
 * columns; change them only by adding a later migration. The stream definitions
 * (src/streams/definitions.ts) describe these three tables exactly; src/mirror/stream-tables.ts checks
 * them at every open, and creates the table of a stream added later from its definition.
 *
 * Bookkeeping columns on every stream table (besides the spec's fields):
 *   raw            the record exactly as the API last returned it (JSON text)
 *   content_hash   sha256 of the record's stored fields, for no-op suppression
 *   first_seen_at  when the mirror first saw the record (ISO 8601, local clock)
 *   synced_at      when the record was last seen in a page or a write response (ISO 8601, local clock)
 *   deleted_at     set when the record was tombstoned (gone from two consecutive complete scans); null while listed
 *   last_seen_scan the complete scan (sync_state.scan_number) that last listed it
 *   missed_scans   consecutive complete scans that did not list it
 */
export const sql = `
CREATE TABLE transactions (
  id                TEXT PRIMARY KEY,
  type              TEXT NOT NULL,
  status            TEXT NOT NULL,
  amount            INTEGER NOT NULL,          -- signed cents (spec §2 Transaction)
  description       TEXT,
  date              TEXT,
  counterparty_name TEXT,                      -- from write responses only; list items do not carry it
  irs_category      TEXT,
  due_date          TEXT,
  legal_entity_id   TEXT,
  created_at        TEXT,
  updated_at        TEXT,
  raw               TEXT NOT NULL,
  content_hash      TEXT NOT NULL,
  first_seen_at     TEXT NOT NULL,
  synced_at         TEXT NOT NULL,
  deleted_at        TEXT,
  last_seen_scan    INTEGER,
  missed_scans      INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE deals (
  id                  TEXT PRIMARY KEY,
  reference_id        INTEGER,
  location_id         TEXT,
  pipeline_id         TEXT,
  stage_id            TEXT,
  account_id          TEXT,
  owner_id            TEXT,
  title               TEXT,
  value               INTEGER,                 -- cents
  currency            TEXT,
  status              TEXT NOT NULL,           -- OPEN | WON | LOST
  probability         REAL,
  expected_close_date TEXT,
  sort_order          REAL,
  won_lost_reason     TEXT,
  closed_at           TEXT,
  stage_moved_at      TEXT,
  created_at          TEXT,
  updated_at          TEXT,
  raw                 TEXT NOT NULL,
  content_hash        TEXT NOT NULL,
  first_seen_at       TEXT NOT NULL,
  synced_at           TEXT NOT NULL,
  deleted_at          TEXT,
  last_seen_scan      INTEGER,
  missed_scans        INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE onboardings (
  id              TEXT PRIMARY KEY,
  onboarding_step INTEGER NOT NULL,
  user_fullname   TEXT,
  raw             TEXT NOT NULL,
  content_hash    TEXT NOT NULL,
  first_seen_at   TEXT NOT NULL,
  synced_at       TEXT NOT NULL,
  deleted_at      TEXT,                        -- set when the onboarding completed (left the list)
  last_seen_scan  INTEGER,
  missed_scans    INTEGER NOT NULL DEFAULT 0
);

-- The changelog: append-only; a record row and its change row commit in one transaction.
CREATE TABLE changes (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  event_id    TEXT NOT NULL UNIQUE,
  type        TEXT NOT NULL,                   -- e.g. deal.won, transaction.created, write.succeeded
  stream      TEXT NOT NULL,                   -- transactions | deals | onboardings | writes
  record_id   TEXT NOT NULL,
  occurred_at TEXT NOT NULL,                   -- ISO 8601, when the mirror recorded the change
  data        TEXT NOT NULL                    -- JSON: { record, changes: { field: { old, new } } }
);
-- No index by record: consumers follow the changelog by seq, and an index on random record ids made
-- every page's commit about a third slower (bench/backfill.ts). A reader wanting one record's
-- history can scan, or index a copy.

-- One row per stream: the cursor, the run in progress (its checkpoint), and the last outcome.
CREATE TABLE sync_state (
  stream               TEXT PRIMARY KEY,
  cursor               TEXT,                   -- ISO 8601 server time; the next incremental run asks updatedAfter = cursor - overlap
  supported            INTEGER NOT NULL DEFAULT 1, -- 0 when the server answered 404 for the list endpoint
  run                  TEXT,                   -- JSON checkpoint of the run in progress, null when none
  scan_number          INTEGER NOT NULL DEFAULT 0, -- complete scans finished so far
  last_run_started_at  TEXT,
  last_run_finished_at TEXT,
  last_success_at      TEXT,
  last_error           TEXT,
  last_run_mode        TEXT,
  last_run_requests    INTEGER,
  last_run_records     INTEGER,
  last_run_changes     INTEGER,
  lock_owner           TEXT,                   -- the process running this stream now (one run per stream at a time)
  lock_expires_at      TEXT                    -- ISO; a lock not renewed by then is free (its holder died)
);
`;
