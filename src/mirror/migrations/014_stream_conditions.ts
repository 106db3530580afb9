/**
 * Migration 14: each stream's operational condition (docs/operations.md "Operational events";
 * src/mirror/stream-condition-store.ts owns its statements, src/sync/stream-conditions.ts decides).
 *
 * `stream_conditions` holds one row per stream that has run: its condition (`ok`, `failing`,
 * `stale`, `unsupported`), the failed runs in a row since its last success, and when the condition
 * began. A change of condition appends one `stream.*` event to the changelog in the same
 * transaction, so each transition is said once, whichever process saw it and however often it runs.
 * A stream without a row is `ok`.
 */
export const sql = `
CREATE TABLE stream_conditions (
  stream        TEXT PRIMARY KEY,
  condition     TEXT NOT NULL DEFAULT 'ok',   -- ok | failing | stale | unsupported
  failed_runs   INTEGER NOT NULL DEFAULT 0,   -- failed runs in a row since the last success
  since         TEXT,                         -- when the condition began (ISO 8601, local clock)
  updated_at    TEXT NOT NULL                 -- when the row last changed
);
`;
