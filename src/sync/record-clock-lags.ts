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
 * - a record stamped after the high water of its stream (or partition: every statement here is
 *   per (stream, partition)) (`lagsAboveHighWater`): at the high water's moment (a run's first page,
 *   cursor's clock) no record of it was stamped later, so this one was stamped after that moment; an
 *   `updatedAt` older than it lags by at least the difference. This needs no old version: the first
 *   change of a record after a run measures the lag, within the next run of the stream itself.
 *
 * Each bound is checked for plausibility, and the lag decays:
 *
 * - a record whose new `updatedAt` is older than the one stored (it went backwards: an import, a
 *   restore, a fault), or not later than the stream's high water, measures nothing from its stored
 *   version: under one clock a change is stamped after the version it replaces, and a change made
 *   after the high water's moment is stamped after the high water (a stamp that came back to an
 *   old value after going backwards is no new stamp);
 * - every page also gives an upper bound (`lagCeiling`): a listed record was stamped before the
 *   page was answered, so the records' clock is at most `page time - updatedAt` behind; the newest
 *   stamp of a page that is not in the future caps the stream's lag (it decays as soon as a record
 *   stamped in step is listed).
 *
 * Lags under `MIN_LAG_SECONDS` are not recorded: the `Date` header has second resolution, and a page
 * committed a moment after the server produced it makes sub-second false lags.
 *
 * A lag measured after a run was made shows that run's window was too short: the next run widens
 * its window back over every window listed with the smaller lag (`windowStart`), so a change missed
 * then is listed then, not at the next complete scan.
 *
 * Transaction list items carry no timestamps (spec §2), so a transaction changed by someone else
 * gives no observation of its own; the stream's own probe (src/sync/record-clock-probe.ts) finds
 * the records its list holds that the incremental runs did not list, and bounds the lag from above.
 */
import { instantMs } from '../mirror/instants.ts';
import { inList, listParameter } from '../mirror/sql/dialect.ts';
import type { SqlExecutor } from '../mirror/sql/executor.ts';
import { RecordClockStore } from '../mirror/record-clock-store.ts';
import type { ApiRecord, StreamDefinition } from '../streams/define-stream.ts';

/** Lags below this, seconds, are measurement noise (module comment). */
export const MIN_LAG_SECONDS = 1;

/** Where a write's response keeps the timestamp of the record it created or changed, per stream (field paths into `writes.result`). */
const WRITE_TIMESTAMPS: Record<string, { kind: string; path: readonly string[] }[]> = {
  transactions: [{ kind: 'transaction.create', path: ['transaction', 'createdAt'] }],
  deals: [{ kind: 'deal.close', path: ['deal', 'updatedAt'] }],
};

/** The string at `path` inside the JSON text `result`, or undefined (absent, not a string, or not JSON). */
function stampAt(result: string, path: readonly string[]): string | undefined {
  let node: unknown;
  try {
    node = JSON.parse(result);
  } catch {
    return undefined;
  }
  for (const field of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[field];
  }
  return typeof node === 'string' ? node : undefined;
}

/** The stream table's column holding `updatedAt`, when the stream has one. */
function updatedAtColumn(stream: StreamDefinition): string | undefined {
  return stream.columns.find((column) => column.field === 'updatedAt')?.column;
}

/**
 * True when the stream measures the records' clock itself: its list items carry `updatedAt` and its
 * incremental runs filter on it (deals). Other streams (transactions: list items without timestamps,
 * spec §2) rely on the probe of such a stream (src/sync/record-clock-probe.ts).
 */
export function measuresRecordClock(stream: StreamDefinition): boolean {
  return stream.request.cursor === 'updatedAfter' && stream.listedFields.includes('updatedAt') && updatedAtColumn(stream) !== undefined;
}

/**
 * `names` in the order a pass over several streams runs them (`bizops-sync sync`, `backfill`): the
 * streams that measure the records' clock first, then the others, each group in the order given.
 * A lag the first show (a deal stamped after its high water) then widens the overlap of the others
 * (transactions, whose items carry no timestamps) in the same pass, not only in the next one.
 */
export function measuringFirst<Name extends string>(names: readonly Name[], streamOf: (name: Name) => StreamDefinition): Name[] {
  return [...names.filter((name) => measuresRecordClock(streamOf(name))), ...names.filter((name) => !measuresRecordClock(streamOf(name)))];
}

/**
 * Lower bounds from records stamped after the high water, seconds (only those >= MIN_LAG_SECONDS):
 * `highWater.at - updatedAt` for each record whose `updatedAt` is later than `highWater.updatedAt`.
 */
