/**
 * The changelog's shape and its end (docs/mirror.md "The changelog: `changes`"): what a change row's
 * `data` holds, and the highest `seq`, read here and nowhere else. Rows are appended by the mirror
 * store (store.ts `appendChange`) and read by src/notify/changelog.ts.
 */
import type { MirrorDatabase } from './database.ts';

/** One changed field: its value before and after (null when absent). */
export interface FieldChange {
  old: unknown;
  new: unknown;
}

/** `{ field: { old, new } }` for each changed field (dot paths, e.g. `user.fullname`). */
export type FieldChanges = Record<string, FieldChange>;

/**
 * The JSON of a change row's `data` (docs/mirror.md): the record after the change (for a tombstone
 * its last version, for a write the write as `GET /writes/{id}` shows it) and each changed field's
 * old and new value (for a new record every field, with `old: null`).
 */
export interface ChangeData {
  record: unknown;
  changes: FieldChanges;
  /** `record.rejected` only: why the item failed its schema (the field and the rule). */
  error?: string;
}

const LAST_SEQ_SQL = 'SELECT COALESCE(MAX(seq), 0) AS seq FROM changes';

/** The highest changelog `seq`, 0 when the changelog is empty. */
export function lastChangeSeq(db: MirrorDatabase): number {
  return (db.prepare(LAST_SEQ_SQL).get() as { seq: number }).seq;
}
