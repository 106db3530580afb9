/**
 * Migration 12: what the sync keeps to trust a scan's misses and the records' clock
 * (docs/sync.md "Mass deletions held", "Record clock").
 *
 * `sync_state.deletion_hold`: null, or (JSON text) the tombstones a complete scan held back because
 * they were more than `sync.massDeletionShare` of the stream's live records (src/sync/sync-engine.ts
 * `finish`; `bizops-sync status` shows it, `backfill --confirm-deletions` lets them through):
 * `{ "count", "live", "share", "scanNumber", "since", "at" }` (times ISO 8601, local clock).
 *
 * `record_clock.probe_at`, `record_clock.probe_high_water`: the last probe of the stream's newest
 * records (a page sorted by `updatedAt`, src/sync/record-clock-lags.ts): when it was taken, in the
 * cursor's clock (ISO 8601), and the newest `updatedAt` the stream held then. A record stamped later
 * than the high water was stamped after the probe, which bounds the records' clock lag from below.
 */
export const sql = `
ALTER TABLE sync_state ADD COLUMN deletion_hold TEXT;
ALTER TABLE record_clock ADD COLUMN probe_at TEXT;
ALTER TABLE record_clock ADD COLUMN probe_high_water TEXT;
`;
