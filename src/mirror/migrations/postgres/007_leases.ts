/** Migration 7 on PostgreSQL: the `leases` table, as ../007_leases.ts. */
export const sql = `
CREATE TABLE leases (
  name         text PRIMARY KEY,
  holder       text,
  fence        bigint NOT NULL DEFAULT 0,
  expires_at   text,
  acquired_at  text,
  renewed_at   text
);
`;
