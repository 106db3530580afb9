/** Migration 8 on PostgreSQL: the claim columns of `writes` and their index, as ../008_write_claims.ts. */
export const sql = `
ALTER TABLE writes ADD COLUMN claim_token text;
ALTER TABLE writes ADD COLUMN claim_expires_at text;
ALTER TABLE writes ADD COLUMN ambiguous_since text;
CREATE INDEX writes_claims ON writes (status, claim_expires_at);
`;
