/**
 * Migration 2: webhook endpoints and their durable delivery cursors (src/notify/webhooks/).
 *
 * One row per configured webhook endpoint. `delivered_seq` is the endpoint's cursor into the
 * changelog (`changes.seq`): every event with a seq at or below it was delivered with a 2xx answer
 * or skipped by the endpoint's event filter. It only moves forward after a 2xx, in the same
 * statement that records that attempt, so a crash re-sends at most the event in flight
 * (at-least-once). `webhooks replay` moves it back.
 *
 * Times are ISO 8601 (local clock).
 */
export const sql = `
CREATE TABLE webhook_endpoints (
  name             TEXT PRIMARY KEY,               -- the endpoint's name in the configuration
  url              TEXT NOT NULL,                  -- the URL it was last delivered to
  delivered_seq    INTEGER NOT NULL DEFAULT 0,     -- the cursor: last changes.seq delivered (2xx) or skipped by the filter
  created_at       TEXT NOT NULL,
  disabled_at      TEXT,                           -- set when the receiver answered 410 Gone; null while enabled
  disabled_reason  TEXT,
  attempts         INTEGER NOT NULL DEFAULT 0,     -- consecutive failed attempts for the next event to deliver
  next_attempt_at  TEXT,                           -- earliest time of the next attempt (retry schedule, Retry-After); null: now
  last_attempt_at  TEXT,
  last_status      INTEGER,                        -- HTTP status of the last attempt; null when no answer (refused, timeout)
  last_success_at  TEXT,
  last_error       TEXT,                           -- the last failure, kept after later successes (see last_error_at)
  last_error_at    TEXT,
  delivered_count  INTEGER NOT NULL DEFAULT 0,     -- events delivered with a 2xx, all time
  failed_count     INTEGER NOT NULL DEFAULT 0      -- failed attempts, all time
);
`;