export function lagsAboveHighWater(highWater: { at: string; updatedAt: string } | null, records: readonly ApiRecord[]): number[] {
  if (!highWater) return [];
  const water = instantMs(highWater.updatedAt);
  const at = Date.parse(highWater.at);
  const lags: number[] = [];
  for (const record of records) {
    const stamp = instantMs(record.updatedAt);
    if (!(stamp > water)) continue;
    const lag = (at - stamp) / 1000;
    if (lag >= MIN_LAG_SECONDS) lags.push(lag);
  }
  return lags;
}

/**
 * The upper bound a page gives, seconds: its time (cursor's clock) plus the second the `Date`
 * header may hide, minus its newest `updatedAt` not in the future (a stamp later than the page time plus a second is an anomaly of that record, not
 * the clock, and is left out); undefined when the page has no such stamp.
 * @param pageTimeMs the page's time in the cursor's clock (server `Date`, or ours without one), ms epoch
 */
export function lagCeiling(records: readonly ApiRecord[], pageTimeMs: number): number | undefined {
  let newest = Number.NEGATIVE_INFINITY;
  for (const record of records) {
    const stamp = instantMs(record.updatedAt);
    if (stamp <= pageTimeMs + 1000 && stamp > newest) newest = stamp;
  }
  // The Date header has second resolution (the page was answered up to a second after it says).
  return Number.isFinite(newest) ? Math.max(0, (pageTimeMs + 1000 - newest) / 1000) : undefined;
}

/**
 * The `updatedAfter` of an incremental run of a stream or partition (docs/sync.md "Record clock"):
 * the cursor less the overlap and the largest lag measured (`lagSeconds`); earlier when the lag grew
 * since the window of the runs before (`RecordClockLag.window`: they listed with a smaller lag, and
 * may have missed what the larger one hides, so this run reaches back that much further than their
 * start); and, for a stream that measures the records' clock, no later than its high water less the
 * overlap (every record changed since the high water was taken is stamped later than it, whatever
 * the lag: the run lists every change since its previous run even before the lag is known; a quiet
 * stream lists only its newest records).
 * @param cursor ISO 8601, the cursor's clock
 * @param lookbackMs the overlap, ms
 * @returns ISO 8601
 */
export async function windowStart(executor: SqlExecutor, stream: StreamDefinition, partition: string, cursor: string, lookbackMs: number, lagSeconds: number): Promise<string> {
  const { window, highWater } = await new RecordClockStore(executor).read({ stream: stream.name, partition });
  let from = Date.parse(cursor) - lookbackMs - lagSeconds * 1000;
  if (window && lagSeconds > window.lagSeconds) from = Math.min(from, Date.parse(window.from) - (lagSeconds - window.lagSeconds) * 1000);
  if (highWater && measuresRecordClock(stream)) from = Math.min(from, instantMs(highWater.updatedAt) - lookbackMs);
  return new Date(from).toISOString();
}

/**
 * The newest `updatedAt` among `records` and `newest` (both ISO 8601; undefined when neither
 * holds an instant), for a run's high water: called with each page's records, carried in the checkpoint.
 */
export function newestStamp(records: readonly ApiRecord[], newest: string | undefined): string | undefined {
  let best = newest === undefined ? Number.NEGATIVE_INFINITY : instantMs(newest);
  for (const record of records) {
    const stamp = instantMs(record.updatedAt);
    if (stamp > best) best = stamp;
  }
  return Number.isFinite(best) ? new Date(best).toISOString() : undefined;
}

/**
 * Keeps the high water of a stream or partition at the end of a run that moved its cursor: at `at`
 * (the run's first page, cursor's clock) no record of it was stamped later than the newest
 * `updatedAt` the run listed (`newestListed`), nor later than the run's `updatedAfter` (an
 * incremental run listed every record stamped after it; a complete scan listed every record). Taken
 * from the run's own pages, not from the table: a partition's high water is its own, and another
 * partition's newer records never raise it. A record changed during the run may raise it: that errs
 * towards a smaller lag bound, never a wrong one. Does nothing for a stream that does not measure the
 * clock. Call in the run's last transaction.
 */
