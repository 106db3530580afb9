/**
 * One run of one stream (backfill, incremental sync or reconciliation): a `StreamRun` holds the
 * stream, its checkpoint, its counts (the `RunResult`) and its scan memory, pages the stream's list
 * from the checkpoint, commits each page, checks the scan and commits its end. The engine
 * (src/sync/sync-engine.ts) takes the stream's lease, builds the run and hands it the lease-fenced
 * steps it may take (`RunEnvironment`). The flow of one page (docs/architecture.md "One API page"):
 *
 *   paginateByOffset (src/client/paginate.ts: next offset, drift step-back, endless-list guards, repeated ids)
 *     -> client.listPage (hook layers: rate budget, HTTP, retries; then envelope and item validation)
 *     -> store.applyRecords + store.saveRun in ONE transaction (records, changelog, checkpoint: store.transaction)
 *     -> onChanges (wake the webhook dispatcher) and onProgress (progress bar, logs)
 *
 * How the rules are kept:
 * - Ordering: every page asks `sortBy=createdAt&sortOrder=asc` with `limit=100`. A record's position
 *   then never moves when it is updated, and records created during the scan are appended at the end.
 * - Frozen set: from the second page on, `createdBefore` = the server time of the first page (its
 *   `Date` header, floored to the second), so records created during the scan are not paged at all
 *   (the next incremental run picks them up: its `updatedAfter` is earlier than their creation).
 *   Records created in that second before the first page are asked for at the end, when the mirror
 *   holds one the scan would miss (`listedInBoundSecond`).
 * - Offset drift: with creations excluded and positions stable under updates, the only thing that
 *   shifts unseen records towards lower offsets is a removal (an onboarding completing, a record
 *   deleted). Each page's `pagination.total` is compared with the previous page's: a drop of `d`
 *   means up to `d` unseen records slid below the positions read. The paginator keeps those
 *   positions as drift gaps and reads them once the frontier reached the end (paginate.ts); a record
 *   listed again where the removals explain is drift, not a tie (`countIds`). Re-read records hash
 *   the same and emit nothing.
 * - Cursor: an incremental run asks `updatedAfter = cursor - overlap`; on success the cursor becomes
 *   the server's `Date` at the run's first page (floored to the second), never a record timestamp
 *   (transaction list items carry none) and never later than the run's start.
 * - Resumable: the checkpoint (offset, filters, totals) commits with each page's records; a restart
 *   resumes from it, re-fetching at most the page that was in flight.
 * - Scan completeness (src/sync/scan-check.ts): a scan that saw fewer distinct ids than the final
 *   `pagination.total` is incomplete. When ids came twice (ties returned in another order per
 *   request), each id's two positions mark a run of ties (a tie region, owing one record per
 *   repeat), and the regions are re-read first, round by round, until the scan is whole
 *   (`reReadTies`, bounded); a scan still short is marked incomplete (last_scan, a warning, the
 *   metric): it counts no miss and leaves the cursor where it was.
 * - Endless lists: the paginator stops a list that says `hasMore` past its total or keeps repeating
 *   ids (EndlessListError); the run fails and nothing is tombstoned.
 * - Two-scan rule: only a complete scan that finished without error counts misses; a record missed
 *   by two consecutive complete scans is tombstoned (src/mirror/mirror-store.ts `recordMisses`).
 * - One scan: built with a `PageSink`, a run hands its pages, its end and a 404 to the sink instead
 *   of the mirror (verify, src/sync/mirror-verify.ts), paging, counting ids, re-reading ties and
 *   judging completeness as above: sync, backfill, range backfill and verify share every rule.
 */
import type { ApiClient } from '../client/client.ts';
import { NotFoundError } from '../client/api-errors.ts';
import { withSpan } from '../telemetry/spans.ts';
import { paginateByOffset, type Page, type PageStep, type PositionRange } from '../client/paginate.ts';
import type { Priority } from '../client/rate-budget.ts';
import type { Logger } from '../logging/logger.ts';
import { RecordClockStore } from '../mirror/record-clock-store.ts';
import { quarantineKey, recordIdOf, RejectedRecords } from '../mirror/rejected-records.ts';
import { foundNoneStored, heldKeyConflict, UNNAMED_KEPT, type AppendedChange, type DeletionHold, type MirrorStore, type PartitionSources, type RunCheckpoint, type ScanOutcome, type StoredStates } from '../mirror/mirror-store.ts';
import type { ApiRecord } from '../streams/define-stream.ts';
import { createdFilters, type CreatedRange } from './created-range.ts';
import { recordRangeMisses } from '../mirror/range-misses.ts';
import { STREAM_LIST, type RegisteredStream, type StreamName } from '../streams/definitions.ts';
import { assertBaseUrlServes } from './base-url-check.ts';
import { readAhead } from './read-ahead.ts';
import { lagCeiling, lagsFromPage, lagsFromWrites, measuresRecordClock, newestStamp, saveHighWater, windowStart } from './record-clock-lags.ts';
import { creditFound, gapPageInTies, noteTie, scanOutcome, tallyPage } from './scan-check.ts';
import { RECENT_LISTINGS, ScanMemory } from './scan-memory.ts';
import { listedInScan } from '../mirror/scan-marks.ts';
import { reReadTies, type TieReReader } from './tie-re-reads.ts';
import type { ChangeProbeOutcome } from './change-probe.ts';
import { MASS_DELETION_HELD } from './stream-conditions.ts';

/** Why a run happens: `backfill` (full refresh), `sync` (incremental), `reconcile` (complete scan to find records gone). */
export type RunReason = 'backfill' | 'sync' | 'reconcile';

/** Progress after each committed page, for progress bars and logs (`RunOptions.onProgress`). */
export interface RunProgress {
  stream: StreamName;
  /** The partition being read (a partitioned stream's value, docs/sync.md "Partitioned streams"); absent for an unpartitioned stream. */
  partition?: string;
  reason: RunReason;
  mode: RunCheckpoint['mode'];
  /** Items listed so far in this run (re-reads after a step back included). */
  records: number;
  changes: number;
  /** `pagination.total` of the last page: records the run expects to list. */
  total: number;
  /** Offset of the next page. */
  offset: number;
  pages: number;
}

/**
 * What one `SyncEngine.run` did: the stream, why and how it ran (`mode`: `complete` scan of the
 * whole list, or `incremental` since the cursor), how it ended, and its counts. Never thrown: API and
 * network failures end as `status: 'failed'` with `error`.
 */
