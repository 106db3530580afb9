/** Migration 4 on PostgreSQL: `sync_state.last_scan`, as ../004_scan_outcome.ts. */
export const sql = `
ALTER TABLE sync_state ADD COLUMN last_scan text;
`;
