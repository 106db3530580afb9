/**
 * Migration 7: leases with fencing tokens (docs/operations.md "Running two daemons (replicas)",
 * src/mirror/leases.ts). One row per thing only one process may do at a time: `stream:<name>` (run
 * a stream: page commits, its checkpoint, its cursor) and `webhooks` (deliver the changelog and
 * move the endpoints' cursors). A mirror serves one connection, so names carry no connection.
 *
 * `fence` grows by one each time the lease changes hands (taken when free or expired) and stays
 * the same while its holder renews it: a write made under the lease checks, inside its own
 * transaction, that the fence is still the one it was given. `expires_at` and the other times are
 * written by the database's clock (SQLite: this host's; PostgreSQL: the server's `clock_timestamp()`),
 * as ISO 8601 text in UTC with milliseconds, so that one clock alone judges expiry.
 */
export const sql = `
CREATE TABLE leases (
  name         TEXT PRIMARY KEY,              -- stream:<stream> or webhooks
  holder       TEXT,                          -- <host>:<pid>:<random> of the holding process; null when released
  fence        INTEGER NOT NULL DEFAULT 0,    -- fencing token: +1 at every takeover, never reused
  expires_at   TEXT,                          -- the database's clock; null when released
  acquired_at  TEXT,                          -- when the current holder took it
  renewed_at   TEXT                           -- its last renewal (or fenced write)
);
`;
