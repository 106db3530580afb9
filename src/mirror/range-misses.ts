/**
 * The two-scan rule inside a creation-time range (docs/sync.md "Range backfill"): a complete scan of
 * a range (`createdAfter`/`createdBefore`) counts a miss only for a live record the mirror knows to
 * lie in that range, and tombstones only those, so records of the stream outside the range are never
 * touched, even when they are gone from the API. Statements as `MirrorStore.recordMisses` (one
 * UPDATE for the misses, one for the tombstones, the gone changes in multi-row INSERTs), with the
 * range condition added.
 *
 * A record is known to lie in the range when its stored version carries `createdAt` (the API's
 * ISO 8601 text, compared as text, exclusive at both ends as the list's filters are). A stored
 * record without one (a transaction list item carries none, spec §2; an onboarding neither) is
 * never counted missed by a range scan: only a complete scan of the whole stream can tell it gone.
 */
import { jsonArrayValues, jsonPath, jsonTextField } from './sql/dialect.ts';
import type { SqlValue } from './sql/executor.ts';
import { MASS_DELETION_FLOOR, type AppendedChange, type MirrorStore } from './mirror-store.ts';
import { partitionColumn, type StreamDefinition } from '../streams/define-stream.ts';

/** A creation-time range: records created after `after` and before `before` (ISO 8601, exclusive; either may be absent). */
export interface CreatedRange {
  after?: string;
  before?: string;
}

/** The column holding a stream's record key. */
function keyColumn(stream: Pick<StreamDefinition, 'columns'>): string {
  return stream.columns.find((column) => column.primaryKey)?.column ?? 'id';
}

/** `AND` conditions (and their parameters) that hold for a row whose stored `createdAt` lies in `range`. */
function inRange(store: MirrorStore, range: CreatedRange): { sql: string; parameters: SqlValue[] } {
  const dialect = store.executor.dialect;
  const createdAt = jsonTextField(dialect, 'raw');
  const path = jsonPath(dialect, ['createdAt']);
  const conditions = [`${createdAt} IS NOT NULL`];
  const parameters: SqlValue[] = [path];
  if (range.after !== undefined) {
    conditions.push(`${createdAt} > ?`);
    parameters.push(path, range.after);
  }
  if (range.before !== undefined) {
    conditions.push(`${createdAt} < ?`);
    parameters.push(path, range.before);
  }
  return { sql: conditions.join(' AND '), parameters };
}

/**
 * `MirrorStore.recordMisses` for a complete scan of `range`: every live record known to lie in the
 * range (module comment) that scan `scanNumber` did not list gets one more miss; one missed by two
 * consecutive complete scans is tombstoned with the stream's gone change. Records first seen after
 * the scan began are not counted. A mass deletion is judged against the live records of the range:
 * more than `MASS_DELETION_FLOOR` and more than `share` of them are held (none tombstoned, `onHeld`
 * hears how many) unless `confirmed`. With `options.partition`, only that partition's records (a
 * partitioned stream). Call inside the transaction that ends the run.
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
  options: { massDeletion?: { share: number; confirmed?: boolean }; onHeld?: (held: { count: number; live: number }) => void; partition?: string } = {},
): Promise<AppendedChange[]> {
  const within = inRange(store, range);
  // A partitioned stream's range scan of one partition: its records only (docs/sync.md "Partitioned streams").
  const column = partitionColumn(stream);
  if (column !== undefined && options.partition) {
    within.sql += ` AND ${column} = ?`;
    within.parameters.push(options.partition);
  }
  await store.executor.run(
    `UPDATE ${stream.table} SET missed_scans = missed_scans + 1
     WHERE deleted_at IS NULL AND (last_seen_scan IS NULL OR last_seen_scan < ?) AND first_seen_at <= ? AND ${within.sql}`,
    [scanNumber, scanStartedAt, ...within.parameters],
  );
  const key = keyColumn(stream);
  const gone = (
    await store.executor.all<{ id: string; raw: string }>(`SELECT ${key} AS id, raw FROM ${stream.table} WHERE deleted_at IS NULL AND missed_scans >= 2 AND ${within.sql}`, within.parameters)
  ).sort((a, b) => Buffer.compare(Buffer.from(String(a.id)), Buffer.from(String(b.id))));
  if (gone.length === 0) return [];
  const hold = options.massDeletion;
  if (hold && !hold.confirmed && gone.length > MASS_DELETION_FLOOR) {
    const counted = await store.executor.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${stream.table} WHERE deleted_at IS NULL AND ${within.sql}`, within.parameters);
    const live = Number(counted!.n);
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