export interface RunResult {
  stream: StreamName;
  /** For one partition's run (an entry of `partitions`): the partition's value. */
  partition?: string;
  reason: RunReason;
  mode: RunCheckpoint['mode'];
  /**
   * `succeeded`; `unsupported` (the list endpoint answered 404, docs/sync.md "Deals"); `busy` (another
   * process runs this stream); `interrupted` (aborted: the checkpoint stands); `failed` (error: the
   * checkpoint stands, `error` says what and where); `no-partitions` (a partitioned stream with no
   * partition configured or mirrored: nothing was requested, docs/sync.md "Partitioned streams").
   */
  status: 'succeeded' | 'unsupported' | 'busy' | 'interrupted' | 'failed' | 'no-partitions';
  /** True when this run continued a checkpoint left by an earlier, unfinished run. */
  resumed: boolean;
  /** List requests this run sent (the client's retries of one page count once). */
  pages: number;
  /** Items listed (re-reads after a drift step-back included). */
  records: number;
  /** Changelog rows appended (tombstones included). */
  changes: number;
  /** Records tombstoned by the two-scan rule at the end of a complete scan. */
  tombstones: number;
  /** Tombstones held back as a mass deletion (docs/sync.md "Mass deletions held"); absent when none. */
  deletionsHeld?: number;
  /** Items quarantined because they failed their schema (docs/sync.md "Invalid records"); the rest of their page committed. */
  rejected: number;
  /**
   * Listed records not applied because a write-through wrote their row after their page's request
   * was sent (docs/sync.md "Write-throughs during a run"): the next run reads them again. Absent when none.
   */
  keptWrittenThrough?: number;
  /** Step-backs made because `pagination.total` dropped between pages. */
  driftStepBacks: number;
  /**
   * How the scan ended, for a run that paged to the end (`succeeded`): complete, or incomplete with
   * a reason (docs/sync.md "Scan completeness"). Absent for other statuses.
   */
  scan?: ScanOutcome;
  /**
   * For `busy`: who holds the stream's lease and until when (ISO, the database's clock): a holder
   * that died keeps the stream until then (docs/sync.md "Resumable").
   */
  heldBy?: { holder: string | null; expiresAt: string | null };
  /** When `unsupported` because the list answered 404: the URL asked, base URL included (password masked). */
  notFoundUrl?: string;
  /** A range backfill's range (docs/sync.md "Range backfill"); absent for a whole-stream run. */
  createdRange?: CreatedRange;
  error?: Error;
  /**
   * A partitioned stream's run: one result per partition, in the order they ran (the counts above
   * are their sums); empty with `no-partitions`. Absent for an unpartitioned stream.
   */
  partitions?: RunResult[];
  /**
   * A partitioned stream's run: where its partition values came from and how many, with `describe`
   * the line the backfill's summary prints (docs/sync.md "Partitioned streams").
   */
  partitionSources?: PartitionSources & { describe: string };
  /**
   * A run asked with `probeFirst` that probed: what the change probe found. When it found the list
   * unmoved the run ends there (`mode` `incremental`, `pages` its requests, no `scan`); when it
   * moved, the complete scan follows and `pages` counts the probe's requests too.
   */
  probe?: ChangeProbeOutcome;
}

export { MASS_DELETION_HELD };

/** Per-run options of `SyncEngine.run`. */
export interface RunOptions {
  /** Aborts the run between or during page requests; the checkpoint stands (status `interrupted`). */
  signal?: AbortSignal;
  /** Called after each page commits. */
  onProgress?: (progress: RunProgress) => void;
  /**
   * Let a complete scan tombstone more than `massDeletionShare` of the stream (`backfill
   * --confirm-deletions`): an operator confirmed that the records it no longer lists are gone.
   */
  confirmDeletions?: boolean;
  /**
   * A range backfill (`backfill --created-after/--created-before`, docs/sync.md "Range backfill"): only
   * records created in this range are listed, counted missed and tombstoned; the cursor stays. Its
   * bounds as `checkCreatedRange` (src/sync/created-range.ts) returns them. Backfill only.
   */
  createdRange?: CreatedRange;
  /**
   * A resting poll of a complete-scan stream (the daemon's scheduler): ask the stream's change probe
   * first (src/sync/change-probe.ts, docs/sync.md "Change probe") and scan only when the list moved
   * since the last complete scan. Ignored by a stream without a probe, a reason other than `sync`,
   * a checkpoint to resume, or a stream that has not completed a scan yet.
   */
  probeFirst?: boolean;
}

const SECOND_MS = 1000;

/** Pages `listedInBoundSecond` reads at most (100 records each). */
const BOUND_SECOND_PAGES = 10;

/**
 * How recently before a complete scan began a row it would miss must have been first seen for the
 * scan to ask about its frozen set's second, ms: the second itself, with room for the mirror's clock
 * and the server's to tick at slightly different rates or be stepped between the two readings.
 */
const BOUND_SECOND_RECENT_MS = 60_000;

/**
 * The creation times a range backfill's pages covered: its range, ended at the frozen set's bound
 * when that is earlier (`createdFilters`). Records created at or after it were on no page.
 */
function listedRange(run: RunCheckpoint): CreatedRange {
  const { createdAfter, createdBefore } = createdFilters(run);
  return { ...(createdAfter !== undefined ? { after: createdAfter } : {}), ...(createdBefore !== undefined ? { before: createdBefore } : {}) };
}

/** A page's ids in the order listed (quarantined items last) and each one's position in the set, index by index (`StreamRun.positionedIds`). */
interface PositionedIds {
  readonly ids: readonly string[];
  readonly positions: readonly number[];
}

/** A page none of whose ids the run's memory held (`countIds`'s `listedBefore` on most pages). */
const NONE_LISTED: ReadonlySet<string> = new Set();

/**
 * What a run may do besides reading its own state: the engine's client and store, and the steps the
 * engine guards with the stream's lease and the database wait (src/sync/sync-engine.ts).
 */
export interface RunEnvironment {
  /** Lists pages; requests go at priority `incremental` (sync) or `backfill` (backfill, reconcile). */
  client: ApiClient;
  /** The company the run mirrors (config `companyId`): its trace spans' `bizops.company`. */
  company?: string;
  /** The mirror, outside a transaction (reads that need no fence). */
  store: MirrorStore;
  logger: Logger;
  /**
   * Runs `step` on the mirror, trying it again while the database is away (for at most
   * `SyncEngineOptions.databaseWaitSeconds`, ending with the run's signal).
   * @throws the last DatabaseUnavailableError after the wait; any other error of `step` at once
   */
  database<T>(step: () => Promise<T>): Promise<T>;
  /**
   * Runs `fn` in one transaction that first confirms (and renews) the stream's lease.
   * @throws LeaseLostError when another process took the stream over (nothing is written)
   */
  fenced<T>(fn: (store: MirrorStore) => Promise<T>): Promise<T>;
  /**
   * Called right before each list request leaves: makes sure the stream's lease is still held.
   * @throws LeaseLostError when another process took the stream over (the request is not sent)
   */
  beforeRequest(): Promise<void>;
  /** Called after each commit that appended changes (e.g. to wake the webhook dispatcher). */
  onChanges?: (changes: readonly AppendedChange[]) => void;
  /** Most rounds of tie re-reads at the end of one scan (`SyncEngineOptions.tieReReadRounds`), an integer >= 1. */
  tieReReadRounds: number;
  /** First listings a complete scan keeps in memory (`SyncEngineOptions.scanMemory`); default `RECENT_LISTINGS`. */
  scanMemory?: number;
  /** Share of live records a complete scan may tombstone before it holds them (`SyncEngineOptions.massDeletionShare`), 0..1. */
  massDeletionShare: number;
}

/**
 * Where a scan's pages go when they do not go to the mirror (docs/sync.md "Verify"): a `StreamRun`
 * built with a sink pages, counts ids (ties, drift), re-reads tie regions and judges completeness
 * exactly as an engine run does, and hands each page, the scan's end and a 404 to the sink. The sink
 * also says which ids the scan listed beyond the run's bounded memory (an engine run reads that from
 * the stream table's scan marks: src/mirror/scan-marks.ts). One scan for sync, backfill, range
 * backfill and verify: a rule of paging, ties or completeness is kept in one place.
 */
