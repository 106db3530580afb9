/**
 * The mirror's writer: records, their change rows and the sync state, each change committed in the
 * same transaction as the record it describes (docs/mirror.md). Runs on any back end through the
 * SQL executor (src/mirror/sql/executor.ts); every method is asynchronous.
 *
 * Data flow for one page: validated records -> `applyRecords` (hash compare, upsert, changelog row)
 * and `saveRun` (the checkpoint) inside one `transaction` -> the caller notifies downstream.
 */
import { plantedBug } from '../logging/planted-bugs.ts';
import { inList, jsonArrayValues, listParameter } from './sql/dialect.ts';
import { STORED_TYPE } from './sql/column-types.ts';
import { planOnce, type SqlExecutor, type SqlValue, type SqlWriterNow, type StatementNow } from './sql/executor.ts';
import { declaredFieldPaths, diffRecord, forEachFieldPath } from './change-detection.ts';
import { contentHash } from './content-hash.ts';
import { timeOrderedUuid } from './time-ordered-uuid.ts';
import { FIELD_ADDED_EVENT, fieldsFirstSeen, registerFields } from './field-registry.ts';
import { encodeChangeData, lastChangeSeq, type ChangeDataInput } from './changelog-format.ts';
import { partitionColumn, type ApiRecord, type StreamDefinition } from '../streams/define-stream.ts';
import type { StreamName } from '../streams/definitions.ts';

/** The soak's planted bug `invent-change` (src/logging/planted-bugs.ts): an update event for a record whose values did not change. Off in production. */
const INVENT_CHANGE = plantedBug('invent-change');

/** A change row just appended to the changelog. */
export interface AppendedChange {
  seq: number;
  eventId: string;
  type: string;
  stream: string;
  recordId: string;
}

export interface ApplyOptions {
  /** The complete scan these records were listed by; marks them seen for the two-scan rule. */
  scanNumber?: number;
  /** ISO time to stamp (default now). */
  now?: string;
  /**
   * True for an id the run listed on an earlier page (a run without `scanNumber`: an incremental
   * run, which has no seen marks to tell): a different version of it is not applied (one version per
   * record per scan).
   */
  listedBefore?: (id: string) => boolean;
  /** Receives the ids of records listed a second time in this scan with other content, which were not applied. */
  secondVersions?: string[];
  /** The partition these records were listed in (a partitioned stream's value); stored with their change rows. */
  partition?: string;
  /**
   * The page's changelog mark (docs/sync.md "Write-throughs during a run"): a changelog `seq` no
   * greater than the changelog's last one when the page's request was sent. A record whose row a
   * write-through wrote after it (`written_seq` above it) is not applied: the page's copy may be
   * older than the write's response. Its row is only marked seen by `scanNumber` (it is listed, so
   * it is no miss), and its id goes to `keptWrittenThrough`. Absent: every record is applied.
   */
  writtenAfter?: number;
  /** Receives the ids of records not applied because a write-through wrote their row after `writtenAfter`. */
  keptWrittenThrough?: string[];
  /**
   * A write-through (docs/writes.md): the `seq` of the write's outcome change row, stamped on each
   * record's row as `written_seq` whether or not its content changed.
   */
  writtenSeq?: number;
  /**
   * The stored states of these records' ids, asked earlier in the same transaction
   * (`MirrorStore.askStoredStates` with the same stream and records): used instead of asking again.
   */
  storedStates?: StoredStates;
  /**
   * The change rows' `seq` may be filled in as late as the commit of the transaction this runs in
   * (`appendChanges`' `seqsAtCommit`): read them only once it committed.
   */
  seqsAtCommit?: boolean;
}

/**
 * The stored hash, tombstone and marks of some records' ids, asked of the stream's table by
 * `MirrorStore.askStoredStates` and read by `applyRecords` (`ApplyOptions.storedStates`).
 */
export interface StoredStates {
  readonly stream: string;
  readonly records: readonly ApiRecord[];
  readonly states: Promise<Map<string, StoredState>>;
  /** PostgreSQL: asked at once, or assumed none (`assumedNone`); SQLite: asked when first read, if ever. */
  readonly eager: boolean;
  /**
   * True when the states were not asked but assumed to be none (`askStoredStates`' `assumeNone`):
   * every record is written as new, and a commit that finds one of their ids held fails (`heldKeyConflict`).
   */
  readonly assumedNone: boolean;
}

/**
 * After the transaction that asked `asked` (`MirrorStore.askStoredStates`) committed: true when the
 * stream's table held none of its records' ids (asked and none found, or assumed none and written
 * as new), so that the next page's records may be assumed new too (`assumeNone`). False for no
 * records, and on SQLite (it asks nothing up front: `RowWrites.insertNew`).
 */
export async function foundNoneStored(asked: StoredStates): Promise<boolean> {
  if (!asked.eager || asked.records.length === 0) return false;
  return asked.assumedNone || (await asked.states).size === 0;
}

/**
 * True when `error` is PostgreSQL's unique violation of `stream`'s table key (SQLSTATE 23505 on
 * its primary key): what the commit of a page whose stored states were assumed none
 * (`askStoredStates`' `assumeNone`) fails with when the table holds one of its ids. The transaction
 * rolled back whole; write the page again, asking its stored states.
 */
export function heldKeyConflict(error: unknown, stream: StreamDefinition): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, table, constraint } = error as { code?: unknown; table?: unknown; constraint?: unknown };
  return code === '23505' && table === stream.table && constraint === `${stream.table}_pkey`;
}

/**
 * The checkpoint of a run in progress, saved with every page (docs/sync.md "Resumable").
 * All times are ISO 8601.
 */
export interface RunCheckpoint {
  /** `incremental`: records updated after a cursor; `complete`: the whole list (backfill, reconciliation, complete-scan streams). */
  mode: 'incremental' | 'complete';
  /** Why it runs: `backfill`, `sync` or `reconcile` (for status output). */
  reason: 'backfill' | 'sync' | 'reconcile';
  /** Local clock when the run began. */
  startedAt: string;
  /** The server's clock (Date header) at the first page, floored to the second: becomes the cursor on success. */
  serverStartedAt?: string;
  /** `updatedAfter` sent with every page of an incremental run. */
  updatedAfter?: string;
  /** `createdBefore` sent with every page after the first: freezes the set being paged. */
  createdBefore?: string;
  /**
   * A range backfill's range (docs/sync.md "Range backfill"): only records created after `after` and
   * before `before` (ISO 8601, both exclusive, either may be absent) are listed, counted missed and
   * tombstoned. A run with another range (or none) does not resume this checkpoint.
   */
  createdRange?: { after?: string; before?: string };
  /** Offset of the next page to fetch. */
  offset: number;
  /** `pagination.total` of the last page, to detect removals that shift offsets. */
  lastTotal?: number;
  /** The number this complete scan will get when it finishes. */
  scanNumber?: number;
  /**
   * The changelog's last `seq` before the run's first request (for a checkpoint saved without one,
   * before its resumption's first request): a record a write-through wrote after it is no miss of
   * this scan (docs/sync.md "Write-throughs during a run").
   */
  changelogMark?: number;
  pages: number;
  records: number;
  changes: number;
  /** Distinct ids this run listed so far (src/sync/scan-check.ts; approximate across a resume). */
  distinctIds?: number;
  /** Items whose id an earlier page of this run already listed (ties in an unstable order, drift re-reads). */
  repeatedIds?: number;
  /**
   * Stretches of positions `[from, to]` (offsets in the set being paged, both inclusive) each inside
   * one run of ties, with how many of that run's records this scan has not listed yet; re-read
   * before the run ends (src/sync/scan-check.ts `TieRegion`).
   */
  tieRegions?: { from: number; to: number; missing: number }[];
  /**
   * Where the pagination stands (src/client/paginate.ts `PagingState`): the first position never
   * read, the gaps records removed meanwhile may have let unread ones slide into, and whether the
   * end was reached. Absent in checkpoints of earlier versions (`offset` is then the frontier).
   */
  paging?: { frontier: number; gaps: { from: number; to: number }[]; ended: boolean };
  /** The smallest `pagination.total` of this run's pages (records entering an incremental run's set grow the total past it). */
  lowestTotal?: number;
  /** Ids the server listed at two positions of one answer (duplicates: the total counts each twice). */
  duplicateIds?: string[];
  /** Records removed from the set (drops of the total) while the run paged to the end of the list. */
  removedWhileReading?: number;
  /** Records removed from the set after the run reached the end of the list (while it re-read drift gaps and ties). */
  removedAfterEnd?: number;
  /**
   * Records that may have slid into drift gaps (below positions already read): those gap pages found
   * new there, or every position of a gap inside a run of ties (src/sync/scan-check.ts `listedThenRemoved`).
   */
  slidFound?: number;
  /** The newest `updatedAt` this run listed (ISO 8601), for a stream that measures the records' clock: its high water at the end. */
  newestUpdatedAt?: string;
  /** The record-clock lag an incremental run's `updatedAfter` allowed for, seconds (its window, kept at its end). */
  windowLagSeconds?: number;
  /**
   * Quarantine keys (`raw:<sha256>`) of the items this run listed without a string id (no id, `id:
   * null`, an id of another type): each stands for a record the scan cannot name, so a complete scan
   * that listed one counts no miss (src/sync/scan-check.ts `scanOutcome`). At most `UNNAMED_KEPT`.
   */
  unnamed?: string[];
}