export async function saveHighWater(
  executor: SqlExecutor,
  stream: StreamDefinition,
  partition: string,
  run: { at: string | undefined; newestListed: string | undefined; updatedAfter: string | undefined },
): Promise<void> {
  if (!run.at || !measuresRecordClock(stream)) return;
  const candidates = [run.newestListed, run.updatedAfter].map(instantMs).filter((stamp) => Number.isFinite(stamp));
  if (candidates.length === 0) return;
  await new RecordClockStore(executor).saveHighWater({ stream: stream.name, partition }, run.at, new Date(Math.max(...candidates)).toISOString());
}

/**
 * Lags shown by the records of one page, seconds (only those >= MIN_LAG_SECONDS): changed records
 * against their stored versions (a stamp that went backwards measures nothing), and records stamped
 * after the stream's high water (`lagsAboveHighWater`). Call before the page is applied (it reads
 * the stored versions). A record whose row a write-through wrote after the page's changelog mark
 * (`writtenAfter`) is not compared with it: the page does not apply it, and its `synced_at` is the
 * write-through's, not a listing's (docs/sync.md "Write-throughs during a run").
 * @param offsetMs the cursor's clock minus ours at the page (server `Date` minus local receipt time; 0 without a `Date`)
 * @param writtenAfter the page's changelog mark; undefined compares every record
 */
export async function lagsFromPage(
  executor: SqlExecutor,
  stream: StreamDefinition,
  partition: string,
  records: readonly ApiRecord[],
  offsetMs: number,
  writtenAfter?: number,
): Promise<number[]> {
  const column = updatedAtColumn(stream);
  if (!column) return [];
  const stamped = records.filter((record) => typeof record.updatedAt === 'string');
  if (stamped.length === 0) return [];
  const key = stream.columns.find((c) => c.primaryKey)?.column ?? 'id';
  const rows = await executor.all<{ id: string; synced_at: string; updated_at: string | null; written_seq: number | string | null }>(
    `SELECT ${key} AS id, synced_at, ${column} AS updated_at, written_seq FROM ${stream.table} WHERE deleted_at IS NULL AND ${inList(executor.dialect, key)}`,
    [listParameter(executor.dialect, stamped.map((record) => String(record[stream.key])))],
  );
  const kept = (row: { written_seq: number | string | null }) => writtenAfter !== undefined && row.written_seq !== null && Number(row.written_seq) > writtenAfter;
  const stored = new Map(rows.filter((row) => !kept(row)).map((row) => [row.id, row]));
  const { highWater } = await new RecordClockStore(executor).read({ stream: stream.name, partition });
  const water = highWater ? instantMs(highWater.updatedAt) : Number.NEGATIVE_INFINITY;
  const lags: number[] = [];
  for (const record of stamped) {
    const previous = stored.get(String(record[stream.key]));
    // The same instant (perhaps written another way: `Z`, `+00:00`): no new stamp.
    const stamp = instantMs(record.updatedAt);
    if (!previous || previous.updated_at === null || !Number.isFinite(stamp) || stamp === instantMs(previous.updated_at)) continue;
    // Went backwards, or not past the high water: not a stamp of the server's clock (module comment).
    if (stamp < instantMs(previous.updated_at) || !(stamp > water)) continue;
    const lag = (Date.parse(previous.synced_at) + offsetMs - stamp) / 1000;
    if (lag >= MIN_LAG_SECONDS) lags.push(lag);
  }
  return [...lags, ...lagsAboveHighWater(highWater, stamped)];
}

/**
 * Lags shown by the writes that finished since `sinceIso` and created or changed a record of
 * `stream`, seconds (only those >= MIN_LAG_SECONDS). Each write's `result` is read as text and
 * parsed here, never cast by SQL: a stored response is the API's text, and one that PostgreSQL's
 * `jsonb` refuses (a lone surrogate) must not fail every run of the stream.
 * @param offsetMs the cursor's clock minus ours (as for `lagsFromPage`)
 */
export async function lagsFromWrites(executor: SqlExecutor, stream: string, sinceIso: string, offsetMs: number): Promise<number[]> {
  const lags: number[] = [];
  for (const { kind, path } of WRITE_TIMESTAMPS[stream] ?? []) {
    const rows = await executor.all<{ finished_at: string; result: string }>(
      `SELECT finished_at, result FROM writes WHERE kind = ? AND status = 'succeeded' AND finished_at > ? AND result IS NOT NULL`,
      [kind, sinceIso],
    );
    for (const row of rows) {
      const stamp = stampAt(row.result, path);
      if (stamp === undefined) continue;
      const lag = (Date.parse(row.finished_at) + offsetMs - instantMs(stamp)) / 1000;
      if (lag >= MIN_LAG_SECONDS) lags.push(lag);
    }
  }
  return lags;
}