export interface PageSink {
  /**
   * Takes one page of the scan (a first read, a drift gap's page or a tie re-read), after its ids
   * were counted; quarantine-worthy items are in `page.rejected`.
   * @param listedBefore the page's ids this process's memory holds from earlier pages of the scan
   * @param changelogMark the page's changelog mark: a `seq` no greater than the changelog's last one
   *   when its request was sent (rows written through after it hold a newer version than the page)
   * @returns changes to count in the run's progress (verify: the differences the page showed)
   */
  take(page: Page<ApiRecord>, listedBefore: ReadonlySet<string>, changelogMark: number): Promise<number>;
  /** Of `ids` (ids the run's bounded memory no longer holds), those this scan listed already. */
  listedEarlier(ids: readonly string[]): Promise<ReadonlySet<string>>;
  /** Distinct ids this scan listed so far, quarantined items included (exact: the completeness rule counts them). */
  distinctIds(): Promise<number>;
  /** The end of a scan that paged to its end, complete or not (docs/sync.md "Scan completeness"). */
  finish(scan: ScanOutcome): Promise<void>;
  /** The list answered 404 at its first page, another list answered, and the stream's definition says `unsupportedOn404`: the run ends `unsupported`. */
  unsupported(notFound: NotFoundError): Promise<void>;
}

/** The overlap of a stream's incremental runs, ms: its own `request.lookbackSeconds`, else the engine's `overlapMs`. */
export function lookbackMsOf(stream: RegisteredStream, overlapMs: number): number {
  return stream.request.lookbackSeconds === undefined ? overlapMs : stream.request.lookbackSeconds * SECOND_MS;
}

/**
 * A fresh checkpoint for a run that does not resume one: a complete scan takes the next scan
 * number; an incremental run asks `updatedAfter` = the cursor minus the stream's lookback
 * (`request.lookbackSeconds`, else `overlapMs`) minus the largest record-clock lag seen on any
 * stream, earlier when that lag grew since the window of the runs before, or the high water asks
 * it (record-clock-lags.ts `windowStart`, docs/sync.md "Record clock"); the lag it allowed for is
 * kept (`windowLagSeconds`).
 * @param partition the partition's value, or '' for an unpartitioned stream
 * @param overlapMs the engine's default overlap, milliseconds
 */
export async function newCheckpoint(
  store: MirrorStore,
  stream: RegisteredStream,
  partition: string,
  start: { mode: RunCheckpoint['mode']; reason: RunReason; cursor: string | null; scanNumber: number; overlapMs: number },
): Promise<RunCheckpoint> {
  const run: RunCheckpoint = { mode: start.mode, reason: start.reason, startedAt: new Date().toISOString(), offset: 0, pages: 0, records: 0, changes: 0 };
  if (start.mode === 'incremental' && start.cursor) {
    // The overlap is widened by how far the server's record clock was seen to lag the cursor's, on
    // any stream (docs/sync.md "Record clock"): a change made just after the last run carries an
    // updatedAt that much older than the moment it was made.
    const lagSeconds = Math.ceil(await new RecordClockStore(store.executor).largest());
    run.updatedAfter = await windowStart(store.executor, stream, partition, start.cursor, lookbackMsOf(stream, start.overlapMs), lagSeconds);
    run.windowLagSeconds = lagSeconds;
  }
  if (start.mode === 'complete') run.scanNumber = start.scanNumber + 1;
  return run;
}

/**
 * One run of one stream, from its checkpoint to its end (`execute`). Built by the engine once the
 * stream's lease is held; used once. Its counts accumulate in `result`, its position in
 * `checkpoint` (committed with every page), and what this process listed in its scan memory.
 */
export class StreamRun implements TieReReader {
  readonly stream: RegisteredStream;
  /** The partition's value (its list asks `partitions.param` = it), or '' for an unpartitioned stream. */
  readonly partition: string;
  readonly checkpoint: RunCheckpoint;
  readonly result: RunResult;
  private readonly options: RunOptions;
  private readonly environment: RunEnvironment;
  /**
   * Ids this process's part of the run listed (a resumed run starts empty), where, and how far
   * positions may have moved since: the latest `RECENT_LISTINGS` for a complete scan (the mirror's
   * scan marks say the rest, scan-memory.ts), every one for an incremental run.
   */
  private readonly memory: ScanMemory;
  /** Where the pages go instead of the mirror (verify), or undefined: the run commits them to the mirror. */
  private readonly sink: PageSink | undefined;
  /**
   * The changelog's last `seq` this run knows was committed: read before its first request, raised by
   * each of its commits. Never above the changelog's last seq at any later moment, so the value a
   * request is sent under is a mark for its page (docs/sync.md "Write-throughs during a run").
   */
  private changelogMark = 0;
  /** True when this complete scan began (not resumed) on a table holding no record. */
  private emptyAtStart = false;
  /** Each page's changelog mark: `changelogMark` when its fetch began. */
  private readonly pageMarks = new WeakMap<Page<ApiRecord>, number>();
  /**
   * Whether the stream may have quarantined items (`RejectedRecords.anyQuarantined`), asked once by
   * the run's first page without rejected items (undefined until then). Only the run holding the
   * stream's lease quarantines its items, so false stays true to the table until one of this run's
   * pages quarantines: until then its pages send no release of their accepted ids (on PostgreSQL a
   * DELETE binding the page's ids per page, about a tenth of a millisecond of the server's CPU).
   */
  private quarantineMayHold: boolean | undefined;
  /**
   * True after a page whose records the stream's table held none of (PostgreSQL): the next page's
   * stored states are assumed none instead of asked (`askStoredStates`' `assumeNone`), as on a
   * backfill's pages after its first. A page the table refuses (one of its ids held) clears it and
   * is written again, asking.
   */
  private pagesNew = false;
  /**
   * The last page's `positionedIds`, worked out once (a drift gap's page asks for them twice, one
   * right after the other). One page, not a `WeakMap` of every page: V8's young-generation
   * collections keep a WeakMap's values alive until the next full collection, so a WeakMap of the
   * pages' ids promoted every page's ids to the old generation and brought full collections more often.
   */
  private positioned: { page: Page<ApiRecord>; listed: PositionedIds } | undefined;

  /**
   * @param stream the stream being run
   * @param partition the partition's value, or '' for an unpartitioned stream
   * @param checkpoint the run's checkpoint (new or resumed); updated in place and committed with each page
   * @param result the run's counts and outcome; updated in place
   * @param options the caller's per-run options (signal, progress, confirmed deletions)
   * @param environment what the engine lends the run (client, store, lease-fenced steps)
   * @param sink where the pages go instead of the mirror (`PageSink`: verify); absent, the run commits them
   */
  constructor(stream: RegisteredStream, partition: string, checkpoint: RunCheckpoint, result: RunResult, options: RunOptions, environment: RunEnvironment, sink?: PageSink) {
    this.stream = stream;
    this.partition = partition;
    this.checkpoint = checkpoint;
    this.result = result;
    this.options = options;
    this.environment = environment;
    this.sink = sink;
    // Bounded where something else says what the scan listed: the mirror's scan marks, or the sink.
    const bounded = sink !== undefined || (checkpoint.mode === 'complete' && checkpoint.scanNumber !== undefined);
    this.memory = new ScanMemory(bounded ? (environment.scanMemory ?? RECENT_LISTINGS) : undefined);
  }

  private get logger(): Logger {
    return this.environment.logger;
  }

  /** The log fields naming the run: its stream, and its partition when it has one. */
  private get names(): { stream: StreamName; partition?: string } {
    return this.partition ? { stream: this.stream.name, partition: this.partition } : { stream: this.stream.name };
  }

  /** The partition for the store's calls: undefined for an unpartitioned stream. */
  private get inPartition(): string | undefined {
    return this.partition || undefined;
  }

