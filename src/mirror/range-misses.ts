/**
 * The two-scan rule inside a creation-time range (docs/sync.md "Range backfill"): a complete scan of
 * a range (`createdAfter`/`createdBefore`) counts a miss only for a live record the mirror knows to
 * lie in that range, and tombstones only those, so records of the stream outside the range are never
 * touched, even when they are gone from the API.
 *
 * A record is known to lie in the range when its stored version carries `createdAt` naming an
 * instant strictly between the bounds (exclusive at both ends, as the list's filters are), compared
 * as instants (src/mirror/instants.ts): the API may write `Z` or `+00:00`, with or without a
 * fraction, and a record created exactly at a bound, which the list rightly leaves out, must not be
 * counted missed. The unlisted rows' `createdAt` are read in batches of `BATCH` by key and compared
 * here (no SQL cast of the API's text, which PostgreSQL would refuse for a malformed one); a stored
 * record without one, or with text that is no ISO 8601 time (a transaction list item carries none,
 * spec §2; an onboarding neither), is never counted missed by a range scan: only a complete scan of
 * the whole stream can tell it gone.
 */
import { instantMs } from './instants.ts';
import { jsonArrayValues, jsonPath, jsonTextField } from './sql/dialect.ts';
import type { SqlValue } from './sql/executor.ts';
import { MASS_DELETION_FLOOR, writtenNotAfter, type AppendedChange, type MirrorStore } from './mirror-store.ts';
import { partitionColumn, type StreamDefinition } from '../streams/define-stream.ts';

/** A creation-time range: records created after `after` and before `before` (ISO 8601, exclusive; either may be absent). */
export interface CreatedRange {
  after?: string;
  before?: string;
}

/** Rows read per batch of unlisted rows, and ids per statement naming them. */
const BATCH = 5_000;

/** The column holding a stream's record key. */
function keyColumn(stream: Pick<StreamDefinition, 'columns'>): string {
  return stream.columns.find((column) => column.primaryKey)?.column ?? 'id';
}

/** True when the instant `createdAt` names lies strictly inside `range` (bounds ISO 8601, either may be absent). */
function createdInside(createdAt: unknown, range: CreatedRange): boolean {
  const at = instantMs(createdAt);
  if (!Number.isFinite(at)) return false;
  if (range.after !== undefined && !(at > instantMs(range.after))) return false;
  if (range.before !== undefined && !(at < instantMs(range.before))) return false;
  return true;
}

/**
 * `MirrorStore.recordMisses` for a complete scan of `range`: every live record known to lie in the
 * range (module comment) that scan `scanNumber` did not list gets one more miss; one missed by two
 * consecutive complete scans is tombstoned with the stream's gone change. Records first seen after
 * the scan began are not counted, nor records a write-through wrote after the scan's changelog mark
 * (`options.writtenAfter`). A mass deletion is judged against the live records of the range
 * (those the scan listed and those it missed): more than `MASS_DELETION_FLOOR` and more than `share`
 * of them are held (none tombstoned, `onHeld` hears how many) unless `confirmed`. With
 * `options.partition`, only that partition's records (a partitioned stream). Call inside the
 * transaction that ends the run.
 * @param scanStartedAt ISO local time the scan began
 * @returns the tombstone changes appended (none when held)
 */
export async function recordRangeMisses(
  store: MirrorStore,
  stream: StreamDefinition,
  scanNumber: number,
  scanStartedAt: string,
  range: CreatedRange,
  now = new Date().toISOString(),
  options: { massDeletion?: { share: number; confirmed?: boolean }; onHeld?: (held: { count: number; live: number }) => void; partition?: string; writtenAfter?: number } = {},
): Promise<AppendedChange[]> {
  const { executor } = store;
  // Rows a write-through wrote after the scan's changelog mark are no misses (mirror-store.ts `recordMisses`).
  const written = writtenNotAfter(options.writtenAfter);
  const key = keyColumn(stream);
  const createdAt = jsonTextField(executor.dialect, 'raw');
  const path = jsonPath(executor.dialect, ['createdAt']);
  // A partitioned stream's range scan of one partition: its records only (docs/sync.md "Partitioned streams").
  const column = partitionColumn(stream);
  const scope = column !== undefined && options.partition ? { sql: ` AND ${column} = ?`, parameters: [options.partition] as SqlValue[] } : { sql: '', parameters: [] as SqlValue[] };
  // The live rows this scan did not list, first seen before it began, whose createdAt lies in the range.
  const missed: string[] = [];
  for (let after: string | undefined; ; ) {
    const rows = await executor.all<{ id: string; created_at: unknown }>(
      `SELECT ${key} AS id, ${createdAt} AS created_at FROM ${stream.table}
       WHERE deleted_at IS NULL AND (last_seen_scan IS NULL OR last_seen_scan < ?) AND first_seen_at <= ?${written.sql}${scope.sql}${after === undefined ? '' : ` AND ${key} > ?`}
       ORDER BY ${key} LIMIT ${BATCH}`,
      [path, scanNumber, scanStartedAt, ...written.params, ...scope.parameters, ...(after === undefined ? [] : [after])],
    );
    for (const row of rows) if (createdInside(row.created_at, range)) missed.push(String(row.id));
    if (rows.length < BATCH) break;
    after = String(rows.at(-1)!.id);
  }
  const gone: { id: string; raw: string }[] = [];
  for (let start = 0; start < missed.length; start += BATCH) {
    const ids = JSON.stringify(missed.slice(start, start + BATCH));
    await executor.run(`UPDATE ${stream.table} SET missed_scans = missed_scans + 1 WHERE ${key} IN ${jsonArrayValues(executor.dialect)}`, [ids]);
    gone.push(...(await executor.all<{ id: string; raw: string }>(`SELECT ${key} AS id, raw FROM ${stream.table} WHERE missed_scans >= 2 AND ${key} IN ${jsonArrayValues(executor.dialect)}`, [ids])));
  }
  gone.sort((a, b) => Buffer.compare(Buffer.from(String(a.id)), Buffer.from(String(b.id))));
  if (gone.length === 0) return [];
  const hold = options.massDeletion;
  if (hold && !hold.confirmed && gone.length > MASS_DELETION_FLOOR) {
    // The range's live records: those this scan listed (the list says they lie in it) and those it missed.
    const live = (await store.countSeenInScan(stream, scanNumber, options.partition)) + missed.length;
    if (gone.length > hold.share * live) {
      options.onHeld?.({ count: gone.length, live });
      return [];
    }
  }
  await store.executor.run(`UPDATE ${stream.table} SET deleted_at = ? WHERE ${key} IN ${jsonArrayValues(store.executor.dialect)}`, [now, JSON.stringify(gone.map((row) => row.id))]);
  return store.appendChanges(
    gone.map((row) => ({
      type: stream.changes.gone,
      stream: stream.name,
      recordId: String(row.id),
      occurredAt: now,
      data: { record: JSON.parse(row.raw) as unknown, changes: { deletedAt: { old: null, new: now } } },
      ...(options.partition ? { partition: options.partition } : {}),
    })),
  );
}
