/** Migration 2: durable delivery cursors for webhook endpoints (issue 3). Filled in by the webhooks work. */
export const sql = `
CREATE TABLE webhook_endpoints (
  name           TEXT PRIMARY KEY,
  url            TEXT NOT NULL,
  delivered_seq  INTEGER NOT NULL DEFAULT 0,    -- last changes.seq delivered (or skipped by filter)
  disabled_at    TEXT,                          -- set on 410 Gone
  disabled_reason TEXT,
  last_attempt_at TEXT,
  last_error     TEXT,
  attempts       INTEGER NOT NULL DEFAULT 0     -- failed attempts for the event at delivered_seq + 1
);
`;
