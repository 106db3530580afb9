/** Migration 2 on PostgreSQL: `webhook_endpoints`, as ../002_webhooks.ts (types mapped as in 001_mirror.ts). */
export const sql = `
CREATE TABLE webhook_endpoints (
  name             text PRIMARY KEY,
  url              text NOT NULL,
  delivered_seq    bigint NOT NULL DEFAULT 0,
  created_at       text NOT NULL,
  disabled_at      text,
  disabled_reason  text,
  attempts         bigint NOT NULL DEFAULT 0,
  next_attempt_at  text,
  last_attempt_at  text,
  last_status      bigint,
  last_success_at  text,
  last_error       text,
  last_error_at    text,
  delivered_count  bigint NOT NULL DEFAULT 0,
  failed_count     bigint NOT NULL DEFAULT 0
);
`;
