/**
 * Migration 13: the scratch list of `bizops-sync verify` (docs/sync.md "Verify";
 * src/mirror/verify-listing.ts owns its statements).
 *
 * `verify_listed` holds, while a verification runs, the ids its scan of one stream listed: one row
 * per id (the first position it was listed at, and how many records had left and entered the list
 * by then, for the scan's drift and tie bookkeeping). It keeps the verification's memory bounded by
 * a page: each page is compared with the mirror by its ids, and the records the mirror holds that
 * the scan never listed are found by one query against this table at the end. A verification
 * deletes its rows when it ends; rows of one that died are deleted by the next one after a day
 * (`listed_at`, ISO 8601, local clock). Nothing else reads it; it is not part of the mirror's
 * public contract.
 */
export const sql = `
CREATE TABLE verify_listed (
  verification  TEXT NOT NULL,        -- one verification of one stream (a random id)
  record_id     TEXT NOT NULL,        -- an id the scan listed (a quarantined item's quarantine key)
  position      INTEGER NOT NULL,     -- where it was first listed (offset in the list)
  removed       INTEGER NOT NULL,     -- records that had left the list when it was first listed
  added         INTEGER NOT NULL,     -- records that had entered the list when it was first listed
  listed_at     TEXT NOT NULL,
  PRIMARY KEY (verification, record_id)
);
`;