/** Most quarantine keys of unnamed items a checkpoint keeps (`RunCheckpoint.unnamed`): one is enough to withhold the misses. */
export const UNNAMED_KEPT = 100;

/**
 * How a run's scan ended (docs/sync.md "Scan completeness"); saved as `sync_state.last_scan`.
 * `complete`: it listed at least as many distinct ids as the final `pagination.total`.
 * `incomplete`: it did not; `ended-early` (the list said hasMore false short of its total) or
 * `unstable-order` (ids came twice: ties returned in a different order per request). An incomplete
 * scan counts no miss and does not move the cursor.
 */
export interface ScanOutcome {
  outcome: 'complete' | 'incomplete';
  reason?: 'ended-early' | 'unstable-order';
  /** `complete` (whole list) or `incremental` (since the cursor). */
  mode: 'incremental' | 'complete';
  /** The final page's `pagination.total`. */
  total: number;
  /** Distinct ids the scan listed. */
  distinctIds: number;
  /** Items listed again within the scan. */
  repeatedIds: number;
  /** Pages re-read around tie boundaries to find what an unstable order hid. */
  reReads: number;
  /**
   * A complete scan that proves no record gone (docs/sync.md "Leaves and deletes"), so it counted no
   * miss: `unnamed-items` (it listed `unnamed` items without an id: any unlisted record may be one
   * of them) or `over-total` (it listed more distinct records than its final total and the removals
   * it saw explain: the total is wrong, so it cannot show that nothing else was left out). Absent
   * when the misses were counted, and for an incomplete scan (which never counts them).
   */
  missesWithheld?: 'unnamed-items' | 'over-total';
  /** Items the scan listed without an id (quarantined under their content); absent when none. */
  unnamed?: number;
  /** ISO time the scan ended. */
  at: string;
}

/** One row of `sync_state`, decoded. */
export interface SyncState {
  stream: StreamName;
  /** The partition's value (docs/sync.md "Partitioned streams"), or '' for an unpartitioned stream and a partitioned stream's own row. */
  partition: string;
  cursor: string | null;
  supported: boolean;
  run: RunCheckpoint | null;
  scanNumber: number;
  lastRunStartedAt: string | null;
  lastRunFinishedAt: string | null;
  lastSuccessAt: string | null;
  lastError: string | null;
  lastRunMode: string | null;
  lastRunRequests: number | null;
  lastRunRecords: number | null;
  lastRunChanges: number | null;
  /** The last finished run's scan outcome (null before one finished). */
  lastScan: ScanOutcome | null;
  /** Tombstones held back by the last complete scan (docs/sync.md "Mass deletions held"), or null. */
  deletionHold: DeletionHold | null;
  /** A partitioned stream's own row: where its partition values came from at its last run (`sync_state.partitions`); null otherwise. */
  partitionSources: PartitionSources | null;
}

/**
 * Where a partitioned stream's partition values came from (docs/sync.md "Partitioned streams"):
 * `count` distinct values; how many each source named (a value may come from several): the
 * configuration (`key`, `sync.partitions.<stream>.<param>`), another stream's column in the mirror
 * (`derivedFrom` says which, null when the definition derives none), the stream's own live rows.
 */
export interface PartitionSources {
  count: number;
  sources: { configured: number; derived: number; mirrored: number };
  key: string;
  derivedFrom: string | null;
}

/**
 * Tombstones a complete scan held back (`sync_state.deletion_hold`): `count` records it would have
 * tombstoned, `live` records the stream had, the `share` they went over, the scan, since when the
 * hold stands and when it was last confirmed (ISO 8601).
 */
export interface DeletionHold {
  count: number;
  live: number;
  share: number;
  scanNumber: number;
  since: string;
  at: string;
}

/** A change row to append: its type, stream, record, time (ISO, default now) and `data` (changelog.ts `ChangeDataInput`). */
export interface ChangeRowInput {
  type: string;
  stream: string;
  recordId: string;
  occurredAt?: string;
  data: ChangeDataInput;
  /** The partition the record was listed in (`changes.partition_value`); absent for an unpartitioned stream. */
  partition?: string;
}

/** What the change detection needs of a stored row. */
interface StoredState {
  content_hash: string;
  deleted_at: string | null;
  /** The complete scan that last listed it (null when none did). */
  last_seen_scan: number | null;
  /** The changelog `seq` of the write-through that last wrote it (null when none did). */
  written_seq: number | null;
}

/** The column holding a stream's record key (its primary key). */
function keyColumn(stream: StreamDefinition): string {
  return stream.columns.find((column) => column.primaryKey)?.column ?? 'id';
}

/**
 * The condition keeping a statement on a stream table inside one partition (` AND <column> = ?` and
 * its parameter); nothing for an unpartitioned stream or no partition ('' or undefined).
 */
function inPartition(stream: StreamDefinition, partition: string | undefined): { sql: string; params: SqlValue[] } {
  const column = partitionColumn(stream);
  if (column === undefined || !partition) return { sql: '', params: [] };
  return { sql: ` AND ${column} = ?`, params: [partition] };
}

/**
 * The condition keeping a scan's misses off the rows a write-through wrote after the scan's changelog
 * mark (` AND (written_seq IS NULL OR written_seq <= ?)` and its parameter); nothing without a mark.
 */
export function writtenNotAfter(mark: number | undefined, alias = ''): { sql: string; params: SqlValue[] } {
  if (mark === undefined) return { sql: '', params: [] };
  return { sql: ` AND (${alias}written_seq IS NULL OR ${alias}written_seq <= ?)`, params: [mark] };
}

/**
 * The condition of a live row complete scan `scanNumber` (begun at `scanStartedAt`, ISO local time)
 * did not list and could have (first seen by then; not written through after `writtenAfter`; in
 * `partition`), and its parameters: the rows `recordMisses` counts missed.
 */
function unlistedByScan(stream: StreamDefinition, scanNumber: number, scanStartedAt: string, options: { partition?: string; writtenAfter?: number }): { sql: string; params: SqlValue[] } {
  const scope = inPartition(stream, options.partition);
  const written = writtenNotAfter(options.writtenAfter);
  return {
    sql: `deleted_at IS NULL AND (last_seen_scan IS NULL OR last_seen_scan < ?) AND first_seen_at <= ?${written.sql}${scope.sql}`,
    params: [scanNumber, scanStartedAt, ...written.params, ...scope.params],
  };
}

/** Columns hold numbers, strings, null; booleans become 0/1 and objects JSON text. */
function toColumnValue(value: unknown): SqlValue {
  if (value === undefined || value === null) return null;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'number' || typeof value === 'string') return value;
  return JSON.stringify(value);
}

/**
 * Writes records, changes and sync state for the streams of one mirror, through `executor` (a
 * connection, or a transaction: a store built on a transaction's executor joins it).
 */
export class MirrorStore {
  readonly executor: SqlExecutor;

  constructor(executor: SqlExecutor) {
    this.executor = executor;
  }

  /**
   * Runs `fn` in one transaction (SQLite: `BEGIN IMMEDIATE`), handing it a store bound to that
   * transaction: every statement of `fn` must go through that store (or its `executor`); the
   * store `fn` was called on waits until the transaction ends. Commits when `fn` resolves, rolls
   * back when it throws (the error is rethrown). Called on a store already in a transaction, joins it.
   * `fn` awaits only statements: no HTTP, no timers (src/mirror/sql/executor.ts).
   */
  transaction<T>(fn: (store: MirrorStore) => Promise<T>): Promise<T> {
    if (this.executor.inTransaction) return fn(this);
    return this.executor.transaction((tx) => fn(new MirrorStore(tx)));
  }

