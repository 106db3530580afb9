/**
 * Measuring how far a stream's record timestamps lag its cursor's clock (docs/sync.md "Record
 * clock"). The cursor is the server's `Date` at a run's first page (this host's clock when the
 * server sends none); `updatedAfter` compares it with the records' own `updatedAt`. When the records'
 * clock is behind, a change made just after a run carries an `updatedAt` older than the next run's
 * `updatedAfter` and is missed until a complete scan. The lag cannot be read off any one timestamp,
 * but these give lower bounds, each in the cursor's clock:
 *
 * - a changed record on a page (`lagsFromPage`): its old version was still current when we last
 *   listed it (`synced_at`, our clock, shifted to the cursor's clock by the page's `offsetMs`),
 *   so it changed later; an `updatedAt` older than that is behind by at least the difference;
 * - a write's response (`lagsFromWrites`): the record it created or changed (a transaction's
 *   `createdAt`, a closed deal's `updatedAt`) was stamped while the request was in flight, so an
 *   older stamp than the write's finish is behind by about the difference.
 *
 * Lags under `MIN_LAG_SECONDS` are not recorded: the `Date` header has second resolution, and a page
 * committed a moment after the server produced it makes sub-second false lags.
 *
 * What stays unseen: transaction list items carry no timestamps (spec §2), so a transaction changed
 * by someone else gives no observation; only the transactions this worker creates measure its
 * lag. The engine widens every stream's overlap by the lag measured on it; the reconciliation (a
 * complete scan, no `updatedAfter`) finds whatever a lag larger than the overlap hid.
 */
import { jsonArrayValues, jsonPath, jsonTextField } from '../mirror/sql/dialect.ts';
import type { SqlExecutor } from '../mirror/sql/executor.ts';
import type { ApiRecord, StreamDefinition } from '../streams/define-stream.ts';

/** Lags below this, seconds, are measurement noise (module comment). */
export const MIN_LAG_SECONDS = 1;

/** Where a write's response keeps the timestamp of the record it created or changed, per stream (field paths into `writes.result`). */
const WRITE_TIMESTAMPS: Record<string, { kind: string; path: readonly string[] }[]> = {
  transactions: [{ kind: 'transaction.create', path: ['transaction', 'createdAt'] }],
  deals: [{ kind: 'deal.close', path: ['deal', 'updatedAt'] }],
};

/** The stream table's column holding `updatedAt`, when the stream has one. */
function updatedAtColumn(stream: StreamDefinition): string | undefined {
  return stream.columns.find((column) => column.field === 'updatedAt')?.column;
}

/**
 * Lags shown by the changed records of one page, seconds (only those >= MIN_LAG_SECONDS). Call
 * before the page is applied (it reads the stored versions).
 * @param offsetMs the cursor's clock minus ours at the page (server `Date` minus local receipt time; 0 without a `Date`)
 */
export async function lagsFromPage(executor: SqlExecutor, stream: StreamDefinition, records: readonly ApiRecord[], offsetMs: number): Promise<number[]> {
  const column = updatedAtColumn(stream);
  if (!column) return [];
  const stamped = records.filter((record) => typeof record.updatedAt === 'string');
  if (stamped.length === 0) return [];
  const key = stream.columns.find((c) => c.primaryKey)?.column ?? 'id';
  const rows = await executor.all<{ id: string; synced_at: string; updated_at: string | null }>(
    `SELECT ${key} AS id, synced_at, ${column} AS updated_at FROM ${stream.table} WHERE deleted_at IS NULL AND ${key} IN ${jsonArrayValues(executor.dialect)}`,
    [JSON.stringify(stamped.map((record) => String(record[stream.key])))],
  );
  const stored = new Map(rows.map((row) => [row.id, row]));
  const lags: number[] = [];
  for (const record of stamped) {
    const previous = stored.get(String(record[stream.key]));
    if (!previous || previous.updated_at === null || previous.updated_at === record.updatedAt) continue;
    const lag = (Date.parse(previous.synced_at) + offsetMs - Date.parse(record.updatedAt as string)) / 1000;
    if (lag >= MIN_LAG_SECONDS) lags.push(lag);
  }
  return lags;
}

/**
 * Lags shown by the writes that finished since `sinceIso` and created or changed a record of
 * `stream`, seconds (only those >= MIN_LAG_SECONDS).
 * @param offsetMs the cursor's clock minus ours (as for `lagsFromPage`)
 */
export async function lagsFromWrites(executor: SqlExecutor, stream: string, sinceIso: string, offsetMs: number): Promise<number[]> {
  const lags: number[] = [];
  for (const { kind, path } of WRITE_TIMESTAMPS[stream] ?? []) {
    const rows = await executor.all<{ finished_at: string; stamp: unknown }>(
      `SELECT finished_at, ${jsonTextField(executor.dialect, 'result')} AS stamp FROM writes WHERE kind = ? AND status = 'succeeded' AND finished_at > ? AND result IS NOT NULL`,
      [jsonPath(executor.dialect, path), kind, sinceIso],
    );
    for (const row of rows) {
      if (typeof row.stamp !== 'string') continue;
      const lag = (Date.parse(row.finished_at) + offsetMs - Date.parse(row.stamp)) / 1000;
      if (lag >= MIN_LAG_SECONDS) lags.push(lag);
    }
  }
  return lags;
}