  /**
   * Pages the stream from the checkpoint to its end; when that succeeded, checks the scan (re-reading
   * ties) and commits the end of the run. Sets `result.status` to `unsupported` on a 404 list.
   * @throws on a failed request or commit, LeaseLostError, or an abort: the checkpoint stands
   */
  async execute(): Promise<void> {
    const attributes = {
      'bizops.stream': this.stream.name,
      'bizops.partition': this.partition,
      'bizops.mode': this.checkpoint.mode,
      'bizops.reason': this.checkpoint.reason,
      ...(this.environment.company !== undefined ? { 'bizops.company': this.environment.company } : {}),
    };
    await withSpan('sync.run', attributes, async (span) => {
      await this.executeRun();
      span.setAttribute('bizops.status', this.result.status);
    }, { root: true });
  }

  private async executeRun(): Promise<void> {
    const { store } = this.environment;
    this.changelogMark = await this.environment.database(() => store.lastSeq());
    // A complete scan starting on an empty table (a first backfill) can miss no record: its finish
    // skips the search of the table (not of the quarantine, which an empty table may still hold).
    this.emptyAtStart = this.checkpoint.mode === 'complete' && this.checkpoint.pages === 0 && !this.sink && !(await this.environment.database(() => store.holdsAnyRecord(this.stream)));
    // A checkpoint saved without a mark gets this resumption's: later than its start, never later than a request.
    this.checkpoint.changelogMark ??= this.changelogMark;
    await this.page();
    if (this.result.status === 'succeeded') {
      this.result.scan = await this.checkScan();
      if (this.sink) await this.sink.finish(this.result.scan);
      else await this.finish(this.result.scan);
    }
  }

  /**
   * Fetches (and validates) the run's page at `offset`; `createdBefore` is read at each call (set after
   * the first page). The page's changelog mark is the run's `changelogMark` as the fetch begins.
   */
  private fetchPage(offset: number): Promise<Page<ApiRecord>> {
    const mark = this.changelogMark;
    return withSpan('api.page', { 'bizops.stream': this.stream.name, 'bizops.partition': this.partition, 'bizops.offset': offset }, async (span) => {
      const page = await this.requestPage(offset);
      this.pageMarks.set(page, mark);
      span.setAttribute('bizops.records', page.items.length);
      return page;
    });
  }

  private requestPage(offset: number, created: { createdAfter?: string; createdBefore?: string } = createdFilters(this.checkpoint)): Promise<Page<ApiRecord>> {
    const { signal } = this.options;
    signal?.throwIfAborted();
    const { stream, checkpoint } = this;
    const request = stream.request;
    const priority: Priority = checkpoint.reason === 'sync' ? 'incremental' : 'backfill';
    return this.environment.client.listPage<ApiRecord>(request.path, offset, {
      itemsKey: request.itemsKey,
      itemSchema: stream.itemSchema,
      priority,
      signal,
      invalidItems: 'collect',
      hooks: { beforeRequest: () => this.environment.beforeRequest() },
      query: {
        ...request.filters,
        ...(this.partition && stream.partitions ? { [stream.partitions.param]: this.partition } : {}),
        sortBy: request.sort.by,
        sortOrder: request.sort.order,
        updatedAfter: checkpoint.updatedAfter,
        ...created,
      },
    });
  }

  /**
   * The ids (and the quarantine keys of the items failing their schema) of the records the list
   * serves now that were created in the second its frozen set's bound begins (`createdAfter` 1 ms
   * before the bound, `createdBefore` 1 s after it; the run's own filters and partition):
   * docs/sync.md "The frozen set's second". The bound is the first page's
   * server time floored to the second, so a record created in that second before the first page is
   * on no later page of the scan, though the mirror may hold it already (written through, or listed
   * by an incremental run's first page, which has no bound). A complete scan does not count such a
   * record missed, nor a verification call it extra. Empty when the run has no bound (it read one
   * page: every record listed) or its list takes no creation-time filters. An item failing its
   * schema counts by its id, as on a page, and its quarantine key is returned too. At most
   * `BOUND_SECOND_PAGES` pages; a second with more records than that returns the ids so far.
   * @throws what `ApiClient.listPage` throws
   */
  async listedInBoundSecond(): Promise<{ ids: string[]; quarantineKeys: string[] }> {
    const listed = { ids: [] as string[], quarantineKeys: [] as string[] };
    const bound = this.checkpoint.createdBefore;
    if (bound === undefined || !this.stream.request.acceptsCreatedRange || this.checkpoint.createdRange !== undefined) return listed;
    const boundMs = Date.parse(bound);
    const created = { createdAfter: new Date(boundMs - 1).toISOString(), createdBefore: new Date(boundMs + SECOND_MS).toISOString() };
    for (let offset = 0, pages = 0; pages < BOUND_SECOND_PAGES; pages += 1) {
      const page = await this.requestPage(offset, created);
      for (const item of page.items) listed.ids.push(String(item[this.stream.key]));
      // Served, though failing its schema: listed, as a page's quarantined item with an id is (rejected-records.ts `quarantine`).
      for (const item of page.rejected ?? []) {
        const id = recordIdOf(item.raw, this.stream.key);
        if (id !== null) listed.ids.push(id);
        listed.quarantineKeys.push(quarantineKey(item.raw, this.stream.key));
      }
      if (!page.pagination.hasMore || page.items.length + (page.rejected?.length ?? 0) === 0) break;
      offset += page.items.length + (page.rejected?.length ?? 0);
    }
    return listed;
  }

  /** Pages through the stream from the checkpoint until `hasMore` is false, committing each page. */
  private async page(): Promise<void> {
    const { stream, checkpoint } = this;
    const request = stream.request;
    const pages = paginateByOffset((offset) => this.fetchPage(offset), {
      label: `GET ${request.path}`,
      startOffset: checkpoint.offset,
      ...(checkpoint.paging ? { resume: checkpoint.paging } : {}),
      previousTotal: checkpoint.lastTotal,
      stepBackOnShrink: true,
      idOf: (item) => String(item[stream.key]),
      placeGap: (gap) => gapPageInTies(checkpoint, gap),
    });
    try {
      // The next page is fetched while this one commits (one page ahead, never the first:
      // read-ahead.ts), except a drift gap's page: it is placed from the tie regions the page
      // before it notes when committed (scan-check.ts gapPageInTies).
      const readNextAfterCommit = (step: PageStep<ApiRecord>): boolean => step.done || (step.state.ended && step.state.gaps.length > 0);
      for await (const step of readAhead(pages, { isLast: readNextAfterCommit })) await this.commitPage(step);
    } catch (error) {
      if (error instanceof NotFoundError && checkpoint.pages === 0) {
        // Every list answering 404 is a wrong base URL (base-url-check.ts): throws, nothing marked.
        await assertBaseUrlServes(this.environment.client, error, { streams: STREAM_LIST, priority: checkpoint.reason === 'sync' ? 'incremental' : 'backfill', signal: this.options.signal });
        if (request.unsupportedOn404) {
          if (this.sink) {
            this.result.status = 'unsupported';
            this.result.notFoundUrl = error.url;
            await this.sink.unsupported(error);
          } else await this.markUnsupported(error);
          return;
        }
      }
      throw error;
    }
  }

  /** One page: the cursor's server time (first page), then records, changelog and checkpoint in one transaction, then notification. */
  private commitPage(step: PageStep<ApiRecord>): Promise<void> {
    return withSpan('mirror.commit', { 'bizops.stream': this.stream.name, 'bizops.partition': this.partition, 'bizops.offset': step.page.offset, 'bizops.records': step.page.items.length }, () => this.commitPageNow(step));
  }

