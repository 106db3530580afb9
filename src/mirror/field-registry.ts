/**
 * The field registry (`stream_fields`, docs/mirror.md "Fields the spec does not show"): every field
 * path a stream's records carried that the stream's definition does not declare (`notes` on a
 * transaction list item, `user.email` on an onboarding), with when it was first seen and one record
 * that had it. Written by the mirror store in the transaction of the page that first carried the
 * field, with one `schema.field_added` change per new field (not one update per record); read by
 * `status` and by change detection (a known field absent from a stored record compares as null).
 * Every function runs through a `SqlExecutor` (src/mirror/sql/executor.ts).
 */
import type { SqlExecutor, SqlValue } from './sql/executor.ts';

/** The changelog event type announcing a field new to a stream. */
export const FIELD_ADDED_EVENT = 'schema.field_added';

/** One undeclared field of a stream. */
export interface UndeclaredField {
  stream: string;
  /** Dot path, e.g. `notes`, `user.email`. */
  field: string;
  /** When a page first carried it (ISO 8601, local clock). */
  firstSeenAt: string;
  /** A record that carried it then. */
  exampleRecordId: string;
}

/** Most fields in one INSERT (4 parameters each). */
const ROWS_PER_INSERT = 500;

/**
 * Records the fields of `candidates` (path -> a record carrying it) the stream's registry does not
 * hold yet. Call inside the page's transaction.
 * @returns the fields new to the stream (in the order given)
 */
export async function registerFields(executor: SqlExecutor, stream: string, candidates: ReadonlyMap<string, string>, now: string): Promise<UndeclaredField[]> {
  const entries = [...candidates];
  const added = new Set<string>();
  for (let start = 0; start < entries.length; start += ROWS_PER_INSERT) {
    const chunk = entries.slice(start, start + ROWS_PER_INSERT);
    const parameters: SqlValue[] = chunk.flatMap(([field, recordId]) => [stream, field, now, recordId]);
    const rows = await executor.all<{ field: string }>(
      `INSERT INTO stream_fields (stream, field, first_seen_at, example_record_id) VALUES ${chunk.map(() => '(?, ?, ?, ?)').join(', ')}
       ON CONFLICT (stream, field) DO NOTHING RETURNING field`,
      parameters,
    );
    for (const row of rows) added.add(row.field);
  }
  return entries.filter(([field]) => added.has(field)).map(([field, exampleRecordId]) => ({ stream, field, firstSeenAt: now, exampleRecordId }));
}

/** When each undeclared field of `stream` was first seen (ISO 8601), by field path: one SELECT. */
export async function fieldsFirstSeen(executor: SqlExecutor, stream: string): Promise<Map<string, string>> {
  const rows = await executor.all<{ field: string; first_seen_at: string }>('SELECT field, first_seen_at FROM stream_fields WHERE stream = ?', [stream]);
  return new Map(rows.map((row) => [row.field, row.first_seen_at]));
}

/** The undeclared fields seen, of one stream or of every stream, by stream then field. */
export async function listUndeclaredFields(executor: SqlExecutor, stream?: string): Promise<UndeclaredField[]> {
  const rows =
    stream === undefined
      ? await executor.all<{ stream: string; field: string; first_seen_at: string; example_record_id: string }>('SELECT * FROM stream_fields ORDER BY stream, field')
      : await executor.all<{ stream: string; field: string; first_seen_at: string; example_record_id: string }>('SELECT * FROM stream_fields WHERE stream = ? ORDER BY field', [stream]);
  return rows.map((row) => ({ stream: row.stream, field: row.field, firstSeenAt: row.first_seen_at, exampleRecordId: row.example_record_id }));
}
