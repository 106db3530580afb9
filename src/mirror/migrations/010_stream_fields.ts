/**
 * Migration 10: the field registry (docs/mirror.md "Fields the spec does not show",
 * src/mirror/field-registry.ts owns its statements).
 *
 * `stream_fields` holds, per stream, every field path its records carried that the stream's
 * definition does not declare (`notes` on transactions, `user.email` on onboardings), from the page
 * that first carried it: when, and one record that had it. Change detection compares such a field
 * like any other once it is known; `status` lists them. Times are ISO 8601 (local clock).
 */
export const sql = `
CREATE TABLE stream_fields (
  stream             TEXT NOT NULL,             -- the stream (its mirror table)
  field              TEXT NOT NULL,             -- dot path, e.g. notes, user.email
  first_seen_at      TEXT NOT NULL,
  example_record_id  TEXT NOT NULL,             -- a record that carried it when first seen
  PRIMARY KEY (stream, field)
);
`;
