/**
 * The changelog's shape and its end (docs/mirror.md "The changelog: `changes`"): what a change row's
 * `data` holds, how it is written and read back, and the highest `seq`, here and nowhere else. Rows
 * are appended by the mirror store (store.ts `appendChange`) and read by src/notify/changelog-reader.ts.
 *
 * Stored formats of `data` (both can be in one mirror; readers get `ChangeData` from either):
 *   version 1 (no `version` key): `{ record, changes }`, a new record with every listed field as `{ old: null, new }`
 *   version 2: `{ version: 2, record, changes? }`: `changes` is left out for a new record (it carried
 *              every field a second time); `decodeChangeData` derives it from `record` again
 */
import { readField, type ApiRecord } from '../streams/define-stream.ts';
import { STREAM_LIST } from '../streams/definitions.ts';
import type { SqlExecutor, SqlReaderNow } from './sql/executor.ts';

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

/** The format version `encodeChangeData` writes (docs/mirror.md "Change data format"). */
export const CHANGE_DATA_VERSION = 2;

/**
 * What `appendChange` stores: the record after the change and, except for a new record, the fields
 * that changed. `changes` undefined means "a new record: every listed field is new" (version 2).
 */
export interface ChangeDataInput {
  record: unknown;
  /** `JSON.stringify(record)` when the caller has it already (stored as is: the record is not encoded again). */
  recordJson?: string;
  changes?: FieldChanges;
  /** `record.rejected` only: why the item failed its schema. */
  error?: string;
}

/**
 * The JSON text of a change row's `data` in format version 2: `{"version":2,"record":...}` plus
 * `"changes"` when given.
 */
export function encodeChangeData(data: ChangeDataInput): string {
  const record = data.recordJson ?? JSON.stringify(data.record);
  const error = data.error === undefined ? '' : `,"error":${JSON.stringify(data.error)}`;
  return data.changes === undefined
    ? `{"version":${CHANGE_DATA_VERSION},"record":${record}${error}}`
    : `{"version":${CHANGE_DATA_VERSION},"record":${record},"changes":${JSON.stringify(data.changes)}${error}}`;
}

/** A row's `data` as readers see it, and the format version it was stored in (1 or 2). */
export interface DecodedChangeData {
  version: number;
  data: ChangeData;
}

/** Each stream's listed fields, each with its dot path split. */
const LISTED_PATHS = new Map<string, readonly (readonly [string, readonly string[]])[]>(STREAM_LIST.map((stream) => [stream.name, stream.listedFields.map((field) => [field, field.split('.')] as const)]));

/** The value at `path` of `record` (undefined when a step is missing or not an object). */
function valueAt(record: unknown, path: readonly string[]): unknown {
  let node = record;
  for (const part of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

/**
 * A new record's `changes`, as a version-2 row without them reads (`decodeChangeData`): each of
 * the stream's listed fields as `{ old: null, new: value }` (null when absent); for a stream this
 * build does not know, each top-level field of the record.
 * @param record the row's `record` (any JSON value)
 */
export function derivedChanges(record: unknown, stream: string): FieldChanges {
  const changes: FieldChanges = {};
  const listed = LISTED_PATHS.get(stream);
  if (listed) {
    for (const [field, path] of listed) changes[field] = { old: null, new: valueAt(record, path) ?? null };
    return changes;
  }
  if (record !== null && typeof record === 'object') for (const field of Object.keys(record)) changes[field] = { old: null, new: readField(record as ApiRecord, field) ?? null };
  return changes;
}

/**
 * Reads a change row's parsed `data` of either format (module comment). A version-2 row without
 * `changes` (a new record) gets them derived: each of the stream's listed fields as
 * `{ old: null, new: value }`, exactly what version 1 stored (for a stream this build does not
 * know, each top-level field of the record).
 * @param parsed the JSON-parsed `data` column (an object)
 * @param stream the row's `stream`
 */
export function decodeChangeData(parsed: Record<string, unknown>, stream: string): DecodedChangeData {
  const version = typeof parsed.version === 'number' ? parsed.version : 1;
  const record = parsed.record;
  const changes = parsed.changes === undefined ? derivedChanges(record, stream) : (parsed.changes as FieldChanges);
  return { version, data: { record, changes, ...(typeof parsed.error === 'string' ? { error: parsed.error } : {}) } };
}

const LAST_SEQ_SQL = 'SELECT COALESCE(MAX(seq), 0) AS seq FROM changes';

/** The highest changelog `seq`, 0 when the changelog is empty. */
export async function lastChangeSeq(executor: SqlExecutor): Promise<number> {
  const row = await executor.get<{ seq: number }>(LAST_SEQ_SQL);
  return Number(row?.seq ?? 0);
}

/** `lastChangeSeq` read at once (a SQLite connection's `readNow`). */
export function lastChangeSeqNow(reader: SqlReaderNow): number {
  return Number(reader.getNow<{ seq: number }>(LAST_SEQ_SQL)?.seq ?? 0);
}
