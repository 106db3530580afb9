/**
 * The sync engine: runs any stream of src/streams/definitions.ts (backfill, incremental sync,
 * reconciliation) under the sync rules of docs/sync.md. The flow of one page
 * (docs/architecture.md "One API page"):
 *
 *   paginateByOffset (src/client/paginate.ts: next offset, drift step-back, loop guard)
 *     -> client.listPage (hook layers: rate budget, HTTP, retries; then envelope and item validation)
 *     -> store.applyRecords + store.saveRun in ONE SQLite transaction (records, changelog, checkpoint)
 *     -> onChanges (wake the webhook dispatcher) and onProgress (progress bar, logs)
 *
 * How the rules are kept:
 * - Ordering: every page asks `sortBy=createdAt&sortOrder=asc` with `limit=100`. A record's position
 *   then never moves when it is updated, and records created during the scan are appended at the end.
 * - Frozen set: from the second page on, `createdBefore` = the server time of the first page (its
 *   `Date` header, floored to the second), so records created during the scan are not paged at all
 *   (the next incremental run picks them up: its `updatedAfter` is earlier than their creation).
 * - Offset drift: with creations excluded and positions stable under updates, the only thing that
 *   shifts unseen records towards lower offsets is a removal (an onboarding completing, a record
 *   deleted). Each page's `pagination.total` is compared with the previous page's: a drop of `d`
 *   means up to `d` unseen records slid below the offset, so the engine steps back `d` and reads again.
 *   Re-read records hash the same and emit nothing, so a step back costs one request and no event.
 * - Cursor: an incremental run asks `updatedAfter = cursor - overlap`; on success the cursor becomes
 *   the server's `Date` at the run's first page (floored to the second), never a record timestamp
 *   (transaction list items carry none) and never later than the run's start.
 * - Resumable: the checkpoint (offset, filters, totals) commits with each page's records; a restart
 *   resumes from it, re-fetching at most the page that was in flight.
 * - Two-scan rule: only a complete scan that finished without error counts misses; a record missed
 *   by two consecutive complete scans is tombstoned (src/mirror/store.ts `recordMisses`).
 */
import { hostname } from 'node:os';
import type { ApiClient } from '../client/client.ts';
import { NotFoundError } from '../client/errors.ts';
import { paginateByOffset, type PageStep } from '../client/paginate.ts';
import type { Priority } from '../client/rate-budget.ts';
import { silentLogger, type Logger } from '../logging/logger.ts';
import type { AppendedChange, MirrorStore, RunCheckpoint } from '../mirror/store.ts';
import type { ApiRecord } from '../streams/define-stream.ts';
import { readAhead } from './read-ahead.ts';
import { streamByName, type RegisteredStream, type StreamName } from '../streams/definitions.ts';

/** Why a run happens: `backfill` (full refresh), `sync` (incremental), `reconcile` (complete scan to find records gone). */
export type RunReason = 'backfill' | 'sync' | 'reconcile';

/** Progress after each committed page, for progress bars and logs (`RunOptions.onProgress`). */
export interface RunProgress {
  stream: StreamName;
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
  reason: RunReason;
  mode: RunCheckpoint['mode'];
  /**
   * `succeeded`; `unsupported` (the list endpoint answered 404, docs/sync.md "Deals"); `busy` (another
   * process runs this stream); `interrupted` (aborted: the checkpoint stands); `failed` (error: the
   * checkpoint stands, `error` says what and where).
   */
  status: 'succeeded' | 'unsupported' | 'busy' | 'interrupted' | 'failed';
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
  /** Step-backs made because `pagination.total` dropped between pages. */
  driftStepBacks: number;
  error?: Error;
}

/**
 * What a SyncEngine is built from (jobs/context.ts builds it): the API client whose layers pace and
 * retry its list requests, the mirror store it commits pages to, and its run-lock identity.
 */