  private async commitPageNow(step: PageStep<ApiRecord>): Promise<void> {
    const { checkpoint: run, result } = this;
    const { page } = step;
    this.noteTotal(page.pagination.total, step.kind === 'gap');
    // A frontier page reads positions for the first time; a gap page re-reads some (offset drift).
    const read = step.kind === 'frontier' ? { firstRead: true } : { firstRead: false, gap: step.gap, listedEarlier: await this.listedEarlier(page) };
    const { fresh, repeated, slid, listedBefore } = this.countIds(page, read);
    this.noteUnnamed(page);
    if (step.gap) {
      // How many records may have slid into this gap, each a removal of a record the scan may have
      // listed already: those it found there, or, where the gap lies in a run of ties (whose order
      // changes per request, so a slid record need not show where it slid), every position of it.
      const { from, to } = step.gap;
      const inTies = (run.tieRegions ?? []).some((region) => region.from <= to && region.to >= from);
      run.slidFound = (run.slidFound ?? 0) + (inTies ? to - from + 1 : slid);
    }
    tallyPage(run, page.pagination.total, fresh, repeated);
    result.pages += 1;
    run.pages += 1;
    if (run.serverStartedAt === undefined) {
      // The server's clock at the first page, floored to the second (Date has second resolution).
      // Both the cursor and the createdBefore bound use it: no record created after the first
      // page's snapshot can enter the set (it would mask a removal in the total), and the next
      // incremental run, asking from this cursor minus the overlap, picks up every record the
      // bound left out.
      const serverNow = page.serverTime?.getTime() ?? Date.now();
      const floored = Math.floor(serverNow / SECOND_MS) * SECOND_MS;
      run.serverStartedAt = new Date(floored).toISOString();
      run.createdBefore = run.serverStartedAt;
      if (!page.serverTime) this.logger.warn(this.names, 'the server sent no Date header; using the local clock for the cursor');
    }
    run.records += page.items.length;
    result.records += page.items.length;
    run.offset = step.nextOffset;
    run.paging = step.state;
    if (step.stepBack > 0) {
      // Records were removed since the previous page: up to that many unseen records slid below what was read.
      result.driftStepBacks += 1;
      this.logger.info({ ...this.names, offset: page.offset, drop: step.stepBack, gaps: step.state.gaps }, 'the list shrank while paging; the positions records may have slid to are read again');
    }
    // The newest stamp the run listed: its high water at its end (record-clock-lags.ts saveHighWater).
    if (measuresRecordClock(this.stream)) run.newestUpdatedAt = newestStamp(page.items, run.newestUpdatedAt);
    // Our clock shifted to the cursor's: the server's Date minus now (0 when the server sends no Date).
    const offsetMs = page.serverTime ? page.serverTime.getTime() - Date.now() : 0;
    const firstPage = run.pages === 1;
    const mark = this.pageMarks.get(page);
    const clock = await this.writePage(page, listedBefore, (store) => this.observeRecordClock(store, page.items, offsetMs, firstPage, page.serverTime?.getTime() ?? Date.now(), mark));
    if (clock && clock.after > clock.before) {
      this.logger.warn(
        { ...this.names, lagSeconds: clock.after, previousLagSeconds: clock.before },
        "the records' clock lags the cursor's clock: incremental syncs widen their updatedAfter overlap by this much",
      );
    }
    if (page.rejected && page.rejected.length > 0) {
      result.rejected += page.rejected.length;
      if (!this.sink) this.logger.warn(
        { ...this.names, offset: page.offset, rejected: page.rejected.length, first: page.rejected[0]!.error },
        'list items failed their schema: quarantined in rejected_records; the rest of the page committed',
      );
    }
    this.options.onProgress?.({
      ...this.names,
      reason: run.reason,
      mode: run.mode,
      records: run.records,
      changes: run.changes,
      total: page.pagination.total,
      offset: run.offset,
      pages: run.pages,
    });
  }

  /**
   * Measures the lag of the stream's record clock from this page's changed records (and, on a run's
   * first page, from the writes finished since the last success) and records it. Call inside the
   * page's transaction (`store` bound to it), before its records are applied; the caller warns when
   * the lag grew (after the commit: a transaction body awaits only statements). `changelogMark`: the
   * page's (rows written through after it are not compared, `lagsFromPage`).
   * @returns the stream's lag before and after, seconds
   */
  private async observeRecordClock(
    store: MirrorStore,
    records: readonly ApiRecord[],
    offsetMs: number,
    firstPage: boolean,
    pageTimeMs: number,
    changelogMark: number | undefined,
  ): Promise<{ before: number; after: number }> {
    const { stream, partition } = this;
    const recordClock = new RecordClockStore(store.executor);
    // The stream's record clock, or its partition's: its own high water (docs/sync.md "Partitioned streams").
    const key = { stream: stream.name, partition };
    // One read, then a write only when a lag was measured (it returns the lag after it).
    const before = (await recordClock.read(key)).lagSeconds;
    let after = before;
    const fromPage = await lagsFromPage(store.executor, stream, partition, records, offsetMs, changelogMark);
    if (fromPage.length > 0) after = await recordClock.observe(key, fromPage, 'list');
    // The newest stamp listed bounds the lag from above: it decays (record-clock-lags.ts).
    const ceiling = lagCeiling(records, pageTimeMs);
    if (ceiling !== undefined && ceiling < after) after = await recordClock.cap(key, ceiling);
    if (firstPage) {
      const since = (await store.readSyncState(stream.name, partition)).lastSuccessAt ?? new Date(0).toISOString();
      const fromWrites = await lagsFromWrites(store.executor, stream.name, since, offsetMs);
      if (fromWrites.length > 0) after = await recordClock.observe(key, fromWrites, 'write');
    }
    return { before, after };
  }

  /**
   * At the end of a run that moves the cursor (record-clock-lags.ts): the high water of the stream
   * or partition from the run's own pages; an incremental run's window (the earliest of the runs
   * that allowed for this lag is kept: a lag found larger later widens the next run back over all
   * of them); a complete scan clears the window (it listed everything) and the unlisted records the
   * stream's own probe found (it listed them). Call inside the run's last transaction.
   */
  private async keepRecordClock(store: MirrorStore): Promise<void> {
    const { stream, partition, checkpoint: run } = this;
    const key = { stream: stream.name, partition };
    await saveHighWater(store.executor, stream, partition, { at: run.serverStartedAt, newestListed: run.newestUpdatedAt, updatedAfter: run.updatedAfter });
    const recordClock = new RecordClockStore(store.executor);
    const { window, unlisted } = await recordClock.read(key);
    if (run.mode === 'complete') {
      if (window) await recordClock.saveWindow(key, null, 0);
      if (unlisted) await recordClock.noteUnlisted(key, 0);
    } else if (run.updatedAfter !== undefined && run.windowLagSeconds !== undefined && !(window && window.lagSeconds === run.windowLagSeconds)) {
      await recordClock.saveWindow(key, run.updatedAfter, run.windowLagSeconds);
    }
  }

