/** Migration 3 on PostgreSQL: `writes` and its two indexes, as ../003_writes.ts (types mapped as in 001_mirror.ts). */
export const sql = `
CREATE TABLE writes (
  id              text PRIMARY KEY,
  idempotency_key text NOT NULL UNIQUE,
  kind            text NOT NULL,
  status          text NOT NULL CHECK (status IN ('queued', 'sending', 'succeeded', 'failed', 'needs_review')),
  payload         text NOT NULL,
  payload_hash    text NOT NULL,
  acting_as       text NOT NULL DEFAULT 'default',
  outcome         text,
  result          text,
  error           text,
  http_status     bigint,
  remote_id       text,
  attempts        bigint NOT NULL DEFAULT 0,
  enqueue_error   text,
  sending_at      text,
  created_at      text NOT NULL,
  updated_at      text NOT NULL,
  finished_at     text
);
CREATE INDEX writes_by_status ON writes (status, created_at);
CREATE UNIQUE INDEX writes_created_record ON writes (kind, remote_id)
  WHERE remote_id IS NOT NULL
    AND kind IN ('transaction.create', 'email.send', 'performance_review.create', 'location.create', 'domain.purchase');
`;