export interface SyncEngineOptions {
  /** Lists pages; requests go at priority `incremental` (sync) or `backfill` (backfill, reconcile). */
  client: ApiClient;
  /** Where each page's records, changes and checkpoint commit together. */
  store: MirrorStore;
  logger?: Logger;
  /**
   * Seconds subtracted from the cursor for each incremental run (docs/sync.md "Incremental"; config
   * `sync.overlapSeconds`). Default 120. A stream's own `request.lookbackSeconds` wins.
   */
  overlapSeconds?: number;
  /** Called after each commit that appended changes (e.g. to wake the webhook dispatcher). */
  onChanges?: (changes: readonly AppendedChange[]) => void;
  /** Identifies this process in the run lock (default `host:pid`). */
  owner?: string;
  /** How long a run lock lasts without renewal, ms (renewed every page). Default 5 minutes. */
  lockTtlMs?: number;
}

/** Per-run options of `SyncEngine.run`. */
export interface RunOptions {
  /** Aborts the run between or during page requests; the checkpoint stands (status `interrupted`). */
  signal?: AbortSignal;
  /** Called after each page commits. */
  onProgress?: (progress: RunProgress) => void;
}

const SECOND_MS = 1000;

/** True when a process with this pid exists on this host. */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Runs streams into the mirror. One instance can run several streams concurrently (one run per stream). */
export class SyncEngine {
  private readonly client: ApiClient;
  private readonly store: MirrorStore;
  private readonly logger: Logger;
  private readonly overlapMs: number;
  private readonly options: SyncEngineOptions;
  private readonly owner: string;

  constructor(options: SyncEngineOptions) {
    this.options = options;
    this.client = options.client;
    this.store = options.store;
    this.logger = options.logger ?? silentLogger;
    this.overlapMs = (options.overlapSeconds ?? 120) * SECOND_MS;
    this.owner = options.owner ?? `${hostname()}:${process.pid}`;
  }

  /**
   * Runs one stream once.
   * - `backfill` and `reconcile` list the whole stream (a complete scan).
   * - `sync` lists what changed since the cursor; a stream with no cursor yet, or whose strategy is
   *   `complete-scan`, gets a complete scan instead.
   * A checkpoint left by an unfinished run is resumed first (a complete scan is never dropped for an
   * incremental one; a requested complete scan supersedes an unfinished incremental run).
   * Never throws for API or network failures: they come back as `status: 'failed'` with `error`.
   * @throws Error for an unknown stream name
   */
  async run(streamName: StreamName | string, reason: RunReason, options: RunOptions = {}): Promise<RunResult> {
    const stream = streamByName(streamName);
    const state = this.store.readSyncState(stream.name);
    const wantComplete = reason !== 'sync' || stream.request.cursor === 'complete-scan' || state.cursor === null;
    const result: RunResult = {
      stream: stream.name,
      reason,
      mode: wantComplete ? 'complete' : 'incremental',
      status: 'succeeded',
      resumed: false,
      pages: 0,
      records: 0,
      changes: 0,
      tombstones: 0,
      driftStepBacks: 0,
    };
    if (reason === 'sync' && !state.supported) {
      result.status = 'unsupported';
      return result;
    }
    if (!this.acquireLock(stream.name)) {
      result.status = 'busy';
      this.logger.info({ stream: stream.name }, 'another process is running this stream; skipped');
      return result;
    }
    try {
      let run = state.run;
      if (run && (run.mode === 'complete' || !wantComplete)) {
        result.resumed = true;
        this.logger.info({ stream: stream.name, offset: run.offset, reason: run.reason }, 'resuming an unfinished run from its checkpoint');
      } else {
        run = this.newRun(stream, wantComplete ? 'complete' : 'incremental', reason, state.cursor, state.scanNumber);
      }
      result.mode = run.mode;
      // The checkpoint is first saved with the first page: a run that fails before any page leaves
      // nothing to resume.
      this.store.updateSyncState(stream.name, { last_run_started_at: new Date().toISOString(), last_run_mode: `${run.reason}/${run.mode}` });
      await this.page(stream, run, result, options);
      if (result.status === 'succeeded') this.finish(stream, run, result);
    } catch (error) {
      const err = error as Error;
      if (options.signal?.aborted) {
        result.status = 'interrupted';
        this.logger.info({ stream: stream.name }, 'run interrupted; its checkpoint stands and the next run resumes from it');
      } else {
        result.status = 'failed';
        result.error = err;
        this.store.updateSyncState(stream.name, { last_error: err.message, last_run_finished_at: new Date().toISOString() });
        this.logger.error({ stream: stream.name, err: { message: err.message, name: err.name } }, 'run failed; its checkpoint stands');
      }
    } finally {
      this.store.releaseRunLock(stream.name, this.owner);
    }
    return result;
  }

