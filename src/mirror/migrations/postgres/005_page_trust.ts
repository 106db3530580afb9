/** Migration 5 on PostgreSQL: `rejected_records` and `record_clock`, as ../005_page_trust.ts (types mapped as in 001_mirror.ts). */
export const sql = `
CREATE TABLE rejected_records (
  stream         text NOT NULL,
  record_key     text NOT NULL,
  record_id      text,
  raw            text NOT NULL,
  error          text NOT NULL,
  first_seen_at  text NOT NULL,
  last_seen_at   text NOT NULL,
  times_seen     bigint NOT NULL DEFAULT 1,
  PRIMARY KEY (stream, record_key)
);

CREATE TABLE record_clock (
  stream            text PRIMARY KEY,
  lag_seconds       double precision NOT NULL DEFAULT 0,
  observations      bigint NOT NULL DEFAULT 0,
  last_observed_at  text,
  source            text
);
`;