  /**
   * Applies validated records of one stream (change detection: src/mirror/change-detection.ts). A
   * record whose whole item hashes the same as the stored row is only marked seen (no event: no-op
   * suppression); a record whose hash differs is diffed over every field it carries: changed, it is
   * upserted with one changelog row typed by `stream.classify`; unchanged (another key order, a
   * field only a write response carries), it is rewritten without one. A new or reappearing record
   * is upserted with its created change. A field the stream's definition does not declare, carried
   * for the first time, is recorded in the field registry with one `schema.field_added` change
   * (before the page's record changes).
   * Call inside `transaction` together with the checkpoint (alone, it runs in its own transaction).
   *
   * Cost per page, whatever its size (PostgreSQL pays a round trip per statement it waits for: the
   * upsert goes with the next statement, `runAtCommit`; the stored hashes can be asked earlier,
   * `storedStates`, and the change rows' INSERT sent with the commit, `seqsAtCommit`): one SELECT
   * for the stored hashes of the page's ids (SQLite, a page whose first id the table does not hold:
   * each row inserted at once unless its id is held, and the hashes of the held ones read after,
   * `RowWrites.insertNew`), one SELECT of the stored `raw` of the records whose
   * hash differs (to diff them; none on a backfill), one multi-row upsert per set of columns the
   * page's records carry (usually one; SQLite: one prepared upsert per record, see `RowWrites`), one
   * UPDATE marking the unchanged ones seen, and one multi-row INSERT of the page's change rows
   * (`appendChanges`).
   *
   * One version per record per scan (docs/sync.md "One version per scan"): a record this scan
   * already listed (its row marked seen by `scanNumber`, listed earlier in the page, or
   * `listedBefore`) that comes again with other content is not applied and appends nothing; its
   * id goes to `secondVersions`. A server listing one id at two positions with two versions would
   * otherwise record two changes per scan for a record that did not change. The later version, if
   * it is the current one, is applied by the next scan.
   * @returns the change rows appended, in order
   */
  async applyRecords(stream: StreamDefinition, records: readonly ApiRecord[], options: ApplyOptions = {}): Promise<AppendedChange[]> {
    const now = options.now ?? new Date().toISOString();
    const scan = options.scanNumber ?? null;
    const key = keyColumn(stream);
    if (records.length === 0) return [];
    const count = records.length;
    const ids = new Array<string>(count);
    const raws = new Array<string>(count);
    const hashes = new Array<string>(count);
    const distinct = new Set<string>();
    for (let index = 0; index < count; index += 1) {
      const record = records[index]!;
      const id = String(record[stream.key]);
      const raw = JSON.stringify(record);
      ids[index] = id;
      raws[index] = raw;
      hashes[index] = contentHash(record, raw);
      distinct.add(id);
    }
    // An id listed twice in the page (a duplicate, ties): only then does the loop below follow the ids it passed.
    const repeats = distinct.size < count;
    const asked = options.storedStates;
    return this.transaction(async (store) => {
      const pending: ChangeRowInput[] = [];
      const writes = new RowWrites(store.executor, stream, now, scan);
      // SQLite: a page of new records is inserted at once, without a SELECT of stored states (`RowWrites.insertNew`).
      const writeNow = store.executor.writeNow;
      const insertedFirst = writeNow === undefined ? undefined : writes.insertNew(writeNow, records, ids, hashes, raws, repeats);
      let stored: Map<string, StoredState>;
      if (insertedFirst !== undefined) stored = insertedFirst.held.length > 0 ? await store.storedStates(stream, insertedFirst.held) : new Map<string, StoredState>();
      else stored = asked !== undefined && asked.stream === stream.name && asked.records === records ? await asked.states : await store.storedStates(stream, ids);
      const differing = ids.filter((id, index) => {
        const state = stored.get(id);
        return state !== undefined && state.deleted_at === null && state.content_hash !== hashes[index];
      });
      const storedRaw = differing.length > 0 ? await store.storedRecords(stream, key, differing) : new Map<string, { record: ApiRecord; storedAt: string }>();
      // Fields the definition does not declare, carried by the records this page writes: new ones are registered and announced.
      const newFields = await store.registerUndeclaredFields(stream, records, ids, hashes, stored, now);
      for (const added of newFields) {
        pending.push({
          type: FIELD_ADDED_EVENT,
          stream: stream.name,
          recordId: added.field,
          occurredAt: now,
          data: { record: { stream: stream.name, field: added.field, exampleRecordId: added.exampleRecordId, firstSeenAt: added.firstSeenAt }, changes: {} },
        });
      }
      // Known to the stream: an undeclared field registered before this page (a declared one not
      // listed, e.g. carried by write responses only, compares only when the stored record has it).
      const fresh = new Set(newFields.map((added) => added.field));
      const declared = declaredFieldPaths(stream);
      // When the stream first saw each undeclared field: a version stored before that lacks it by no change of its own.
      const firstSeen = storedRaw.size > 0 ? await fieldsFirstSeen(store.executor, stream.name) : new Map<string, string>();
      const diffFields = { listed: stream.listedFields, known: (path: string) => !fresh.has(path) && !declared.has(path), firstSeenAt: (path: string) => firstSeen.get(path) };
      // The ids this page listed so far: a second copy of one with other content is a second version.
      const seenInPage = new Set<string>();
      const unchanged: string[] = [];
      // Rows a write-through wrote after the page's request was sent: listed (seen), not overwritten.
      const keptWritten: string[] = [];
      const writtenAfter = options.writtenAfter;
      for (let index = 0; index < records.length; index += 1) {
        const record = records[index]!;
        const id = ids[index]!;
        const hash = hashes[index]!;
        const state = stored.get(id);
        let earlierInPage = false;
        if (repeats) {
          earlierInPage = seenInPage.has(id);
          seenInPage.add(id);
        }
        if (state && state.content_hash === hash && state.deleted_at === null) {
          if (!earlierInPage) unchanged.push(id);
          continue;
        }
        if (writtenAfter !== undefined && state !== undefined && state.written_seq !== null && state.written_seq > writtenAfter) {
          if (!earlierInPage) {
            keptWritten.push(id);
            options.keptWrittenThrough?.push(id);
          }
          continue;
        }
        const listedInThisScan = earlierInPage || (scan !== null && state?.last_seen_scan === scan) || (options.listedBefore?.(id) ?? false);
        if (state && state.deleted_at === null && listedInThisScan) {
          options.secondVersions?.push(id);
          continue;
        }
        // A tombstoned record that is listed again counts as new (created / started again).
        const storedVersion = state && state.deleted_at === null ? storedRaw.get(id) : undefined;
        const previous = storedVersion?.record;
        let raw: string;
        if (insertedFirst?.inserted[index] === true) raw = raws[index]!; // its row is written already
        else {
          if (writes.has(id)) await writes.flush();
          raw = writes.add(id, record, hash, raws[index], state !== undefined);
        }
        // What a later copy of the id in this page finds stored.
        if (repeats) stored.set(id, { content_hash: hash, deleted_at: null, last_seen_scan: scan, written_seq: state?.written_seq ?? null });
        let type: string;
        let data: ChangeDataInput;
        if (previous === undefined) {
          // A new record: every listed field counts as changed, and its change carries the record
          // once (format version 2: no `{ old: null }` per field), so there is nothing to diff.
          type = stream.changes.classify(undefined, record, stream.listedFields);
          data = { record, recordJson: raw };
        } else {
          const changes = diffRecord(previous, record, diffFields, storedVersion!.storedAt);
          const changed = Object.keys(changes);
          // Nothing differs in the fields it carries: stored again (its hash, its latest raw), no event.
          if (changed.length === 0 && !INVENT_CHANGE) continue;
          type = stream.changes.classify(previous, record, changed);
          data = { record, recordJson: raw, changes };
        }
        const change: ChangeRowInput = { type, stream: stream.name, recordId: id, occurredAt: now, data };
        if (options.partition) change.partition = options.partition;
        pending.push(change);
      }
      await writes.flush();
      if (unchanged.length > 0) {
        await store.executor.run(
          `UPDATE ${stream.table} SET synced_at = ?, last_seen_scan = COALESCE(?, last_seen_scan), missed_scans = 0 WHERE ${inList(store.executor.dialect, key)}`,
          [now, scan, listParameter(store.executor.dialect, unchanged)],
        );
      }
      if (keptWritten.length > 0 && scan !== null) {
        // Listed by this scan (no miss), but the row stays the write-through's: `synced_at` too (the record clock reads it).
        await store.executor.run(`UPDATE ${stream.table} SET last_seen_scan = ?, missed_scans = 0 WHERE ${inList(store.executor.dialect, key)}`, [
          scan,
          listParameter(store.executor.dialect, keptWritten),
        ]);
      }
      if (options.writtenSeq !== undefined) {
        // A write-through: every record's row carries the write's seq, changed or not (equal content appends no change row).
        await store.executor.run(`UPDATE ${stream.table} SET written_seq = ? WHERE ${inList(store.executor.dialect, key)}`, [
          options.writtenSeq,
          listParameter(store.executor.dialect, ids),
        ]);
      }
      return store.appendChanges(pending, { seqsAtCommit: options.seqsAtCommit ?? false });
    });
  }

  /**
   * Registers the undeclared field paths (src/mirror/field-registry.ts) of the records this page
   * writes (new, reappearing, or hashing differently); no statement when they carry none.
   * @returns the fields new to the stream
   */
  private async registerUndeclaredFields(
    stream: StreamDefinition,
    records: readonly ApiRecord[],
    ids: readonly string[],
    hashes: readonly string[],
    stored: ReadonlyMap<string, StoredState>,
    now: string,
  ) {
    const declared = declaredFieldPaths(stream);
    const candidates = new Map<string, string>();
    // One visitor for the page (not a closure per record): the record it walks is `walked`.
    let walked = '';
    const visit = (path: string): void => {
      if (!declared.has(path) && !candidates.has(path)) candidates.set(path, walked);
    };
    for (let index = 0; index < records.length; index += 1) {
      const state = stored.get(ids[index]!);
      if (state && state.content_hash === hashes[index] && state.deleted_at === null) continue;
      walked = ids[index]!;
      forEachFieldPath(records[index]!, visit);
    }
    return candidates.size === 0 ? [] : registerFields(this.executor, stream.name, candidates, now);
  }

