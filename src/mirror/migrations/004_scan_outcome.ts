/**
 * Migration 4: the outcome of each stream's last scan (docs/sync.md "Scan completeness").
 *
 *   sync_state.last_scan  JSON `ScanOutcome` (src/mirror/mirror-store.ts): `complete` (it saw at least as many
 *                         distinct ids as the final `pagination.total`: misses counted) or `incomplete`
 *                         with a reason (`ended-early`, `unstable-order`) and its counts; null before
 *                         the first run that finished.
 */
export const sql = `
ALTER TABLE sync_state ADD COLUMN last_scan TEXT;
`;
