/**
 * Migration 8: claims on writes, and the first ambiguous send (docs/writes.md "Claims"). The `writes` row is the truth of who may
 * send a write: a run of the write (a BullMQ job, a second worker, a replica) takes a claim on the
 * row in one conditional UPDATE before it sends anything, and only the claim's holder may mark the
 * row sending, retrying or finished (src/writes/write-store.ts owns every statement on the table).
 *
 *   claim_token        random token of the run holding the claim; null when nobody holds it
 *   claim_expires_at   when the claim lapses unless renewed (the database's clock, ISO 8601 UTC with
 *                        milliseconds, like `leases.expires_at`): a holder renews it while it runs, so an
 *                        expired claim means its holder died; the sweeper then resolves the write
 *   ambiguous_since    when the first send whose outcome stayed unknown was made (ISO 8601, the sending
 *                        host's clock), kept through re-sends: a write sent again after its ledger
 *                        lookups is checked for that send's late commit before it may say `succeeded`
 *
 * `writes_claims` serves the sweeper's question "which unfinished writes does nobody hold".
 */
export const sql = `
ALTER TABLE writes ADD COLUMN claim_token TEXT;
ALTER TABLE writes ADD COLUMN claim_expires_at TEXT;
ALTER TABLE writes ADD COLUMN ambiguous_since TEXT;
CREATE INDEX writes_claims ON writes (status, claim_expires_at);
`;