  /**
   * Asks the stored states of `records`' ids now, for `applyRecords` later in the same transaction
   * (`ApplyOptions.storedStates`): on PostgreSQL the SELECT leaves with the statements the caller
   * sends before its answer is needed (one round trip fewer per page); in a SQLite transaction it
   * runs when `applyRecords` first reads them, if it does. Call only where no statement
   * between this one and `applyRecords` writes the stream's table. A failure is reported by
   * `applyRecords` (and fails the transaction), never as an unhandled rejection.
   *
   * `options.assumeNone` (PostgreSQL; ignored on SQLite, which inserts new records without asking):
   * nothing is asked, the states are taken to be none, so `applyRecords` writes every record as new
   * (its row in a plain INSERT, a created change). The table's key checks the assumption: when it
   * holds one of the ids, that INSERT fails with a unique violation and the transaction with it
   * (`heldKeyConflict`); nothing of it is written, and the caller writes the page again without the
   * assumption. Where it holds none, the rows and change rows are those the SELECT would have led
   * to. For a page that likely holds new records only (the previous page of a backfill did:
   * `foundNoneStored`): each id is looked up in the key's index once, by its INSERT, not twice.
   */
  askStoredStates(stream: StreamDefinition, records: readonly ApiRecord[], options: { assumeNone?: boolean } = {}): StoredStates {
    const ask = (): Promise<Map<string, StoredState>> => {
      const states = records.length === 0 ? Promise.resolve(new Map<string, StoredState>()) : this.storedStates(stream, records.map((record) => String(record[stream.key])));
      states.catch(() => {});
      return states;
    };
    if (this.executor.writeNow === undefined) {
      if (options.assumeNone === true && this.executor.dialect === 'postgres') {
        return { stream: stream.name, records, states: Promise.resolve(new Map<string, StoredState>()), eager: true, assumedNone: true };
      }
      return { stream: stream.name, records, states: ask(), eager: true, assumedNone: false };
    }
    // SQLite: asked when first read (a SELECT costs no round trip there), and not at all when
    // `applyRecords` inserts a page of new records without it (`RowWrites.insertNew`).
    let asked: Promise<Map<string, StoredState>> | undefined;
    return {
      stream: stream.name,
      records,
      eager: false,
      assumedNone: false,
      get states() {
        return (asked ??= ask());
      },
    };
  }

  /** The stored hash and tombstone of each of `ids` that the stream's table holds: one SELECT. */
  private async storedStates(stream: StreamDefinition, ids: readonly string[]): Promise<Map<string, StoredState>> {
    const dialect = this.executor.dialect;
    const rows = await this.executor.all<StoredState & { id: string }>(storedStatesQuery(stream, dialect), [listParameter(dialect, ids)]);
    const states = new Map<string, StoredState>();
    for (const row of rows) {
      states.set(row.id, {
        content_hash: row.content_hash,
        deleted_at: row.deleted_at,
        last_seen_scan: row.last_seen_scan === null ? null : Number(row.last_seen_scan),
        written_seq: row.written_seq === null ? null : Number(row.written_seq),
      });
    }
    return states;
  }

  /** The records of `ids` as last stored (their `raw`) and when (`synced_at`), for the diff of changed records: one SELECT. */
  private async storedRecords(stream: StreamDefinition, key: string, ids: readonly string[]): Promise<Map<string, { record: ApiRecord; storedAt: string }>> {
    const rows = await this.executor.all<{ id: string; raw: string; synced_at: string }>(
      `SELECT ${key} AS id, raw, synced_at FROM ${stream.table} WHERE ${inList(this.executor.dialect, key)}`,
      [listParameter(this.executor.dialect, ids)],
    );
    return new Map(rows.map((row) => [row.id, { record: JSON.parse(row.raw) as ApiRecord, storedAt: row.synced_at }]));
  }

  /**
   * Appends one row to the changelog with a fresh, stable `event_id` (`evt_<uuid v7>`), its `data`
   * in format version 2 (src/mirror/changelog-format.ts `encodeChangeData`; leave `changes` out for a new
   * record). Call inside the transaction that wrote the record the change describes. Wakes the
   * mirror's listeners at its commit (executor.ts `changesAppended`).
   * @returns the row appended, with the `seq` the database gave it (`RETURNING seq`)
   */
  async appendChange(change: ChangeRowInput): Promise<AppendedChange> {
    const eventId = `evt_${timeOrderedUuid()}`;
    const row = await this.executor.get<{ seq: number }>(
      `${CHANGE_ROW_INSERT} RETURNING seq`,
      changeRowValues(eventId, change),
    );
    await this.executor.changesAppended();
    return { seq: Number(row!.seq), eventId, type: change.type, stream: change.stream, recordId: change.recordId };
  }

  /**
   * Appends change rows in the order given, as `appendChange` does one. Call inside the transaction
   * that wrote the records. Per back end: PostgreSQL one `INSERT ... SELECT FROM unnest(...)` of
   * them all (`appendChangesUnnest`); SQLite in a transaction one prepared single-row INSERT per
   * row, run at once (`writeNow`), its `seq` the rowid it inserted (`appendChangesNow`: CPU as a
   * plain loop's, where a multi-row `INSERT ... RETURNING` cost about 2.5 times as much); otherwise
   * multi-row INSERTs of up to `CHANGE_ROWS_PER_INSERT` rows `RETURNING seq, event_id`.
   * @param options.seqsAtCommit the rows' `seq` may be filled in as late as the transaction's commit
   *   (PostgreSQL: the INSERT's answer is not waited for, so it leaves with the body's next
   *   statements or its COMMIT: executor.ts `allAtCommit`): read them only once it committed
   * @returns the rows appended, in the order given, with their `seq` (ascending in that order)
   */
  async appendChanges(changes: readonly ChangeRowInput[], options: { seqsAtCommit?: boolean } = {}): Promise<AppendedChange[]> {
    if (changes.length === 0) return [];
    if (this.executor.dialect === 'postgres') return this.appendChangesUnnest(changes, options.seqsAtCommit ?? false);
    const now = this.executor.writeNow;
    if (now !== undefined) {
      const appended = appendChangesNow(now, changes);
      await this.executor.changesAppended();
      return appended;
    }
    const appended: AppendedChange[] = [];
    for (let start = 0; start < changes.length; start += CHANGE_ROWS_PER_INSERT) {
      const chunk = changes.slice(start, start + CHANGE_ROWS_PER_INSERT);
      const parameters: SqlValue[] = [];
      const rows: AppendedChange[] = [];
      for (const change of chunk) {
        const eventId = `evt_${timeOrderedUuid()}`;
        parameters.push(...changeRowValues(eventId, change));
        rows.push({ seq: 0, eventId, type: change.type, stream: change.stream, recordId: change.recordId });
      }
      // RETURNING lists rows in no promised order: each seq is matched to its row by event_id.
      const returned = await this.executor.all<{ seq: number; event_id: string }>(changeRowsInsert(chunk.length), parameters);
      const seqs = new Map(returned.map((row) => [row.event_id, Number(row.seq)]));
      for (const row of rows) {
        row.seq = seqs.get(row.eventId)!;
        appended.push(row);
      }
    }
    if (appended.length > 0) await this.executor.changesAppended();
    return appended;
  }

  /**
   * PostgreSQL's `appendChanges`: every row in one `INSERT ... SELECT FROM unnest(<one text array per
   * column>)` (`CHANGE_ROWS_UNNEST`), whatever their number. `unnest` yields the rows in array order,
   * so the identity gives them ascending `seq` in the order given: consecutive ones (the writers of
   * a mirror commit one at a time) come back as the first alone, the others each with its `event_id`.
   */
  private async appendChangesUnnest(changes: readonly ChangeRowInput[], seqsAtCommit: boolean): Promise<AppendedChange[]> {
    const count = changes.length;
    const columns: SqlValue[][] = Array.from({ length: 7 }, () => new Array<SqlValue>(count));
    const [eventIds, types, streams, recordIds, occurredAts, datas, partitions] = columns as [SqlValue[], SqlValue[], SqlValue[], SqlValue[], SqlValue[], SqlValue[], SqlValue[]];
    const appended: AppendedChange[] = new Array<AppendedChange>(count);
    for (let index = 0; index < count; index += 1) {
      const change = changes[index]!;
      const eventId = `evt_${timeOrderedUuid()}`;
      eventIds[index] = eventId;
      types[index] = change.type;
      streams[index] = change.stream;
      recordIds[index] = change.recordId;
      occurredAts[index] = change.occurredAt ?? new Date().toISOString();
      datas[index] = encodeChangeData(change.data);
      partitions[index] = change.partition ?? null;
      appended[index] = { seq: 0, eventId, type: change.type, stream: change.stream, recordId: change.recordId };
    }
    const fill = (returned: { seq: number; event_id: string | null }[]): void => {
      if (returned.length === 1 && returned[0]!.event_id === null) {
        // Consecutive, in the order given: the first and its successors.
        const first = Number(returned[0]!.seq);
        for (let index = 0; index < count; index += 1) appended[index]!.seq = first + index;
        return;
      }
      // RETURNING lists rows in no promised order: each seq is matched to its row by event_id.
      const seqs = new Map(returned.map((row) => [row.event_id, Number(row.seq)]));
      for (const row of appended) row.seq = seqs.get(row.eventId)!;
    };
    if (seqsAtCommit) await this.executor.allAtCommit(CHANGE_ROWS_UNNEST, columns, fill);
    else fill(await this.executor.all<{ seq: number; event_id: string | null }>(CHANGE_ROWS_UNNEST, columns));
    await this.executor.changesAppended();
    return appended;
  }

  /** True when `stream`'s table holds a row, live or tombstoned (one SELECT of one row). */
  async holdsAnyRecord(stream: StreamDefinition): Promise<boolean> {
    return (await this.executor.get(`SELECT 1 AS held FROM ${stream.table} LIMIT 1`)) !== undefined;
  }

  /**
   * True when complete scan `scanNumber` (begun at `scanStartedAt`, ISO local time) leaves a record
   * unlisted that `recordMisses` would count missed (same rows, same options) and that was first
   * seen after `firstSeenAfter` (ISO local time): one SELECT, stopped at the first row. The engine
   * asks the API about its frozen set's second only then (src/sync/stream-run.ts `listedInBoundSecond`).
   */
  async hasUnlisted(
    stream: StreamDefinition,
    scanNumber: number,
    scanStartedAt: string,
    firstSeenAfter: string,
    options: { partition?: string; writtenAfter?: number } = {},
  ): Promise<boolean> {
    const unlisted = unlistedByScan(stream, scanNumber, scanStartedAt, options);
    const row = await this.executor.get(`SELECT 1 AS unlisted FROM ${stream.table} WHERE ${unlisted.sql} AND first_seen_at > ? LIMIT 1`, [...unlisted.params, firstSeenAfter]);
    return row !== undefined;
  }