  private newRun(stream: RegisteredStream, mode: RunCheckpoint['mode'], reason: RunReason, cursor: string | null, scanNumber: number): RunCheckpoint {
    const lookbackMs = stream.request.lookbackSeconds === undefined ? this.overlapMs : stream.request.lookbackSeconds * SECOND_MS;
    const run: RunCheckpoint = { mode, reason, startedAt: new Date().toISOString(), offset: 0, pages: 0, records: 0, changes: 0 };
    if (mode === 'incremental' && cursor) run.updatedAfter = new Date(Date.parse(cursor) - lookbackMs).toISOString();
    if (mode === 'complete') run.scanNumber = scanNumber + 1;
    return run;
  }

  /**
   * Takes the stream's run lock. A lock held by a process of this host that no longer exists
   * (killed mid-run) is taken over at once instead of waiting for it to expire.
   */
  private acquireLock(stream: StreamName): boolean {
    if (this.store.acquireRunLock(stream, this.owner, this.lockExpiry())) return true;
    const holder = this.store.runLockHolder(stream);
    if (!holder) return this.store.acquireRunLock(stream, this.owner, this.lockExpiry());
    const [host, pid] = [holder.owner.slice(0, holder.owner.lastIndexOf(':')), Number(holder.owner.slice(holder.owner.lastIndexOf(':') + 1))];
    if (host !== hostname() || !Number.isInteger(pid) || processAlive(pid)) return false;
    this.logger.info({ stream, previousOwner: holder.owner }, 'taking over the run lock of a process that died');
    return this.store.takeOverRunLock(stream, holder.owner, this.owner, this.lockExpiry());
  }

  private lockExpiry(): string {
    return new Date(Date.now() + (this.options.lockTtlMs ?? 5 * 60 * SECOND_MS)).toISOString();
  }

  /** Pages through the stream from the checkpoint until `hasMore` is false, committing each page. */
  private async page(stream: RegisteredStream, run: RunCheckpoint, result: RunResult, options: RunOptions): Promise<void> {
    const { signal } = options;
    const priority: Priority = run.reason === 'sync' ? 'incremental' : 'backfill';
    const request = stream.request;
    // Read when each page is fetched: `createdBefore` is set after the first page.
    const fetchPage = (offset: number) => {
      signal?.throwIfAborted();
      return this.client.listPage<ApiRecord>(request.path, offset, {
        itemsKey: request.itemsKey,
        itemSchema: stream.itemSchema,
        priority,
        signal,
        query: { ...request.filters, sortBy: request.sort.by, sortOrder: request.sort.order, updatedAfter: run.updatedAfter, createdBefore: run.createdBefore },
      });
    };
    const pages = paginateByOffset(fetchPage, { label: `GET ${request.path}`, startOffset: run.offset, previousTotal: run.lastTotal, stepBackOnShrink: true });
    try {
      // The next page is fetched while this one commits (one page ahead, never the first: read-ahead.ts).
      for await (const step of readAhead(pages, { isLast: (step) => step.done })) this.commitPage(stream, run, result, step, options);
    } catch (error) {
      if (error instanceof NotFoundError && request.unsupportedOn404 && run.pages === 0) {
        this.markUnsupported(stream, result);
        return;
      }
      throw error;
    }
  }

