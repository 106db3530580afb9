/** Migration 6 on PostgreSQL: `webhook_failed_deliveries` and two `webhook_endpoints` columns, as ../006_webhook_failures.ts. */
export const sql = `
CREATE TABLE webhook_failed_deliveries (
  endpoint     text NOT NULL,
  seq          bigint NOT NULL,
  event_id     text NOT NULL,
  type         text NOT NULL,
  attempts     bigint NOT NULL,
  last_status  bigint,
  last_error   text NOT NULL,
  failed_at    text NOT NULL,
  PRIMARY KEY (endpoint, seq)
);

ALTER TABLE webhook_endpoints ADD COLUMN failing_since text;
ALTER TABLE webhook_endpoints ADD COLUMN disabled_kind text;
`;
