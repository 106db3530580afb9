/**
 * Migration 11: named consumers of the changelog over HTTP, and the changelog's retention
 * (docs/mirror.md "Reading over HTTP", "Retention"; statements in src/notify/consumers.ts and
 * src/notify/retention.ts).
 *
 * `consumers`: one row per named consumer of `GET /consumers/NAME/changes`: its cursor (the last
 * seq it acknowledged with `POST /consumers/NAME/ack`), and when it was created, last read and last
 * acknowledged. The changelog's retention never prunes past a consumer's cursor.
 *
 * `changelog_pruned`: one row (`id` 1) once anything was pruned: every change at or below
 * `through_seq` is gone (a reader asking for them is told to re-read the mirror), when it was last
 * pruned and how many rows were pruned in all. Times are ISO 8601 (local clock).
 */
export const sql = `
CREATE TABLE consumers (
  name          TEXT PRIMARY KEY,             -- letters, digits, _ . - (the URL's NAME)
  cursor        INTEGER NOT NULL,             -- the last seq acknowledged: the next read starts after it
  created_at    TEXT NOT NULL,
  last_read_at  TEXT,                         -- its last GET /consumers/NAME/changes
  last_ack_at   TEXT                          -- its last POST /consumers/NAME/ack
);

CREATE TABLE changelog_pruned (
  id            INTEGER PRIMARY KEY,          -- always 1
  through_seq   INTEGER NOT NULL,             -- every change at or below it was pruned
  pruned_at     TEXT NOT NULL,
  rows_pruned   INTEGER NOT NULL              -- all time
);
`;
