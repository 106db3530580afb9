/**
 * Migration 3: the write queue's durable record (docs/writes.md, docs/mirror.md "`writes`"). One row per accepted
 * write, inserted with status `queued` BEFORE its BullMQ job is added, so an acknowledged write is
 * never lost (src/writes/write-store.ts owns every statement on this table).
 *
 *   id                 `wr_<uuid>`; also the BullMQ job id
 *   idempotency_key    the caller's key (or a generated one): the same key is one write
 *   kind               write kind, e.g. `transaction.create` (src/writes/kinds/)
 *   status             queued | sending | succeeded | failed | needs_review
 *                        sending: a budget slot was granted and the request may be on the wire; a
 *                        worker that finds a job in this state knows the outcome may be ambiguous
 *   payload            the validated payload (JSON text); payload_hash its sha256 over canonical JSON
 *   acting_as          the token NAME the write acts as (config `tokens`), never the token itself
 *   outcome            one line on how it ended: `created`, `entry already open`, the API's message,
 *                        or why it waits for review
 *   result             the response `content` (JSON text) when it succeeded
 *   error              the last error: the API's `message` and `err`, or a connection error
 *   http_status        the last HTTP status received (null when none)
 *   remote_id          the id of the record the write created or changed (transaction, deal, email...)
 *   attempts           requests sent (budget slots taken), retries included
 *   enqueue_error      set when the row was stored but adding the BullMQ job failed; cleared when queued
 *   sending_at         when the last request's budget slot was granted (ISO 8601)
 *   created_at, updated_at, finished_at   ISO 8601, local clock
 *
 * `writes_created_record` makes a created record belong to at most one write: the ledger lookup that
 * resolves an ambiguous `transaction.create` claims the transaction it found, and two writes can
 * never claim the same one.
 */
export const sql = `
CREATE TABLE writes (
  id              TEXT PRIMARY KEY,
  idempotency_key TEXT NOT NULL UNIQUE,
  kind            TEXT NOT NULL,
  status          TEXT NOT NULL CHECK (status IN ('queued', 'sending', 'succeeded', 'failed', 'needs_review')),
  payload         TEXT NOT NULL,
  payload_hash    TEXT NOT NULL,
  acting_as       TEXT NOT NULL DEFAULT 'default',
  outcome         TEXT,
  result          TEXT,
  error           TEXT,
  http_status     INTEGER,
  remote_id       TEXT,
  attempts        INTEGER NOT NULL DEFAULT 0,
  enqueue_error   TEXT,
  sending_at      TEXT,
  created_at      TEXT NOT NULL,
  updated_at      TEXT NOT NULL,
  finished_at     TEXT
);
CREATE INDEX writes_by_status ON writes (status, created_at);
CREATE UNIQUE INDEX writes_created_record ON writes (kind, remote_id)
  WHERE remote_id IS NOT NULL
    AND kind IN ('transaction.create', 'email.send', 'performance_review.create', 'location.create', 'domain.purchase');
`;