  /**
   * Marks the live rows of `ids` listed by complete scan `scanNumber` (`last_seen_scan`, their
   * misses cleared), as its pages would have: records the API serves that the scan's frozen set
   * left out (src/sync/stream-run.ts `listedInBoundSecond`). Ids the table lacks, or holds
   * tombstoned, are left alone. Call in the transaction of `recordMisses`, before it.
   */
  async markListedInScan(stream: StreamDefinition, scanNumber: number, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    const key = keyColumn(stream);
    await this.executor.run(`UPDATE ${stream.table} SET last_seen_scan = ?, missed_scans = 0 WHERE deleted_at IS NULL AND ${key} IN ${jsonArrayValues(this.executor.dialect)}`, [
      scanNumber,
      JSON.stringify(ids),
    ]);
  }

  /**
   * The two-scan rule (docs/sync.md "Leaves and deletes"), called when complete scan `scanNumber`
   * finished without error: every live record it did not list gets one more miss; a record missed
   * by two consecutive complete scans is tombstoned (`deleted_at`) with a `stream.changes.gone`
   * change. Records first seen after the scan began (e.g. written through from a write) are not
   * counted as missed: the scan could not have listed them. (`<=`: a record first seen in the very
   * millisecond the scan began was seen by an earlier run, and must count.) Few statements
   * however many records are gone: the tombstones in one UPDATE, their change rows in multi-row
   * INSERTs of up to 500 (`appendChanges`), in key order.
   *
   * Mass deletions are held (`options.massDeletion`, docs/sync.md "Mass deletions held"): when the
   * records to tombstone are more than `MASS_DELETION_FLOOR` and more than `share` of the stream's
   * live records, none is tombstoned (their misses stay counted) and `onHeld` hears how many, unless
   * `confirmed`: a list that stopped serving a part of the stream (a capped result window, a filter
   * applied by mistake) must not turn it into deletions.
   *
   * For a partitioned stream, `options.partition` keeps all of it inside that partition (its records,
   * its live count; docs/sync.md "Partitioned streams"): a partition's scan never misses another's records.
   *
   * `options.writtenAfter` (the scan's changelog mark when it began, docs/sync.md "Write-throughs
   * during a run"): a record a write-through wrote after it (`written_seq` above it) is not counted
   * missed: the write's response showed it after the scan's first request.
   * @param scanStartedAt ISO local time the scan began
   * @returns the tombstone changes appended (none when held)
   */
  recordMisses(
    stream: StreamDefinition,
    scanNumber: number,
    scanStartedAt: string,
    now = new Date().toISOString(),
    options: { massDeletion?: { share: number; confirmed?: boolean }; onHeld?: (held: { count: number; live: number }) => void; partition?: string; writtenAfter?: number } = {},
  ): Promise<AppendedChange[]> {
    const scope = inPartition(stream, options.partition);
    const written = writtenNotAfter(options.writtenAfter);
    const unlisted = unlistedByScan(stream, scanNumber, scanStartedAt, options);
    return this.transaction(async (store) => {
      await store.executor.run(`UPDATE ${stream.table} SET missed_scans = missed_scans + 1 WHERE ${unlisted.sql}`, unlisted.params);
      const key = keyColumn(stream);
      // Sorted here, not by ORDER BY: with it SQLite walks the key's index and looks up every row
      // (293 ms at 100,000 records when none is gone, the largest part of a backfill's finish);
      // without it, one table scan (~30 ms). Byte order of UTF-8, SQLite's BINARY collation.
      const gone = (
        await store.executor.all<{ id: string; raw: string }>(
          `SELECT ${key} AS id, raw FROM ${stream.table} WHERE deleted_at IS NULL AND missed_scans >= ${plantedBug('one-scan-tombstone') ? 1 : 2}${written.sql}${scope.sql}`,
          [...written.params, ...scope.params],
        )
      ).sort((a, b) => Buffer.compare(Buffer.from(String(a.id)), Buffer.from(String(b.id))));
      if (gone.length === 0) return [];
      const hold = options.massDeletion;
      if (hold && !hold.confirmed && gone.length > MASS_DELETION_FLOOR) {
        const live = (await store.countRecords(stream, options.partition)).live;
        if (gone.length > hold.share * live) {
          options.onHeld?.({ count: gone.length, live });
          return [];
        }
      }
      // One UPDATE and one multi-row INSERT of change rows however many records are gone.
      await store.executor.run(`UPDATE ${stream.table} SET deleted_at = ? WHERE ${key} IN ${jsonArrayValues(store.executor.dialect)}`, [
        now,
        JSON.stringify(gone.map((row) => row.id)),
      ]);
      return store.appendChanges(
        gone.map((row) => ({
          type: stream.changes.gone,
          stream: stream.name,
          recordId: row.id,
          occurredAt: now,
          data: { record: JSON.parse(row.raw) as unknown, changes: { deletedAt: { old: null, new: now } } },
          ...(options.partition ? { partition: options.partition } : {}),
        })),
      );
    });
  }

  /**
   * The sync state of a stream, or of one of its partitions (a default row when it never ran).
   * @param partition the partition's value; '' (default) for an unpartitioned stream or a partitioned stream's own row
   */
  async readSyncState(stream: StreamName, partition = ''): Promise<SyncState> {
    const row = await this.executor.get('SELECT * FROM sync_state WHERE stream = ? AND partition_value = ?', [stream, partition]);
    return decodeSyncState(stream, partition, row);
  }

  /** The sync states of a partitioned stream's partitions that have one, by partition value (none for an unpartitioned stream). */
  async listPartitionStates(stream: StreamName): Promise<SyncState[]> {
    const rows = await this.executor.all<Record<string, unknown>>("SELECT * FROM sync_state WHERE stream = ? AND partition_value <> '' ORDER BY partition_value", [stream]);
    return rows.map((row) => decodeSyncState(stream, String(row.partition_value), row));
  }

  /**
   * Updates some columns of the `sync_state` row of a stream or one of its partitions (inserting it
   * when missing): one `INSERT ... ON CONFLICT (stream, partition_value) DO UPDATE` (a page's
   * checkpoint costs one statement).
   * @param partition the partition's value; '' (default) for an unpartitioned stream or a partitioned stream's own row
   * @param options.atCommit sent with the transaction's COMMIT on PostgreSQL (executor.ts `runAtCommit`):
   *   only when no later statement of the transaction reads or writes this row
   */
  async updateSyncState(stream: StreamName, fields: Partial<Record<SyncStateColumn, string | number | null>>, partition = '', options: { atCommit?: boolean } = {}): Promise<void> {
    const entries = Object.entries(fields);
    if (entries.length === 0) {
      await this.executor.run('INSERT INTO sync_state (stream, partition_value) VALUES (?, ?) ON CONFLICT (stream, partition_value) DO NOTHING', [stream, partition]);
      return;
    }
    const columns = entries.map(([column]) => column);
    await (options.atCommit ? this.executor.runAtCommit.bind(this.executor) : this.executor.run.bind(this.executor))(syncStateUpsert(columns), [
      stream,
      partition,
      ...entries.map(([, value]) => value ?? null),
    ]);
  }

  /**
   * Saves (or clears, with null) the checkpoint of the run in progress of a stream (or of its
   * partition `partition`). With `atCommit`, sent with the transaction's COMMIT on PostgreSQL (a
   * page's checkpoint, the last write of its transaction: no round trip of its own).
   */
  saveRun(stream: StreamName, run: RunCheckpoint | null, partition = '', options: { atCommit?: boolean } = {}): Promise<void> {
    return this.updateSyncState(stream, { run: run ? JSON.stringify(run) : null }, partition, options);
  }

  /** Rows per stream table: live (listed upstream) and tombstoned; only a partition's with `partition` (a partitioned stream's value). */
  async countRecords(stream: StreamDefinition, partition?: string): Promise<{ live: number; deleted: number }> {
    const scope = inPartition(stream, partition);
    const row = await this.executor.get<{ live: number; deleted: number }>(
      `SELECT COUNT(*) FILTER (WHERE deleted_at IS NULL) AS live, COUNT(*) FILTER (WHERE deleted_at IS NOT NULL) AS deleted FROM ${stream.table}${scope.sql ? ` WHERE ${scope.sql.slice(' AND '.length)}` : ''}`,
      scope.params,
    );
    return { live: Number(row!.live), deleted: Number(row!.deleted) };
  }

