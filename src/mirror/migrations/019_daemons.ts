/**
 * Migration 19: where each running daemon answers, and its parts' states as it last wrote them
 * (docs/operations.md "The daemon's parts"; src/daemon/daemon-record.ts writes, src/status/daemon-parts.ts reads).
 *
 * One row per daemon process (`instance`, a random id of the process) and connection:
 *
 *   url          the daemon's HTTP port as reachable from its own host or container (`http://127.0.0.1:8080`)
 *   pid          the process id, on `hostname`
 *   started_at   when the process started (ISO 8601)
 *   seen_at      when it last wrote this row (ISO 8601): every third of `sync.leaseSeconds` while it can write the mirror
 *   parts        its parts' states then, JSON: an array of part-supervisor.ts `PartStatus`
 *
 * A daemon deletes its rows when it stops, and the rows of daemons not seen for an hour.
 */
export const sql = `
CREATE TABLE daemons (
  instance    TEXT NOT NULL,
  connection  TEXT NOT NULL,
  url         TEXT NOT NULL,
  pid         INTEGER NOT NULL,
  hostname    TEXT NOT NULL,
  started_at  TEXT NOT NULL,
  seen_at     TEXT NOT NULL,
  parts       TEXT NOT NULL,
  PRIMARY KEY (instance, connection)
);
`;
