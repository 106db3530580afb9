/** Migration 3: write outcomes (issue 4). Filled in by the writes work. */
export const sql = `
CREATE TABLE writes (
  id              TEXT PRIMARY KEY,
  idempotency_key TEXT NOT NULL UNIQUE,
  kind            TEXT NOT NULL,
  status          TEXT NOT NULL,
  payload         TEXT NOT NULL,
  acting_as       TEXT,
  result          TEXT,
  error           TEXT,
  attempts        INTEGER NOT NULL DEFAULT 0,
  created_at      TEXT NOT NULL,
  updated_at      TEXT NOT NULL
);
`;