  /** Distinct records complete scan `scanNumber` has listed so far (rows marked seen by it), inside `partition` when given. */
  async countSeenInScan(stream: StreamDefinition, scanNumber: number, partition?: string): Promise<number> {
    const scope = inPartition(stream, partition);
    const row = await this.executor.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${stream.table} WHERE last_seen_scan = ?${scope.sql}`, [scanNumber, ...scope.params]);
    return Number(row!.n);
  }

  /** The highest changelog `seq` (0 when empty). */
  lastSeq(): Promise<number> {
    return lastChangeSeq(this.executor);
  }
}

/**
 * Mass deletions are held only above this many tombstones at once (`recordMisses`): a small stream
 * (a few onboardings) loses more than a tenth of itself in an ordinary day.
 */
export const MASS_DELETION_FLOOR = 10;

/**
 * The statement text `cache` holds under `key`, built by `build` the first time: each statement
 * text of this module is built once per process (the same text then hits the prepared-statement
 * caches).
 */
function builtOnce<K>(cache: Map<K, string>, key: K, build: () => string): string {
  let sql = cache.get(key);
  if (sql === undefined) cache.set(key, (sql = build()));
  return sql;
}

/** A row write's columns after the record's own (`columns`): what `RowWrites` binds last, in this order. */
function rowColumns(columns: readonly string[]): string[] {
  return [...columns, 'raw', 'content_hash', 'first_seen_at', 'synced_at', 'last_seen_scan'];
}

/** Most change rows in one INSERT of `appendChanges` (6 parameters each: far under SQLite's and PostgreSQL's limits). */
const CHANGE_ROWS_PER_INSERT = 500;

/** The multi-row INSERT of `count` change rows, by count: built once (the same text hits the prepared-statement cache). */
const changeRowsInserts = new Map<number, string>();

function changeRowsInsert(count: number): string {
  return builtOnce(
    changeRowsInserts,
    count,
    () => `INSERT INTO changes (event_id, type, stream, record_id, occurred_at, data, partition_value) VALUES ${Array.from({ length: count }, () => '(?, ?, ?, ?, ?, ?, ?)').join(', ')} RETURNING seq, event_id`,
  );
}

/** The single-row INSERT of a change row (`appendChange`), its values `changeRowValues` (`appendChangesNow` writes type and stream as literals: `changeRowInsertOf`). */
const CHANGE_ROW_INSERT = 'INSERT INTO changes (event_id, type, stream, record_id, occurred_at, data, partition_value) VALUES (?, ?, ?, ?, ?, ?, ?)';

/** A change row's 7 values in the order of `CHANGE_ROW_INSERT`'s columns (and of each row of `changeRowsInsert`). */
function changeRowValues(eventId: string, change: ChangeRowInput): SqlValue[] {
  return [eventId, change.type, change.stream, change.recordId, change.occurredAt ?? new Date().toISOString(), encodeChangeData(change.data), change.partition ?? null];
}

/**
 * SQLite's `appendChanges` inside a transaction: one prepared single-row INSERT per change, run at
 * once through `now` (executor.ts `writeNow`); each row's `seq` is the rowid its INSERT gave
 * (`seq` is the table's INTEGER PRIMARY KEY), so the rows get ascending `seq` in the order given.
 */
function appendChangesNow(now: SqlWriterNow, changes: readonly ChangeRowInput[]): AppendedChange[] {
  const appended = new Array<AppendedChange>(changes.length);
  // The statement of the previous row's type, stream and partitioning: a page's rows mostly share them.
  let last: { type: string; stream: string; partitioned: boolean; insert: StatementNow } | undefined;
  for (let index = 0; index < changes.length; index += 1) {
    const change = changes[index]!;
    const eventId = `evt_${timeOrderedUuid()}`;
    const partitioned = change.partition !== undefined;
    if (last === undefined || last.type !== change.type || last.stream !== change.stream || last.partitioned !== partitioned) {
      last = { type: change.type, stream: change.stream, partitioned, insert: now.statementNow(changeRowInsertOf(change.type, change.stream, partitioned)) };
    }
    const insert = last.insert;
    const occurredAt = change.occurredAt ?? new Date().toISOString();
    const data = encodeChangeData(change.data);
    const { lastInsertRowid } = insert.run(partitioned ? [eventId, change.recordId, occurredAt, data, change.partition!] : [eventId, change.recordId, occurredAt, data]);
    appended[index] = { seq: Number(lastInsertRowid), eventId, type: change.type, stream: change.stream, recordId: change.recordId };
  }
  return appended;
}

/** `changeRowInsertOf`'s statements by type, stream and whether a partition is given: built once. */
const changeRowInsertsOf = new Map<string, string>();

/**
 * SQLite's single-row INSERT of a change row of `type` and `stream` (`appendChangesNow`): both
 * written into the statement as SQL text literals, so that a page's rows bind only their event id,
 * record id, time, data and, when `partitioned`, partition (as the plain loop of bench/backfill.ts
 * does; binding a value costs more than the statement's own work on it). `type` and `stream` come
 * from the stream definitions; each quote is doubled all the same. Without a partition,
 * `partition_value` keeps its default, NULL.
 */
function changeRowInsertOf(type: string, stream: string, partitioned: boolean): string {
  return builtOnce(changeRowInsertsOf, `${partitioned ? 'p' : 'n'}\n${type}\n${stream}`, () => {
    const literal = (text: string): string => `'${text.replaceAll("'", "''")}'`;
    return partitioned
      ? `INSERT INTO changes (event_id, type, stream, record_id, occurred_at, data, partition_value) VALUES (?, ${literal(type)}, ${literal(stream)}, ?, ?, ?, ?)`
      : `INSERT INTO changes (event_id, type, stream, record_id, occurred_at, data) VALUES (?, ${literal(type)}, ${literal(stream)}, ?, ?, ?)`;
  });
}

/**
 * PostgreSQL's INSERT of any number of change rows, one text array per column (`appendChangesUnnest`),
 * and what it answers: when the rows' `seq`s are consecutive (the identity gave them one after the
 * other, in array order), one row, the first `seq` with a NULL `event_id`; otherwise every row's
 * `seq` and `event_id`. Planned once in a transaction (executor.ts `planOnce`).
 */
const CHANGE_ROWS_UNNEST = planOnce(
  `WITH appended AS (INSERT INTO changes (event_id, type, stream, record_id, occurred_at, data, partition_value) SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[]) RETURNING seq, event_id),
  span AS (SELECT MIN(seq) AS first, MAX(seq) - MIN(seq) + 1 = COUNT(*) AS consecutive FROM appended)
  SELECT span.first AS seq, NULL AS event_id FROM span WHERE span.consecutive
  UNION ALL SELECT appended.seq, appended.event_id FROM appended, span WHERE NOT span.consecutive`,
);

/** `syncStateUpsert`'s statements by column list: built once. */
const syncStateUpserts = new Map<string, string>();

/**
 * `MirrorStore.updateSyncState`'s `INSERT INTO sync_state (stream, partition_value, <columns>) VALUES
 * (...) ON CONFLICT (stream, partition_value) DO UPDATE SET` each column: a row of bound values,
 * planned once in a transaction (executor.ts `planOnce`).
 */
function syncStateUpsert(columns: readonly string[]): string {
  return builtOnce(syncStateUpserts, columns.join(','), () =>
    planOnce(
      `INSERT INTO sync_state (stream, partition_value, ${columns.join(', ')}) VALUES (?, ?${', ?'.repeat(columns.length)}) ON CONFLICT (stream, partition_value) DO UPDATE SET ${columns.map((column) => `${column} = excluded.${column}`).join(', ')}`,
    ),
  );
}

/** How `RowWrites` reads one typed column off a record: its field, split once (not per record). */
interface ColumnReader {
  column: string;
  /** The field, when it is a top-level one (`amount`). */
  key: string | undefined;
  /** The field's dot path split (`user.fullname`), when it is nested. */
  path: readonly string[] | undefined;
}

/** Each stream's `ColumnReader`s, in definition order: built once per stream. */
const columnReadersByStream = new WeakMap<StreamDefinition, readonly ColumnReader[]>();

function columnReaders(stream: StreamDefinition): readonly ColumnReader[] {
  let readers = columnReadersByStream.get(stream);
  if (readers === undefined) {
    readers = stream.columns.map((mapping) => (mapping.field.includes('.') ? { column: mapping.column, key: undefined, path: mapping.field.split('.') } : { column: mapping.column, key: mapping.field, path: undefined }));
    columnReadersByStream.set(stream, readers);
  }
  return readers;
}

/** Each stream's column index by field, or null when a column holds a nested field (`topLevelColumns`). */
const topLevelColumnsByStream = new WeakMap<StreamDefinition, ReadonlyMap<string, number> | null>();

/**
 * The column index (in definition order) of each field, when every column of the stream holds a
 * top-level field (`amount`, not `user.fullname`): `RowWrites` then walks a record's own keys instead
 * of asking it for every column's field (most records lack most of the fields only a write response
 * carries, and asking an object for a key it lacks costs a lookup through its prototype). Undefined otherwise.
 */
function topLevelColumns(stream: StreamDefinition, readers: readonly ColumnReader[]): ReadonlyMap<string, number> | undefined {
  let byField = topLevelColumnsByStream.get(stream);
  if (byField === undefined) {
    byField = readers.every((reader) => reader.key !== undefined) ? new Map(readers.map((reader, index) => [reader.key!, index])) : null;
    topLevelColumnsByStream.set(stream, byField);
  }
  return byField ?? undefined;
}

