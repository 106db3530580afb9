/**
 * Migration 9: webhook delivery by record (docs/webhooks.md "Ordering", src/notify/webhooks/).
 *
 * `webhook_held_events` holds, per endpoint, the events held back behind a failing event of the same
 * record: the failing event itself (its retry count and time) and every later event of that record
 * the dispatcher met meanwhile (`next_attempt_at` null: sent as soon as the earlier ones are done).
 * An endpoint's cursor (`webhook_endpoints.delivered_seq`) moves past a held event; the event leaves
 * this table when it is delivered or given up on. So every event at or below the cursor is
 * delivered, filtered out, given up on, or here.
 *
 * `webhook_attempts` keeps every delivery attempt for a bounded time (pruned by age): when, the
 * answer's status, the latency, and the first 1 KiB of the answer's body (`webhooks attempts
 * EVENT_ID`, `webhooks list`). Times are ISO 8601 (local clock).
 *
 * Statements on them: src/notify/delivery/held-events.ts and attempts.ts (written by the delivery
 * loop, endpoint-delivery.ts, in the transaction that moves the endpoint's cursor).
 */
export const sql = `
CREATE TABLE webhook_held_events (
  endpoint         TEXT NOT NULL,             -- webhook_endpoints.name
  seq              INTEGER NOT NULL,          -- changes.seq of the held event
  event_id         TEXT NOT NULL,
  type             TEXT NOT NULL,
  stream           TEXT NOT NULL,             -- the record's stream and id: events of one record go in seq order
  record_id        TEXT NOT NULL,
  attempts         INTEGER NOT NULL DEFAULT 0, -- failed attempts of this event so far
  next_attempt_at  TEXT,                      -- when to retry it; null: once the earlier held events of its record are done
  held_at          TEXT NOT NULL,
  last_status      INTEGER,                   -- HTTP status of its last attempt; null without an answer or an attempt
  last_error       TEXT,
  PRIMARY KEY (endpoint, seq)
);

CREATE TABLE webhook_attempts (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  endpoint      TEXT NOT NULL,
  seq           INTEGER,                      -- changes.seq; null for a webhook.test
  event_id      TEXT NOT NULL,                -- the webhook-id sent
  type          TEXT NOT NULL,
  attempt       INTEGER NOT NULL,             -- 1 for the first attempt of this event at this endpoint
  attempted_at  TEXT NOT NULL,                -- when the request left
  outcome       TEXT NOT NULL,                -- delivered, failed or gone (410)
  status        INTEGER,                      -- HTTP status; null without an answer (refused, timeout)
  latency_ms    REAL NOT NULL,
  error         TEXT,                         -- one line for a failure
  response      TEXT                          -- the first 1 KiB of the answer's body
);
CREATE INDEX webhook_attempts_event ON webhook_attempts (event_id);
CREATE INDEX webhook_attempts_time ON webhook_attempts (attempted_at);
`;