  /** The list answered 404 on the run's first page: the stream is marked unsupported (docs/sync.md "Deals"). */
  private async markUnsupported(notFound: NotFoundError): Promise<void> {
    const { stream, result } = this;
    result.status = 'unsupported';
    // The whole URL: a wrong base URL makes every list answer 404, and the URL shows it.
    const asked = notFound.url ?? stream.request.path;
    result.notFoundUrl = notFound.url;
    await this.environment.fenced(async (store) => {
      // Unsupported is the stream's (its own row), whichever partition found it out.
      await store.updateSyncState(stream.name, {
        supported: 0,
        last_error: `GET ${asked} answered 404: the stream is unsupported by this server (the other lists answered); records arrive from write responses only`,
        last_run_finished_at: new Date().toISOString(),
      });
      await store.saveRun(stream.name, null, this.partition);
    });
    this.logger.warn({ ...this.names, path: stream.request.path }, 'list endpoint not found (404): stream marked unsupported');
  }

  /** A page's ids with their positions in the set (the page's offset plus the index in the answer); quarantined items included (`quarantineKey`). */
  private positionedIds(page: Page<ApiRecord>): PositionedIds {
    if (this.positioned?.page !== page) this.positioned = { page, listed: this.positionIds(page) };
    return this.positioned.listed;
  }

  /** `positionedIds` worked out: two arrays, not an object per id (a backfill lists 100 ids a page). */
  private positionIds(page: Page<ApiRecord>): PositionedIds {
    const { stream } = this;
    const { items, offset } = page;
    const ids: string[] = [];
    const positions: number[] = [];
    if (page.rejected === undefined || page.rejected.length === 0) {
      for (let index = 0; index < items.length; index += 1) {
        ids.push(String(items[index]![stream.key]));
        positions.push(offset + index);
      }
      return { ids, positions };
    }
    const rejected = [...page.rejected].sort((left, right) => left.index - right.index);
    let index = 0;
    let next = 0;
    for (const item of items) {
      while (next < rejected.length && rejected[next]!.index === index) {
        next += 1;
        index += 1;
      }
      ids.push(String(item[stream.key]));
      positions.push(offset + index);
      index += 1;
    }
    // Quarantined items count as listed; one without an id under its quarantine key (its content).
    for (const item of rejected) {
      ids.push(quarantineKey(item.raw, stream.key));
      positions.push(offset + item.index);
    }
    return { ids, positions };
  }

  /**
   * Keeps, in the checkpoint, the quarantine keys of the page's items that carry no string id
   * (`RunCheckpoint.unnamed`): a record the scan listed but cannot name, so the scan cannot show
   * that any unlisted record is gone (docs/sync.md "Leaves and deletes").
   */
  private noteUnnamed(page: Page<ApiRecord>): void {
    const { checkpoint: run, stream } = this;
    for (const item of page.rejected ?? []) {
      if (recordIdOf(item.raw, stream.key) !== null) continue;
      const key = quarantineKey(item.raw, stream.key);
      const kept = run.unnamed ?? [];
      if (!kept.includes(key) && kept.length < UNNAMED_KEPT) run.unnamed = [...kept, key];
    }
  }

  /**
   * For a page that reads positions again (a drift gap, a tie re-read) of a complete scan whose
   * memory is bounded: the ids of `page` the memory no longer holds that this scan listed all the
   * same (their rows carry its scan number: src/mirror/scan-marks.ts; with a sink, the sink says).
   * Empty otherwise.
   */
  private async listedEarlier(page: Page<ApiRecord>): Promise<ReadonlySet<string>> {
    const scanNumber = this.checkpoint.scanNumber;
    if (!this.memory.bounded || (scanNumber === undefined && !this.sink)) return new Set();
    const forgotten = this.positionedIds(page).ids.filter((id) => !this.memory.has(id));
    if (forgotten.length === 0) return new Set();
    if (this.sink) return this.sink.listedEarlier(forgotten);
    if (scanNumber === undefined) return new Set();
    const { store } = this.environment;
    return this.environment.database(() => listedInScan(store.executor, this.stream, scanNumber, forgotten));
  }

  /**
   * Follows the set's size from one answer to the next: a drop means records were removed (their
   * positions close up), a rise that records entered (an incremental run's set grows). Both move
   * positions, so they bound how far a record listed again may have moved (`countIds`), and a
   * removal may take a record the scan listed already (scan-check.ts `listedThenRemoved`: counted
   * apart while paging and after the end, `afterEnd`). Sets `lastTotal` and `lowestTotal`.
   */
  private noteTotal(total: number, afterEnd: boolean): void {
    const { checkpoint: run, memory } = this;
    const previous = run.lastTotal;
    if (previous !== undefined && total < previous) {
      memory.removed += previous - total;
      if (afterEnd) run.removedAfterEnd = (run.removedAfterEnd ?? 0) + previous - total;
      else run.removedWhileReading = (run.removedWhileReading ?? 0) + previous - total;
    }
    if (previous !== undefined && total > previous) memory.added += total - previous;
    run.lastTotal = total;
    run.lowestTotal = Math.min(run.lowestTotal ?? total, total);
  }

  /**
   * Counts a page's ids this run listed before (`repeated`) and the rest (`fresh`), remembering
   * where the fresh ones were. Quarantined items with an id count too: they were listed
   * (docs/sync.md "Invalid records"). An id listed again at a position removals or additions since
   * its first listing explain (within that many places) is drift, not a tie; any other marks a run
   * of ties (scan-check.ts `noteTie`): on a page of first reads (`firstRead`) one of that run's
   * records is still owed, on a re-read nothing more. On a re-read, a record new to the scan outside
   * the page's drift `gap` (where slid records are expected, counted as `slid`) pays a region's debt.
   * `listedEarlier`: ids the memory no longer holds that the mirror says this scan listed (repeats
   * whose first position is forgotten). Also returns `listedBefore`: the page's ids the memory held
   * from earlier pages (before this page was remembered), found by the same lookup per id.
   */
  private countIds(
    page: Page<ApiRecord>,
    read: { firstRead: boolean; gap?: PositionRange; listedEarlier?: ReadonlySet<string> },
  ): { fresh: number; repeated: number; slid: number; listedBefore: ReadonlySet<string> } {
    const { checkpoint: run, memory } = this;
    let fresh = 0;
    let repeated = 0;
    let slid = 0;
    let listedBefore: Set<string> | undefined;
    const inThisAnswer = new Set<string>();
    const { ids, positions } = this.positionedIds(page);
    for (let index = 0; index < ids.length; index += 1) {
      const id = ids[index]!;
      const position = positions[index]!;
      if (inThisAnswer.has(id)) {
        // Twice in one answer: no order changing between requests did that. The server lists this
        // record at two positions (a duplicate), so the total counts one record too many.
        if (!(run.duplicateIds ?? []).includes(id)) run.duplicateIds = [...(run.duplicateIds ?? []), id];
        continue;
      }
      inThisAnswer.add(id);
      const first = memory.get(id);
      if (first === undefined && read.listedEarlier?.has(id)) {
        // Listed by this scan further back than the memory holds: a repeat whose first position is
        // forgotten, so it marks no tie (scan-memory.ts).
        repeated += 1;
        continue;
      }
      if (first === undefined) {
        memory.remember(id, position);
        fresh += 1;
        const inGap = read.gap !== undefined && position >= read.gap.from && position <= read.gap.to;
        if (inGap) slid += 1;
        else if (!read.firstRead) creditFound(run, position);
        continue;
      }
      (listedBefore ??= new Set()).add(id);
      repeated += 1;
      const down = memory.removed - first.removed;
      const up = memory.added - first.added;
      if (position >= first.position - down && position <= first.position + up) continue; // drift, or the same place
      noteTie(run, first.position, position, read.firstRead ? 1 : 0);
    }
    return { fresh, repeated, slid, listedBefore: listedBefore ?? NONE_LISTED };
  }