/** The value of a column's field in `record` (define-stream.ts `readField`: undefined when a step is missing). */
function readColumn(record: ApiRecord, reader: ColumnReader): unknown {
  if (reader.key !== undefined) return record[reader.key];
  let node: unknown = record;
  for (const part of reader.path!) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

/**
 * A set of columns some records carry, with their rows waiting: `columns` in definition order,
 * `group` those joined by commas (the upserts' cache key), each row's values in `rows` and whether
 * the table holds its key in `stored`.
 */
interface RowGroup {
  columns: string[];
  group: string;
  /** Per row: its columns' values, then raw, content_hash, first_seen_at, synced_at, last_seen_scan. */
  rows: SqlValue[][];
  /** Per row: false only when the table holds no row of its key, as read in this transaction (`RowWrites.add`). */
  stored: boolean[];
}

/** Streams with at most this many typed columns key a set of columns by a bit mask (one bit per column), others by text. */
const MASKED_COLUMNS = 30;

/**
 * The record rows of one page waiting to be written, flushed as upserts
 * (`INSERT ... ON CONFLICT (key) DO UPDATE`) for new and known records alike, grouped by the set of
 * columns their records carry. Only those columns are written: a list page must not erase what a
 * write response added (a transaction's counterpartyName), while a field present as null is
 * cleared. A known row keeps its `first_seen_at` (and key); it loses its tombstone and misses.
 *
 * Rows per statement depend on the back end (the one place they differ):
 * - PostgreSQL: one statement per column set, its rows bound as one array per column and read
 *   back by `unnest` (`rowUpsertUnnest`): one round trip per page instead of one per record, and
 *   one statement text whatever the number of rows, prepared once per connection. The rows of keys
 *   the table does not hold (the page's stored states, read in the same transaction under the
 *   mirror's lock, so no other writer adds one meanwhile) go in a plain INSERT of their own
 *   (`rowInsertUnnest`): an upsert probes the key's index once more per row before it inserts, about
 *   a tenth of the server's CPU on a backfill.
 * - SQLite: one row per statement, the prepared single-row upsert run per record: no round trips
 *   to save there, and the multi-row form cost 5-20% more CPU on a backfill's commit path
 *   (100-row pages, 50,000 records, alternated), the single-row one none.
 */
class RowWrites {
  readonly #executor: SqlExecutor;
  readonly #stream: StreamDefinition;
  readonly #readers: readonly ColumnReader[];
  /** The column index of each field, when every column holds a top-level field (`topLevelColumns`). */
  readonly #columnByField: ReadonlyMap<string, number> | undefined;
  /** Scratch of `#row`: each column's value of the record at hand, by column index (undefined between records). */
  readonly #found: unknown[];
  readonly #now: string;
  readonly #scan: number | null;
  /** Waiting rows by column set: a bit mask of the columns (`MASKED_COLUMNS`), or their indexes as text. */
  readonly #groups = new Map<number | string, RowGroup>();
  readonly #ids = new Set<string>();

  constructor(executor: SqlExecutor, stream: StreamDefinition, now: string, scan: number | null) {
    this.#executor = executor;
    this.#stream = stream;
    this.#readers = columnReaders(stream);
    this.#columnByField = topLevelColumns(stream, this.#readers);
    this.#found = new Array<unknown>(this.#readers.length).fill(undefined);
    this.#now = now;
    this.#scan = scan;
  }

  /** True when a row of `id` waits (flush first: one upsert cannot write a row twice). */
  has(id: string): boolean {
    return this.#ids.has(id);
  }

  /**
   * Queues the row of `record` (key `id`, content hash `hash`; `json` its JSON text when known;
   * `stored` false only when the table holds no row of `id`, as read in this transaction).
   * @returns the `raw` text it will store
   */
  add(id: string, record: ApiRecord, hash: string, json?: string, stored = true): string {
    const { group, values, raw } = this.#row(record, hash, json);
    group.rows.push(values);
    group.stored.push(stored);
    this.#ids.add(id);
    return raw;
  }

  /**
   * SQLite inside a transaction: writes at once the rows of the records whose keys the table does
   * not hold (the first copy of an id listed twice), each by `INSERT ... ON CONFLICT (key) DO
   * NOTHING` with the values `add` would queue, so that a page of new records needs no SELECT of
   * stored states (its ids looked up in the key's index once, by their INSERTs, instead of twice).
   * Asks the table for the page's first key before: when it holds that key, nothing is inserted and
   * the result is undefined (a page of known records costs one SELECT of their states, not an
   * INSERT each that finds its key). `ids`, `hashes` and `raws` are the records' keys, content
   * hashes and JSON texts, by index; `repeats` true when an id comes more than once.
   * @returns by record index, true for a record whose row it inserted; and the ids whose keys the
   *   table holds (nothing written for them); undefined when nothing was tried
   * @throws the driver's error (a NOT NULL column missing): the transaction fails
   */
  insertNew(
    now: SqlWriterNow,
    records: readonly ApiRecord[],
    ids: readonly string[],
    hashes: readonly string[],
    raws: readonly string[],
    repeats: boolean,
  ): { inserted: boolean[]; held: string[] } | undefined {
    const stream = this.#stream;
    if (records.length === 0 || now.getNow(keyProbe(stream), [ids[0]!]) !== undefined) return undefined;
    const inserted = new Array<boolean>(records.length).fill(false);
    const held: string[] = [];
    const tried = repeats ? new Set<string>() : undefined;
    let lastGroup: RowGroup | undefined;
    let insert: StatementNow | undefined;
    for (let index = 0; index < records.length; index += 1) {
      const id = ids[index]!;
      if (tried !== undefined) {
        if (tried.has(id)) continue;
        tried.add(id);
      }
      const { group, values } = this.#row(records[index]!, hashes[index]!, raws[index]);
      if (group !== lastGroup) {
        lastGroup = group;
        insert = now.statementNow(rowInsertIfNew(stream, group.group, group.columns));
      }
      if (insert!.run(values).changes === 1) inserted[index] = true;
      else held.push(id);
    }
    return { inserted, held };
  }

  /** The values of `record`'s row (its columns', raw, content_hash, first_seen_at, synced_at, last_seen_scan), and the group of its column set. */
  #row(record: ApiRecord, hash: string, json: string | undefined): { group: RowGroup; values: SqlValue[]; raw: string } {
    const readers = this.#readers;
    const masked = readers.length <= MASKED_COLUMNS;
    const values: SqlValue[] = [];
    let mask = 0;
    let indexes = '';
    const found = this.#found;
    const byField = this.#columnByField;
    if (byField !== undefined) {
      // Every column a top-level field: the record's keys looked up, so the fields it lacks are never asked for.
      for (const field in record) {
        const index = byField.get(field);
        if (index !== undefined) found[index] = record[field];
      }
    } else for (let index = 0; index < readers.length; index += 1) found[index] = readColumn(record, readers[index]!);
    for (let index = 0; index < readers.length; index += 1) {
      const value = found[index];
      if (value === undefined) continue;
      found[index] = undefined;
      if (masked) mask |= 1 << index;
      else indexes += `${index},`;
      values.push(toColumnValue(value));
    }
    const raw = json ?? JSON.stringify(record);
    values.push(raw, hash, this.#now, this.#now, this.#scan);
    const key = masked ? mask : indexes;
    let group = this.#groups.get(key);
    if (group === undefined) {
      const columns: string[] = [];
      for (let index = 0; index < readers.length; index += 1) {
        if (masked ? (mask & (1 << index)) !== 0 : indexes.split(',').includes(String(index))) columns.push(readers[index]!.column);
      }
      group = { columns, group: columns.join(','), rows: [], stored: [] };
      this.#groups.set(key, group);
    }
    return { group, values, raw };
  }

  /** Writes every waiting row: one statement per column set (and per chunk). */
  async flush(): Promise<void> {
    for (const { columns, group, rows, stored } of this.#groups.values()) {
      if (rows.length === 0) continue;
      if (this.#executor.dialect === 'sqlite') {
        // One prepared single-row upsert run per record (class comment): no per-row arrays; in a
        // transaction run at once (`writeNow`), without a promise per row.
        const sql = rowUpsert(this.#stream, group, columns, 1);
        const now = this.#executor.writeNow;
        if (now !== undefined) {
          const upsert = now.statementNow(sql);
          for (const values of rows) upsert.run(values);
        } else for (const values of rows) await this.#executor.run(sql, values);
        continue;
      }
      // PostgreSQL: the group's rows as one array per written column, one statement whatever their
      // number; the rows of keys not stored yet in a plain INSERT, the others in an upsert (class comment).
      const fresh = rows.filter((_, index) => !stored[index]);
      const known = fresh.length === rows.length ? [] : fresh.length === 0 ? rows : rows.filter((_, index) => stored[index]);
      if (fresh.length > 0) await this.#writeUnnest(rowInsertUnnest(this.#stream, group, columns), columns, fresh);
      if (known.length > 0) await this.#writeUnnest(rowUpsertUnnest(this.#stream, group, columns), columns, known);
    }
    this.#groups.clear();
    this.#ids.clear();
  }

  /** PostgreSQL: `rows` (all writing `columns`) bound as one array per written column to `sql` (`rowInsertUnnest` or `rowUpsertUnnest`). */
  async #writeUnnest(sql: string, columns: readonly string[], rows: readonly SqlValue[][]): Promise<void> {
    const written = columns.length + 2;
    const arrays: SqlValue[][] = Array.from({ length: written }, () => new Array<SqlValue>(rows.length));
    for (let index = 0; index < rows.length; index += 1) {
      const values = rows[index]!;
      for (let column = 0; column < written; column += 1) arrays[column]![index] = values[column]!;
    }
    // Its result is not read: sent with the page's next statement (executor.ts `runAtCommit`), no round trip of its own.
    await this.#executor.runAtCommit(sql, [this.#now, this.#now, this.#scan, ...arrays]);
  }
}

/** `keyProbe`'s statements by table: built once. */
const keyProbes = new Map<string, string>();

/** `SELECT 1 AS held FROM <table> WHERE <key> = ?`: a row when the table holds the key bound. */
function keyProbe(stream: StreamDefinition): string {
  return builtOnce(keyProbes, stream.table, () => `SELECT 1 AS held FROM ${stream.table} WHERE ${keyColumn(stream)} = ?`);
}

/** `rowInsertIfNew`'s statements by table and column set: built once. */
const rowInsertsIfNew = new Map<string, string>();

/**
 * SQLite's single-row `INSERT INTO <table> (<columns>, raw, content_hash, first_seen_at, synced_at,
 * last_seen_scan) VALUES (...) ON CONFLICT (<key>) DO NOTHING` (`RowWrites.insertNew`): `rowUpsert`'s
 * parameters and row, written only when the table holds no row of its key.
 */
function rowInsertIfNew(stream: StreamDefinition, group: string, columns: readonly string[]): string {
  return builtOnce(rowInsertsIfNew, `${stream.table}:${group}`, () => `${valuesInsert(stream, columns, 1)} ON CONFLICT (${keyColumn(stream)}) DO NOTHING`);
}

/** `storedStatesQuery`'s statements by back end and table: built once. */
const storedStatesQueries = new Map<string, string>();

/**
 * The SELECT of `MirrorStore.storedStates`: the stored hash, tombstone and marks of the ids bound
 * to its one parameter (`listParameter`), each row's key as `id`. SQLite walks the list and looks
 * each id up in the key's index (`CROSS JOIN` keeps the list the outer loop): `IN (SELECT ...)`
 * first copied the list into a temporary index, a fifth of the statement's cost. An id listed twice
 * gives its row twice.
 */
function storedStatesQuery(stream: StreamDefinition, dialect: SqlExecutor['dialect']): string {
  return builtOnce(storedStatesQueries, `${dialect}:${stream.table}`, () => {
    const key = keyColumn(stream);
    return dialect === 'sqlite'
      ? `SELECT t.${key} AS id, t.content_hash, t.deleted_at, t.last_seen_scan, t.written_seq FROM json_each(?) AS j CROSS JOIN ${stream.table} AS t ON t.${key} = j.value`
      : `SELECT ${key} AS id, content_hash, deleted_at, last_seen_scan, written_seq FROM ${stream.table} WHERE ${inList(dialect, key)}`;
  });
}

/** The PostgreSQL upserts by table and column set: built once (one named prepared statement each). */
const rowUpsertsUnnest = new Map<string, string>();

/** The PostgreSQL plain INSERTs by table and column set: built once (one named prepared statement each). */
const rowInsertsUnnest = new Map<string, string>();

/**
 * `rowUpsertUnnest` without its `ON CONFLICT` clause, same parameters: for rows whose keys the
 * table does not hold (`RowWrites`). A key it holds fails the statement (unique violation) and the
 * transaction with it. Planned once in a transaction (executor.ts `planOnce`), as `rowUpsertUnnest`.
 */
function rowInsertUnnest(stream: StreamDefinition, group: string, columns: readonly string[]): string {
  return builtOnce(rowInsertsUnnest, `${stream.table}:${group}`, () => planOnce(unnestInsert(stream, columns)));
}

/**
 * PostgreSQL's form of `rowUpsert` for any number of rows: `INSERT INTO <table> (<columns>, raw,
 * content_hash, first_seen_at, synced_at, last_seen_scan) SELECT <the columns>, ?, ?, ? FROM unnest(<one text
 * array per column, raw and content_hash>) ... ON CONFLICT` as `rowUpsert`. Parameters:
 * `first_seen_at`, `synced_at`, `last_seen_scan` (alike for every row), then one `text[]` per column
 * in column order (a bigint or double precision column's elements cast). Planned once in a
 * transaction (executor.ts `planOnce`): its plan is the same whatever the table holds.
 */
function rowUpsertUnnest(stream: StreamDefinition, group: string, columns: readonly string[]): string {
  return builtOnce(rowUpsertsUnnest, `${stream.table}:${group}`, () => planOnce(`${unnestInsert(stream, columns)} ON CONFLICT (${keyColumn(stream)}) DO UPDATE SET ${upsertAssignments(stream, columns).join(', ')}`));
}

/** The `INSERT INTO <table> (...) SELECT ... FROM unnest(...)` both `rowUpsertUnnest` and `rowInsertUnnest` start with. */
function unnestInsert(stream: StreamDefinition, columns: readonly string[]): string {
  const types = new Map(stream.columns.map((mapping) => [mapping.column, STORED_TYPE.postgres[mapping.type]]));
  // Every array is text[] (executor.ts `SqlArray`): a column of another type reads its elements cast.
  const read = columns.map((column) => (types.get(column) ?? 'text') === 'text' ? `u.${column}` : `u.${column}::${types.get(column)!}`);
  const arrays = [...columns, 'raw', 'content_hash'].map(() => '?::text[]');
  return `INSERT INTO ${stream.table} (${rowColumns(columns).join(', ')}) SELECT ${[...read, 'u.raw', 'u.content_hash'].join(', ')}, ?::text, ?::text, ?::bigint FROM unnest(${arrays.join(', ')}) AS u(${[...columns, 'raw', 'content_hash'].join(', ')})`;
}

/** The SET list of an upsert writing `columns`: every written column but the key and `first_seen_at`, clearing the tombstone and misses, keeping `last_seen_scan` when none is given. */
function upsertAssignments(stream: StreamDefinition, columns: readonly string[]): string[] {
  const key = keyColumn(stream);
  return [
    ...[...columns, 'raw', 'content_hash', 'synced_at'].filter((column) => column !== key).map((column) => `${column} = excluded.${column}`),
    'deleted_at = NULL',
    `last_seen_scan = COALESCE(excluded.last_seen_scan, ${stream.table}.last_seen_scan)`,
    'missed_scans = 0',
  ];
}

/** The multi-row upserts by table, column set and row count: built once (the same text hits the prepared-statement caches). */
const rowUpserts = new Map<string, string>();

/**
 * `INSERT INTO <table> (<columns>, raw, content_hash, first_seen_at, synced_at, last_seen_scan)
 * VALUES (...), ... ON CONFLICT (<key>) DO UPDATE SET` every written column but the key and
 * `first_seen_at`, clearing `deleted_at` and `missed_scans`, keeping `last_seen_scan` when none is given.
 * The stored row is named by its table (PostgreSQL finds a bare name ambiguous with `excluded`).
 */
function rowUpsert(stream: StreamDefinition, group: string, columns: readonly string[], rows: number): string {
  // `group` is `columns` joined by commas (RowWrites' key), passed in so that no call joins them again.
  return builtOnce(rowUpserts, `${stream.table}:${group}:${rows}`, () => `${valuesInsert(stream, columns, rows)} ON CONFLICT (${keyColumn(stream)}) DO UPDATE SET ${upsertAssignments(stream, columns).join(', ')}`);
}

/** `INSERT INTO <table> (<columns>, raw, content_hash, first_seen_at, synced_at, last_seen_scan) VALUES` and `rows` rows of placeholders: what `rowUpsert` and `rowInsertIfNew` start with. */
function valuesInsert(stream: StreamDefinition, columns: readonly string[], rows: number): string {
  const all = rowColumns(columns);
  const row = `(${all.map(() => '?').join(', ')})`;
  return `INSERT INTO ${stream.table} (${all.join(', ')}) VALUES ${Array.from({ length: rows }, () => row).join(', ')}`;
}

export type SyncStateColumn =
  | 'cursor'
  | 'supported'
  | 'run'
  | 'scan_number'
  | 'last_run_started_at'
  | 'last_run_finished_at'
  | 'last_success_at'
  | 'last_error'
  | 'last_run_mode'
  | 'last_run_requests'
  | 'last_run_records'
  | 'last_run_changes'
  | 'lock_owner'
  | 'lock_expires_at'
  | 'last_scan'
  | 'deletion_hold'
  | 'partitions';

/** One `sync_state` row decoded (defaults when `row` is undefined: the stream or partition never ran). */
function decodeSyncState(stream: StreamName, partition: string, row: Record<string, unknown> | undefined): SyncState {
  return {
    stream,
    partition,
    cursor: (row?.cursor as string | null) ?? null,
    supported: row ? Number(row.supported) === 1 : true,
    run: row?.run ? (JSON.parse(row.run as string) as RunCheckpoint) : null,
    scanNumber: (row?.scan_number as number | undefined) ?? 0,
    lastRunStartedAt: (row?.last_run_started_at as string | null) ?? null,
    lastRunFinishedAt: (row?.last_run_finished_at as string | null) ?? null,
    lastSuccessAt: (row?.last_success_at as string | null) ?? null,
    lastError: (row?.last_error as string | null) ?? null,
    lastRunMode: (row?.last_run_mode as string | null) ?? null,
    lastRunRequests: (row?.last_run_requests as number | null) ?? null,
    lastRunRecords: (row?.last_run_records as number | null) ?? null,
    lastRunChanges: (row?.last_run_changes as number | null) ?? null,
    lastScan: row?.last_scan ? (JSON.parse(row.last_scan as string) as ScanOutcome) : null,
    deletionHold: row?.deletion_hold ? (JSON.parse(row.deletion_hold as string) as DeletionHold) : null,
    partitionSources: row?.partitions ? (JSON.parse(row.partitions as string) as PartitionSources) : null,
  };
}
