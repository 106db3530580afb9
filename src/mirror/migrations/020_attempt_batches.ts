/**
 * Migration 20: a sink's batch of attempts kept as one row (docs/webhooks.md "Attempts",
 * src/notify/delivery/attempts.ts).
 *
 * When a broker answers a batch sent at once (a Redis pipeline, a window of JetStream publishes,
 * RabbitMQ confirms) with the same outcome for at least 10 of its events, their attempts share the
 * endpoint, the attempt number, the time the batch left, the outcome, the status and the error.
 * They are kept as one row of `webhook_attempt_batches` instead of one row of `webhook_attempts`
 * each; what differs per event (its seq, event id, type, latency and the broker's answer) is the
 * row's `events`, a JSON array of `[seq, event_id, type, latency_ms, response]` in the order the
 * attempts were settled. Every attempt stays visible one by one (`webhooks attempts EVENT_ID`,
 * `sinks list --attempts N`), pruned by age with the other attempts.
 *
 *   min_seq, max_seq   the lowest and highest seq of the batch's events: an event's attempts are
 *                      found from its seq (changes.event_id) through the index on them
 *   attempts           how many events `events` holds
 */
export const sql = `
CREATE TABLE webhook_attempt_batches (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  endpoint      TEXT NOT NULL,
  attempt       INTEGER NOT NULL,
  attempted_at  TEXT NOT NULL,
  outcome       TEXT NOT NULL,
  status        INTEGER,
  error         TEXT,
  min_seq       INTEGER NOT NULL,
  max_seq       INTEGER NOT NULL,
  attempts      INTEGER NOT NULL,
  events        TEXT NOT NULL
);
CREATE INDEX webhook_attempt_batches_seq ON webhook_attempt_batches (min_seq, max_seq);
CREATE INDEX webhook_attempt_batches_time ON webhook_attempt_batches (attempted_at);
`;