  /** Distinct ids the run listed: for a complete scan the rows it marked seen (exact across a resume), else the run's tally. */
  async distinctIds(): Promise<number> {
    if (this.sink) return this.sink.distinctIds();
    const { stream, checkpoint: run } = this;
    if (run.mode === 'complete' && run.scanNumber !== undefined) {
      const scanNumber = run.scanNumber;
      const { store } = this.environment;
      return this.environment.database(async () => (await store.countSeenInScan(stream, scanNumber, this.inPartition)) + (await new RejectedRecords(store).countListedOutsideMirror(stream, run.startedAt, this.partition)));
    }
    return run.distinctIds ?? 0;
  }

  /**
   * At the end of the pages: is the scan complete (distinct ids >= the final total)? When it is short
   * and ids came twice, re-reads the tie regions first (src/sync/tie-re-reads.ts).
   */
  private async checkScan(): Promise<ScanOutcome> {
    const { checkpoint: run } = this;
    const total = run.lastTotal ?? 0;
    let reReads = 0;
    let rounds = 0;
    let boundHit = false;
    // Counted once when nothing is re-read (a complete scan's count is a scan of its table).
    let listed = await this.distinctIds();
    if (scanOutcome(run, listed, 0).outcome === 'incomplete' && (run.tieRegions ?? []).length > 0) {
      ({ reads: reReads, rounds, boundHit } = await reReadTies(this, this.environment.tieReReadRounds));
      listed = await this.distinctIds();
    }
    const outcome = scanOutcome(run, listed, reReads);
    if (outcome.missesWithheld === 'unnamed-items') {
      this.logger.warn(
        { ...this.names, unnamed: outcome.unnamed, total: outcome.total, distinctIds: outcome.distinctIds },
        `the scan listed ${outcome.unnamed} item(s) without an id (quarantined): any record it did not list may be one of them, so no record is counted missing (nothing is tombstoned) until a scan names every record it lists`,
      );
    } else if (outcome.missesWithheld === 'over-total') {
      this.logger.warn(
        { ...this.names, total: outcome.total, distinctIds: outcome.distinctIds },
        "the scan listed more distinct records than the list's total and the removals it saw explain: the total is wrong, so no record is counted missing (nothing is tombstoned)",
      );
    }
    if (outcome.outcome === 'incomplete') {
      this.logger.warn(
        { ...this.names, reason: outcome.reason, total: outcome.total, distinctIds: outcome.distinctIds, repeatedIds: outcome.repeatedIds, reReads, rounds },
        boundHit
          ? `incomplete scan: ties came back in another order per request and ${rounds} rounds of re-reads (${reReads} pages, the most one scan may spend) did not find every record; no record is counted missing, the cursor stays, and the next scan tries again`
          : 'incomplete scan: it listed fewer distinct records than the list\'s total; no record is counted missing and the cursor stays',
      );
    } else if (reReads > 0) {
      this.logger.info({ ...this.names, total, repeatedIds: outcome.repeatedIds, reReads, rounds }, 'ties came back in another order per request; re-reading their tie runs completed the scan');
    }
    return outcome;
  }

  /**
   * Reads the page at `offset` again and commits what it lists; ids new to the scan are credited
   * to their tie region, ids listed at another position than before widen the regions.
   * @returns records new to the scan
   */
  async reReadPage(offset: number): Promise<number> {
    const { checkpoint: run, result } = this;
    const page = await this.fetchPage(offset);
    result.pages += 1;
    run.pages += 1;
    this.noteTotal(page.pagination.total, true);
    const { fresh, listedBefore } = this.countIds(page, { firstRead: false, listedEarlier: await this.listedEarlier(page) });
    this.noteUnnamed(page);
    if (measuresRecordClock(this.stream)) run.newestUpdatedAt = newestStamp(page.items, run.newestUpdatedAt);
    run.distinctIds = (run.distinctIds ?? 0) + fresh;
    await this.writePage(page, listedBefore);
    return fresh;
  }

  /**
   * Commits one page in one transaction (`fenced`): confirms and renews the stream's lease, runs
   * `beforeApply` (the record clock's measurement) on the transaction's store, applies the records
   * (mirror rows and their changelog rows), moves invalid items into quarantine and accepted ones
   * out of it, and saves the checkpoint; then hands the appended changes to `onChanges`. Counts them
   * in `result.changes` and the checkpoint's `changes`.
   * @returns what `beforeApply` returned (undefined without one)
   * @throws LeaseLostError when another process took over the stream's lease (ours expired while
   *   waiting): that process now owns the checkpoint, so nothing is written
   */
  private async writePage<T>(page: Page<ApiRecord>, listedBefore: ReadonlySet<string>, beforeApply?: (store: MirrorStore) => Promise<T>): Promise<T | undefined> {
    const { stream, checkpoint: run, result } = this;
    // Taken before the request left: rows written through after it keep their version (docs/sync.md "Write-throughs during a run").
    const mark = this.pageMarks.get(page) ?? run.changelogMark ?? 0;
    if (this.sink) {
      // Not the mirror's: the sink takes the page (verify compares it); nothing is measured or committed here.
      const taken = await this.sink.take(page, listedBefore, mark);
      run.changes += taken;
      result.changes += taken;
      return undefined;
    }
    let measured: T | undefined;
    const changesBefore = run.changes;
    let changes: AppendedChange[];
    let secondVersions: string[] = [];
    let kept: string[] = [];
    const assumeNone = this.pagesNew;
    let asked: StoredStates | undefined;
    try {
      changes = await this.environment.fenced(async (store) => {
        // Asked before the record clock's statements: on PostgreSQL all leave in one write. After a
        // page of new records only, assumed none (PostgreSQL): the table's key refuses the page if it
        // holds one of them, and it is written again below, asking.
        const storedStates = store.askStoredStates(stream, page.items, { assumeNone });
        asked = storedStates;
        measured = await beforeApply?.(store);
        const scanNumber = run.mode === 'complete' ? run.scanNumber : undefined;
        secondVersions = [];
        kept = [];
        const appended = await store.applyRecords(stream, page.items, {
          scanNumber,
          listedBefore: (id) => listedBefore.has(id),
          secondVersions,
          partition: this.inPartition,
          writtenAfter: mark,
          keptWrittenThrough: kept,
          storedStates,
          // Read after the commit only (`changelogMark`, `onChanges`).
          seqsAtCommit: true,
        });
        // Accepted records leave the quarantine; invalid ones enter it (the rest of the page commits).
        // Writes no later statement depends on go with the COMMIT (PostgreSQL: no round trip of their own).
        const rejectedRecords = new RejectedRecords(store);
        const acceptedIds = page.items.map((record) => String(record[stream.key]));
        if (page.rejected && page.rejected.length > 0) {
          // Set before the commit: a page rolled back leaves it true, which only costs a probe's worth.
          this.quarantineMayHold = true;
          await rejectedRecords.release(stream.name, acceptedIds);
          appended.push(...(await rejectedRecords.quarantine(stream, page.rejected, { scanNumber, partition: this.partition })));
        } else {
          this.quarantineMayHold ??= await rejectedRecords.anyQuarantined(stream.name);
          if (this.quarantineMayHold) await rejectedRecords.releaseAtCommit(stream.name, acceptedIds);
        }
        run.changes = changesBefore + appended.length;
        await store.saveRun(stream.name, run, this.partition, { atCommit: true });
        return appended;
      });
    } catch (error) {
      // Rolled back: the checkpoint in memory must not count changes that were not stored.
      run.changes = changesBefore;
      if (assumeNone && heldKeyConflict(error, stream)) {
        // The table holds one of the page's ids: nothing of the page was written; again, asking.
        this.pagesNew = false;
        return this.writePage(page, listedBefore, beforeApply);
      }
      throw error;
    }
    this.pagesNew = await foundNoneStored(asked!);
    result.changes += changes.length;
    // Committed: the changelog held these seqs, so a request sent from now on may carry them as its mark.
    for (const change of changes) if (change.seq > this.changelogMark) this.changelogMark = change.seq;
    if (changes.length > 0) this.environment.onChanges?.(changes);
    if (kept.length > 0) {
      result.keptWrittenThrough = (result.keptWrittenThrough ?? 0) + kept.length;
      this.logger.info(
        { ...this.names, offset: page.offset, ids: kept.slice(0, 10), count: kept.length },
        "records written through from a write's response after this page was requested keep that version (the page's copy may be older); the next run reads them again",
      );
    }
    if (secondVersions.length > 0) {
      this.logger.warn(
        { ...this.names, offset: page.offset, ids: secondVersions.slice(0, 10), count: secondVersions.length },
        'records listed again in this scan with other content: the first version stands (one change per record per scan); the next scan applies the current one',
      );
    }
    return measured;
  }