  /** One page: the cursor's server time (first page), then records, changelog and checkpoint in one transaction, then notification. */
  private commitPage(stream: RegisteredStream, run: RunCheckpoint, result: RunResult, step: PageStep<ApiRecord>, options: RunOptions): void {
    const { page } = step;
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
      if (!page.serverTime) this.logger.warn({ stream: stream.name }, 'the server sent no Date header; using the local clock for the cursor');
    }
    run.lastTotal = page.pagination.total;
    run.records += page.items.length;
    result.records += page.items.length;
    run.offset = step.nextOffset;
    if (step.stepBack > 0) {
      // Records were removed since the previous page: up to that many unseen records slid below this offset.
      result.driftStepBacks += 1;
      this.logger.info({ stream: stream.name, offset: page.offset, drop: step.stepBack }, 'the list shrank while paging; stepping back to re-read what slid past');
    }
    const changes = this.store.transaction(() => {
      // Renew the run lock with the page; a lock another process took over (ours expired while
      // waiting) means that process now owns the checkpoint: stop without writing.
      if (!this.store.acquireRunLock(stream.name, this.owner, this.lockExpiry())) {
        throw new Error(`${stream.name}: another process took over this stream's run lock; stopping without writing`);
      }
      const appended = this.store.applyRecords(stream, page.items, { scanNumber: run.mode === 'complete' ? run.scanNumber : undefined });
      run.changes += appended.length;
      this.store.saveRun(stream.name, run);
      return appended;
    });
    result.changes += changes.length;
    if (changes.length > 0) this.options.onChanges?.(changes);
    options.onProgress?.({
      stream: stream.name,
      reason: run.reason,
      mode: run.mode,
      records: run.records,
      changes: run.changes,
      total: page.pagination.total,
      offset: run.offset,
      pages: run.pages,
    });
  }

  private markUnsupported(stream: RegisteredStream, result: RunResult): void {
    result.status = 'unsupported';
    this.store.transaction(() => {
      this.store.updateSyncState(stream.name, {
        supported: 0,
        last_error: `${stream.request.path} answered 404: the stream is unsupported by this server; records arrive from write responses only`,
        last_run_finished_at: new Date().toISOString(),
      });
      this.store.saveRun(stream.name, null);
    });
    this.logger.warn({ stream: stream.name, path: stream.request.path }, 'list endpoint not found (404): stream marked unsupported');
  }

  /** Commits the end of a successful run: misses and tombstones (complete scans), the cursor, the state. */
  private finish(stream: RegisteredStream, run: RunCheckpoint, result: RunResult): void {
    const tombstones = this.store.transaction(() => {
      const appended = run.mode === 'complete' && run.scanNumber !== undefined ? this.store.recordMisses(stream, run.scanNumber, run.startedAt) : [];
      const now = new Date().toISOString();
      this.store.updateSyncState(stream.name, {
        cursor: run.serverStartedAt ?? null,
        supported: 1,
        ...(run.mode === 'complete' && run.scanNumber !== undefined ? { scan_number: run.scanNumber } : {}),
        last_run_finished_at: now,
        last_success_at: now,
        last_error: null,
        last_run_requests: run.pages,
        last_run_records: run.records,
        last_run_changes: run.changes + appended.length,
      });
      this.store.saveRun(stream.name, null);
      return appended;
    });
    result.tombstones = tombstones.length;
    result.changes += tombstones.length;
    if (tombstones.length > 0) this.options.onChanges?.(tombstones);
    this.logger.info(
      { stream: stream.name, reason: run.reason, mode: run.mode, pages: result.pages, records: result.records, changes: result.changes, tombstones: result.tombstones },
      'run finished',
    );
  }
}
