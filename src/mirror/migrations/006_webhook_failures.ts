/**
 * Migration 6: webhook endpoints give up on an event and are disabled when failing too long
 * (docs/webhooks.md "Giving up", src/notify/webhooks/).
 *
 * `webhook_failed_deliveries` holds the events an endpoint gave up on after the last attempt of the
 * retry schedule: the endpoint's cursor moved past them so later events flow again, and
 * `bizops-sync webhooks replay --failed` re-sends them (deleting each row on a 2xx).
 *
 * `webhook_endpoints.failing_since` is the first failed attempt since the last 2xx (null while the
 * endpoint answers); an endpoint failing for `disableAfterDays` is disabled with
 * `disabled_kind = 'failing'` (`'gone'` after a 410). Times are ISO 8601 (local clock).
 */
export const sql = `
CREATE TABLE webhook_failed_deliveries (
  endpoint     TEXT NOT NULL,                 -- webhook_endpoints.name
  seq          INTEGER NOT NULL,              -- changes.seq of the event given up on
  event_id     TEXT NOT NULL,                 -- changes.event_id: the webhook-id of every attempt
  type         TEXT NOT NULL,
  attempts     INTEGER NOT NULL,              -- attempts made (the retry schedule's, plus failed replays)
  last_status  INTEGER,                       -- HTTP status of the last attempt; null without an answer
  last_error   TEXT NOT NULL,
  failed_at    TEXT NOT NULL,                 -- when it was given up on (or last failed a replay)
  PRIMARY KEY (endpoint, seq)
);

ALTER TABLE webhook_endpoints ADD COLUMN failing_since TEXT;   -- first failed attempt since the last 2xx; null while answering
ALTER TABLE webhook_endpoints ADD COLUMN disabled_kind TEXT;   -- 'gone' (410) or 'failing' (failing for disableAfterDays); null while enabled
`;