  /**
   * Commits the end of a run that paged to its end: for a complete scan, misses and tombstones; the
   * cursor; the state. An incomplete scan (docs/sync.md "Scan completeness") counts no miss and
   * keeps the cursor; its scan number is still used up.
   */
  private async finish(scan: ScanOutcome): Promise<void> {
    const { stream, checkpoint: run, result } = this;
    const { massDeletionShare } = this.environment;
    const complete = scan.outcome === 'complete';
    const countsMisses = complete && !scan.missesWithheld && run.mode === 'complete' && run.scanNumber !== undefined;
    // Records created in the frozen set's second, before the first page, are on no page of the scan.
    // Such a record was first seen less than a second before the scan began: created at most a
    // second before the first page's answer (the bound is that answer's time floored to the second),
    // and mirrored after it was created. Only when a row first seen that recently (BOUND_SECOND_RECENT_MS)
    // would be missed is the API asked for the records of that second (outside the transaction); the
    // ones it lists are no misses.
    // The same holds for a quarantined item last listed that recently: it is not released.
    let inBoundSecond = { ids: [] as string[], quarantineKeys: [] as string[] };
    if (countsMisses && !run.createdRange && run.createdBefore !== undefined) {
      const { store } = this.environment;
      const scanNumber = run.scanNumber!;
      const recentlySeen = new Date(Date.parse(run.startedAt) - BOUND_SECOND_RECENT_MS).toISOString();
      const options = { partition: this.inPartition, writtenAfter: run.changelogMark };
      const ask = await this.environment.database(
        async () =>
          (!this.emptyAtStart && (await store.hasUnlisted(stream, scanNumber, run.startedAt, recentlySeen, options))) ||
          (await new RejectedRecords(store).listedBetween(stream.name, recentlySeen, run.startedAt, this.partition)),
      );
      if (ask) inBoundSecond = await this.listedInBoundSecond();
    }
    let held: DeletionHold | null | undefined;
    const tombstones = await this.environment.fenced(async (store) => {
      const appended: AppendedChange[] = [];
      // A scan that proves nothing gone (unnamed items, a total it contradicts) counts no miss and releases no quarantined item.
      if (countsMisses) {
        const scanNumber = run.scanNumber!;
        const now = new Date().toISOString();
        await store.markListedInScan(stream, scanNumber, inBoundSecond.ids);
        let holding: { count: number; live: number } | undefined;
        const missOptions = {
          massDeletion: { share: massDeletionShare, confirmed: this.options.confirmDeletions },
          onHeld: (hold: { count: number; live: number }) => (holding = hold),
          partition: this.inPartition,
          writtenAfter: run.changelogMark,
        };
        if (run.createdRange) {
          // A range backfill: misses and tombstones inside its range only (range-misses.ts), and
          // before the bound its pages asked: a record created in the frozen set's second is no miss.
          appended.push(...(await recordRangeMisses(store, stream, scanNumber, run.startedAt, listedRange(run), now, missOptions)));
        } else if (!this.emptyAtStart) {
          // (Skipped for a scan that began on an empty table: each of its rows was first seen after it began.)
          appended.push(...(await store.recordMisses(stream, scanNumber, run.startedAt, now, missOptions)));
        }
        const previous = (await store.readSyncState(stream.name, this.partition)).deletionHold;
        held = holding ? { ...holding, share: massDeletionShare, scanNumber, since: previous?.since ?? now, at: now } : null;
        if (holding && previous?.count !== holding.count) {
          // Said once per hold (and again when it grows or shrinks), not at every scan that keeps it.
          appended.push(
            await store.appendChange({
              type: MASS_DELETION_HELD,
              stream: stream.name,
              recordId: stream.name,
              occurredAt: now,
              data: { record: { ...this.names, held: holding.count, live: holding.live, share: massDeletionShare, scanNumber }, changes: {} },
              ...(this.partition ? { partition: this.partition } : {}),
            }),
          );
        }
        // A complete scan that did not list a quarantined item: it is no longer served, with an id or without one.
        if (!run.createdRange) {
          const rejectedRecords = new RejectedRecords(store);
          await rejectedRecords.markListed(stream.name, inBoundSecond.quarantineKeys, run.startedAt);
          await rejectedRecords.releaseUnlisted(stream.name, run.startedAt, this.partition);
        }
      }
      const now = new Date().toISOString();
      if (complete && !run.createdRange) await this.keepRecordClock(store);
      await store.updateSyncState(stream.name, {
        // A range backfill listed part of the stream: the cursor stays where the whole stream's runs put it.
        ...(complete && !run.createdRange ? { cursor: run.serverStartedAt ?? null } : {}),
        ...(held !== undefined ? { deletion_hold: held === null ? null : JSON.stringify(held) } : {}),
        last_scan: JSON.stringify(scan),
        supported: 1,
        ...(run.mode === 'complete' && run.scanNumber !== undefined ? { scan_number: run.scanNumber } : {}),
        last_run_finished_at: now,
        last_success_at: now,
        last_error: null,
        last_run_requests: run.pages,
        last_run_records: run.records,
        last_run_changes: run.changes + appended.length,
      }, this.partition);
      await store.saveRun(stream.name, null, this.partition);
      return appended;
    });
    const gone = tombstones.filter((change) => change.type !== MASS_DELETION_HELD);
    result.tombstones = gone.length;
    result.changes += tombstones.length;
    if (held) result.deletionsHeld = held.count;
    if (tombstones.length > 0) this.environment.onChanges?.(tombstones);
    if (held) {
      this.logger.warn(
        { ...this.names, held: held.count, live: held.live, share: held.share },
        `a complete scan would tombstone ${held.count} of ${held.live} live records, more than sync.massDeletionShare (${held.share}): none is tombstoned (a list that stopped serving part of the stream, such as a capped result window, looks like this); if they are really gone, run \`bizops-sync backfill --stream ${stream.name} --confirm-deletions\``,
      );
    }
    this.logger.info(
      { ...this.names, reason: run.reason, mode: run.mode, scan: scan.outcome, pages: result.pages, records: result.records, changes: result.changes, tombstones: result.tombstones },
      'run finished',
    );
  }
}
