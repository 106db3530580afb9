/**
 * The sync engine: runs any stream of src/streams/definitions.ts (backfill, incremental sync,
 * reconciliation) under the sync rules of docs/sync.md. The flow of one page
 * (docs/architecture.md "One API page"):
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
 */
import type { ApiClient } from '../client/client.ts';
import { NotFoundError } from '../client/api-errors.ts';
import { LIST_PAGE_LIMIT, paginateByOffset, type Page, type PageStep, type PositionRange } from '../client/paginate.ts';
import type { Priority } from '../client/rate-budget.ts';
import { silentLogger, type Logger } from '../logging/logger.ts';
import { confirmLease, DEFAULT_LEASE_SECONDS, LeaseLostError, Leases, noteLeaseConfirmed, PROCESS_LEASE_HOLDER, streamLeaseName, type HeldLease } from '../mirror/leases.ts';
import { whileDatabaseAway } from '../mirror/sql/wait-for-database.ts';
import { RecordClockStore } from '../mirror/record-clock-store.ts';
import { quarantineKey, RejectedRecords } from '../mirror/rejected-records.ts';
import type { AppendedChange, DeletionHold, MirrorStore, RunCheckpoint, ScanOutcome, SyncState } from '../mirror/mirror-store.ts';
import type { ApiRecord } from '../streams/define-stream.ts';
import { assertBaseUrlServes, WrongBaseUrlError } from './base-url-check.ts';
import { readAhead } from './read-ahead.ts';
import { STREAM_LIST, streamByName, type RegisteredStream, type StreamName } from '../streams/definitions.ts';
import { lagsFromPage, lagsFromWrites } from './record-clock-lags.ts';
import { creditFound, noteTie, regionAt, regionPages, requiredIds, scanOutcome, tallyPage } from './scan-check.ts';

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
  /** Tombstones held back as a mass deletion (docs/sync.md "Mass deletions held"); absent when none. */
  deletionsHeld?: number;
  /** Items quarantined because they failed their schema (docs/sync.md "Invalid records"); the rest of their page committed. */
  rejected: number;
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
  /**
   * Who holds the stream leases this engine takes (src/mirror/leases.ts). Default: this process
   * (`PROCESS_LEASE_HOLDER`), the holder the daemon's lease keeper uses too, so a run inside a daemon
   * holding the stream's lease renews that lease instead of being refused.
   */
  leaseHolder?: string;
  /**
   * How long a stream lease lasts without renewal, seconds (config `sync.leaseSeconds`; renewed by
   * every page commit, and by a timer every third of it while a page is in flight). Default 30.
   */
  leaseSeconds?: number;
  /**
   * An `unsupported` stream is probed again by a sync at most this often, seconds (config
   * `sync.unsupportedProbeSeconds`). Default 3600; 0 probes on every sync.
   */
  unsupportedProbeSeconds?: number;
  /**
   * The first sync of each `unsupported` stream by this engine asks its list whatever its last probe
   * (the daemon: an unsupported stream is asked again at every start). Default false: the CLI's
   * `sync` keeps to `unsupportedProbeSeconds`.
   */
  probeUnsupportedAtStart?: boolean;
  /**
   * Most rounds of tie re-reads at the end of one scan (docs/sync.md "Ties"): each round reads each
   * tie region still owing records once, so no region is read in more rounds than this. A scan still
   * short after them ends incomplete (a warning naming the bound). Default 20; an integer >= 1.
   */
  tieReReadRounds?: number;
  /**
   * How long a run waits for the mirror's database when it is away (a PostgreSQL restart or
   * failover, sessions ended by an administrator), seconds (config `sync.databaseWaitSeconds`): each
   * step that failed with `DatabaseUnavailableError` (taking the lease, a page's commit, the end of
   * the run) is tried again until the database answers, then the run goes on from its checkpoint; a
   * step still failing after this long fails the run (its checkpoint stands). Default 60; 0 does
   * not wait. docs/sync.md "When the database goes away".
   */
  databaseWaitSeconds?: number;
  /**
   * A complete scan that would tombstone more than this share of a stream's live records (and more
   * than `MASS_DELETION_FLOOR`) tombstones none and holds them (config `sync.massDeletionShare`;
   * docs/sync.md "Mass deletions held"). Default 0.1; 1 never holds.
   */
  massDeletionShare?: number;
}

/** The change type a complete scan appends when it holds back a mass deletion (docs/sync.md "Mass deletions held"). */
export const MASS_DELETION_HELD = 'stream.mass_deletion_held';

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
}

const SECOND_MS = 1000;

/** Default of `SyncEngineOptions.databaseWaitSeconds` (config `sync.databaseWaitSeconds`). */
export const DEFAULT_DATABASE_WAIT_SECONDS = 60;

/** Default of `SyncEngineOptions.massDeletionShare` (config `sync.massDeletionShare`). */
export const DEFAULT_MASS_DELETION_SHARE = 0.1;

/** Default of `SyncEngineOptions.tieReReadRounds`. */
const TIE_REREAD_ROUNDS = 20;

/** Where an id was first listed: its position, and how many records had been removed and added by then. */
interface FirstListed {
  position: number;
  removed: number;
  added: number;
}

/** What one run keeps in memory besides its checkpoint: the ids it listed, where, and how far positions may have moved since. */
interface RunMemory {
  /**
   * Ids listed by this process's part of the run (a resumed run starts empty), each with the
   * position (offset in the set) it was first listed at.
   */
  positions: Map<string, FirstListed>;
  /** Records removed from the set since this process's part of the run began (drops of `pagination.total`). */
  removed: number;
  /** Records added to the set meanwhile (rises of `pagination.total`: an incremental run's set grows). */
  added: number;
}

/** Runs streams into the mirror. One instance can run several streams concurrently (one run per stream). */
export class SyncEngine {
  private readonly client: ApiClient;
  private readonly store: MirrorStore;
  private readonly logger: Logger;
  private readonly overlapMs: number;
  private readonly options: SyncEngineOptions;
  private readonly leaseHolder: string;
  private readonly leases: Leases;
  /** The lease of each stream this engine is running now (null while it is being taken): one run per stream per engine. */
  private readonly running = new Map<StreamName, HeldLease | null>();
  /** The abort signal of each stream's run in progress (waits for the database end with it). */
  private readonly signals = new Map<StreamName, AbortSignal | undefined>();
  private readonly rejectedRecords: RejectedRecords;
  private readonly tieReReadRounds: number;
  private readonly databaseWaitMs: number;
  private readonly massDeletionShare: number;
  /** Streams this engine ran (or tried to) since it was built: `probeUnsupportedAtStart` asks the others once. */
  private readonly askedSinceStart = new Set<StreamName>();

  /** @throws RangeError when `tieReReadRounds` is not an integer >= 1 */
  constructor(options: SyncEngineOptions) {
    const rounds = options.tieReReadRounds ?? TIE_REREAD_ROUNDS;
    if (!Number.isInteger(rounds) || rounds < 1) throw new RangeError(`tieReReadRounds must be an integer >= 1, got ${String(options.tieReReadRounds)}`);
    this.tieReReadRounds = rounds;
    this.options = options;
    this.client = options.client;
    this.store = options.store;
    this.rejectedRecords = new RejectedRecords(options.store);
    this.logger = options.logger ?? silentLogger;
    this.overlapMs = (options.overlapSeconds ?? 120) * SECOND_MS;
    this.leaseHolder = options.leaseHolder ?? PROCESS_LEASE_HOLDER;
    this.leases = new Leases(options.store.executor, options.leaseSeconds ?? DEFAULT_LEASE_SECONDS);
    this.databaseWaitMs = (options.databaseWaitSeconds ?? DEFAULT_DATABASE_WAIT_SECONDS) * SECOND_MS;
    this.massDeletionShare = options.massDeletionShare ?? DEFAULT_MASS_DELETION_SHARE;
  }

  /**
   * Runs `step` (statements on the mirror, or a transaction), trying it again while the database is
   * away, for at most `databaseWaitSeconds` (src/mirror/sql/wait-for-database.ts). Only for steps
   * that may run twice: a transaction cut off at its COMMIT may have committed.
   * @throws the last DatabaseUnavailableError after the wait; any other error of `step` at once
   */
  private database<T>(stream: StreamName, step: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    let warned = false;
    return whileDatabaseAway(step, {
      waitMs: this.databaseWaitMs,
      signal,
      onWait: (error) => {
        if (warned) return;
        warned = true;
        this.logger.warn(
          { stream, err: { message: error.message }, waitSeconds: this.databaseWaitMs / SECOND_MS },
          "the mirror's database is unavailable; waiting for it, then the run goes on from its checkpoint",
        );
      },
    });
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
    let seen: SyncState;
    try {
      seen = await this.database(stream.name, () => this.store.readSyncState(stream.name), options.signal);
    } catch (error) {
      return this.failedBeforeStart(stream, reason, error as Error);
    }
    let wantComplete = reason !== 'sync' || stream.request.cursor === 'complete-scan' || seen.cursor === null;
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
      rejected: 0,
      driftStepBacks: 0,
    };
    if (reason === 'sync' && !seen.supported && !this.probeDue(stream.name, seen.lastRunStartedAt)) {
      // Probed recently (the last run's start is the last probe): skip until the next probe is due.
      result.status = 'unsupported';
      return result;
    }
    this.askedSinceStart.add(stream.name);
    let acquired: Awaited<ReturnType<Leases['acquire']>>;
    if (!this.running.has(stream.name)) {
      this.running.set(stream.name, null); // claimed before the first await: a second run of it here is busy
      try {
        acquired = await this.database(stream.name, () => this.leases.acquire(streamLeaseName(stream.name), this.leaseHolder), options.signal);
      } catch (error) {
        return this.failedBeforeStart(stream, reason, error as Error);
      } finally {
        if (!acquired) this.running.delete(stream.name);
      }
    }
    if (!acquired) {
      result.status = 'busy';
      const held = await this.leases.state(streamLeaseName(stream.name)).catch(() => undefined);
      result.heldBy = { holder: held?.holder ?? null, expiresAt: held?.expiresAt ?? null };
      this.logger.info({ stream: stream.name, ...result.heldBy }, 'another process (or run) holds this stream\'s lease; skipped');
      return result;
    }
    if (acquired.previousHolder !== undefined) {
      this.logger.info({ stream: stream.name, previousHolder: acquired.previousHolder, fence: acquired.lease.fence }, 'took over the stream\'s lease: its holder stopped renewing it');
    }
    this.running.set(stream.name, acquired.lease);
    this.signals.set(stream.name, options.signal);
    const renewal = this.keepLeaseWhileRunning(stream.name, acquired.lease);
    try {
      // Read again under the lease: the previous holder may have committed more since (a replica
      // taking over a dead daemon's stream resumes from its last committed checkpoint).
      const state = await this.database(stream.name, () => this.store.readSyncState(stream.name), options.signal);
      wantComplete = reason !== 'sync' || stream.request.cursor === 'complete-scan' || state.cursor === null;
      result.mode = wantComplete ? 'complete' : 'incremental';
      let run = state.run;
      if (run && (run.mode === 'complete' || !wantComplete)) {
        result.resumed = true;
        this.logger.info({ stream: stream.name, offset: run.offset, reason: run.reason }, 'resuming an unfinished run from its checkpoint');
      } else {
        const mode = wantComplete ? 'complete' : 'incremental';
        run = await this.database(stream.name, () => this.newRun(stream, mode, reason, state.cursor, state.scanNumber), options.signal);
      }
      result.mode = run.mode;
      // The checkpoint is first saved with the first page: a run that fails before any page leaves
      // nothing to resume.
      await this.fenced(stream.name, (store) => store.updateSyncState(stream.name, { last_run_started_at: new Date().toISOString(), last_run_mode: `${run.reason}/${run.mode}` }));
      const memory: RunMemory = { positions: new Map(), removed: 0, added: 0 };
      await this.page(stream, run, result, memory, options);
      if (result.status === 'succeeded') {
        result.scan = await this.checkScan(stream, run, result, memory, options);
        await this.finish(stream, run, result, result.scan, options);
      }
    } catch (error) {
      const err = error as Error;
      if (options.signal?.aborted) {
        result.status = 'interrupted';
        this.logger.info({ stream: stream.name }, 'run interrupted; its checkpoint stands and the next run resumes from it');
      } else if (err instanceof LeaseLostError) {
        // The stream's state is the new holder's now: nothing of this run is written.
        result.status = 'failed';
        result.error = err;
        this.logger.warn({ stream: stream.name, fence: err.lease.fence }, err.message);
      } else if (err instanceof WrongBaseUrlError) {
        // A configuration error, not the stream's: nothing is written, and the caller reports it (one line).
        result.status = 'failed';
        result.error = err;
        this.logger.debug({ stream: stream.name, url: err.url }, err.message);
      } else {
        result.status = 'failed';
        result.error = err;
        // Best effort: the database may be what failed.
        await this.store.updateSyncState(stream.name, { last_error: err.message, last_run_finished_at: new Date().toISOString() }).catch(() => undefined);
        this.logger.error({ stream: stream.name, err }, 'run failed; its checkpoint stands');
      }
    } finally {
      clearInterval(renewal);
      this.running.delete(stream.name);
      this.signals.delete(stream.name);
      // A lease this run took is given back; one the process held before (a daemon's) stays held.
      if (acquired.taken) {
        await this.leases.release(acquired.lease).catch((error: unknown) => {
          this.logger.warn({ stream: stream.name, err: { message: (error as Error).message } }, 'could not release the stream\'s lease; it lapses on its own');
        });
      }
    }
    return result;
  }

  /**
   * Runs `fn` in one transaction that first confirms the stream's lease (its fence still current,
   * src/mirror/leases.ts `confirmLease`, renewing it): a run whose lease another process took over
   * writes nothing.
   * @throws LeaseLostError naming the stream when the fence is no longer current (rolled back)
   */
  private fenced<T>(stream: StreamName, fn: (store: MirrorStore) => Promise<T>): Promise<T> {
    const lease = this.running.get(stream);
    if (!lease) return Promise.reject(new Error(`${stream}: no lease held for this run`));
    return this.database(
      stream,
      async () => {
        const sentAt = performance.now();
        const result = await this.store.transaction(async (store) => {
          try {
            await confirmLease(store.executor, lease, this.leases.seconds);
          } catch (error) {
            if (error instanceof LeaseLostError) {
              throw new LeaseLostError(lease, `${stream}: another process took over this stream's lease (fence ${lease.fence} is no longer current); stopping without writing`);
            }
            throw error;
          }
          return fn(store);
        });
        // Committed: the renewal inside it counts (leases.ts `leaseTimeLeftMs`).
        noteLeaseConfirmed(lease, sentAt, this.leases.seconds);
        return result;
      },
      this.signals.get(stream),
    );
  }

  /**
   * Makes sure the run still holds its stream's lease right before one of its requests leaves (a
   * `beforeRequest` hook, after the rate budget's wait): with less than a third of the lease left by
   * this process's clock (a paused process, a renewal timer that fell behind), renews it first.
   * @throws LeaseLostError when another process took the stream over: the request is not sent
   */
  private async leaseBeforeRequest(stream: StreamName): Promise<void> {
    const lease = this.running.get(stream);
    if (!lease) throw new Error(`${stream}: no lease held for this run`);
    try {
      await this.database(stream, () => this.leases.ensureHeld(lease), this.signals.get(stream));
    } catch (error) {
      if (error instanceof LeaseLostError) {
        throw new LeaseLostError(lease, `${stream}: another process took over this stream's lease (fence ${lease.fence} is no longer current); no request is sent`);
      }
      throw error;
    }
  }

  /** The result of a run that failed before it took its lease (the database stayed away): nothing was written. */
  private failedBeforeStart(stream: RegisteredStream, reason: RunReason, error: Error): RunResult {
    this.logger.error({ stream: stream.name, err: error }, 'run failed before it started; nothing was written');
    return {
      stream: stream.name,
      reason,
      mode: 'incremental',
      status: 'failed',
      resumed: false,
      pages: 0,
      records: 0,
      changes: 0,
      tombstones: 0,
      rejected: 0,
      driftStepBacks: 0,
      error,
    };
  }

  /**
   * Renews the stream's lease every third of its length while the run lasts, so it never lapses
   * while a page is in flight (a slow or trickled page, a long wait for a rate-budget slot): another
   * process can take it over only when its holder stopped renewing it (died, or hung past the
   * lease). A renewal that finds the lease taken over changes nothing; the next page's commit then
   * stops the run (its fence is no longer current).
   * @returns the timer, for `clearInterval`
   */
  private keepLeaseWhileRunning(stream: StreamName, lease: HeldLease): NodeJS.Timeout {
    const everyMs = Math.max(10, Math.floor((this.leases.seconds * SECOND_MS) / 3));
    const timer = setInterval(() => {
      this.leases.renew(lease).catch((error: unknown) => {
        if (error instanceof LeaseLostError) this.logger.warn({ stream, fence: lease.fence }, 'another process took over this stream\'s lease; this run stops at its next page');
        // A busy or closed database: the next renewal, or the page's commit, tries again.
        else this.logger.warn({ stream, err: { message: (error as Error).message } }, 'could not renew the stream\'s lease');
      });
    }, everyMs);
    timer.unref();
    return timer;
  }

  /**
   * True when an `unsupported` stream's list should be asked again: its last probe (the start of its
   * last run) is at least `unsupportedProbeSeconds` old, or unknown, or (`probeUnsupportedAtStart`)
   * this engine has not asked it yet.
   */
  private probeDue(stream: StreamName, lastProbeAt: string | null): boolean {
    if (lastProbeAt === null) return true;
    if (this.options.probeUnsupportedAtStart && !this.askedSinceStart.has(stream)) return true;
    const intervalMs = (this.options.unsupportedProbeSeconds ?? 3600) * SECOND_MS;
    return Date.now() - Date.parse(lastProbeAt) >= intervalMs;
  }

  private async newRun(stream: RegisteredStream, mode: RunCheckpoint['mode'], reason: RunReason, cursor: string | null, scanNumber: number): Promise<RunCheckpoint> {
    const lookbackMs = stream.request.lookbackSeconds === undefined ? this.overlapMs : stream.request.lookbackSeconds * SECOND_MS;
    const run: RunCheckpoint = { mode, reason, startedAt: new Date().toISOString(), offset: 0, pages: 0, records: 0, changes: 0 };
    if (mode === 'incremental' && cursor) {
      // The overlap is widened by how far the server's record clock was seen to lag the cursor's, on
      // any stream (docs/sync.md "Record clock"): a change made just after the last run carries an
      // updatedAt that much older than the moment it was made.
      const lagMs = Math.ceil(await new RecordClockStore(this.store.executor).largest()) * SECOND_MS;
      run.updatedAfter = new Date(Date.parse(cursor) - lookbackMs - lagMs).toISOString();
    }
    if (mode === 'complete') run.scanNumber = scanNumber + 1;
    return run;
  }

  /** Fetches (and validates) the run's page at `offset`; `createdBefore` is read at each call (set after the first page). */
  private fetchPage(stream: RegisteredStream, run: RunCheckpoint, offset: number, signal: AbortSignal | undefined): Promise<Page<ApiRecord>> {
    signal?.throwIfAborted();
    const request = stream.request;
    const priority: Priority = run.reason === 'sync' ? 'incremental' : 'backfill';
    return this.client.listPage<ApiRecord>(request.path, offset, {
      itemsKey: request.itemsKey,
      itemSchema: stream.itemSchema,
      priority,
      signal,
      invalidItems: 'collect',
      hooks: { beforeRequest: () => this.leaseBeforeRequest(stream.name) },
      query: { ...request.filters, sortBy: request.sort.by, sortOrder: request.sort.order, updatedAfter: run.updatedAfter, createdBefore: run.createdBefore },
    });
  }

  /** Pages through the stream from the checkpoint until `hasMore` is false, committing each page. */
  private async page(stream: RegisteredStream, run: RunCheckpoint, result: RunResult, memory: RunMemory, options: RunOptions): Promise<void> {
    const request = stream.request;
    const pages = paginateByOffset((offset) => this.fetchPage(stream, run, offset, options.signal), {
      label: `GET ${request.path}`,
      startOffset: run.offset,
      ...(run.paging ? { resume: run.paging } : {}),
      previousTotal: run.lastTotal,
      stepBackOnShrink: true,
      idOf: (item) => String(item[stream.key]),
    });
    try {
      // The next page is fetched while this one commits (one page ahead, never the first: read-ahead.ts).
      for await (const step of readAhead(pages, { isLast: (step) => step.done })) await this.commitPage(stream, run, result, step, memory, options);
    } catch (error) {
      if (error instanceof NotFoundError && run.pages === 0) {
        // Every list answering 404 is a wrong base URL (base-url-check.ts): throws, nothing marked.
        await assertBaseUrlServes(this.client, error, { streams: STREAM_LIST, priority: run.reason === 'sync' ? 'incremental' : 'backfill', signal: options.signal });
        if (request.unsupportedOn404) {
          await this.markUnsupported(stream, result, error);
          return;
        }
      }
      throw error;
    }
  }

  /** One page: the cursor's server time (first page), then records, changelog and checkpoint in one transaction, then notification. */
  private async commitPage(stream: RegisteredStream, run: RunCheckpoint, result: RunResult, step: PageStep<ApiRecord>, memory: RunMemory, options: RunOptions): Promise<void> {
    const { page } = step;
    this.noteTotal(run, memory, page.pagination.total, step.kind === 'gap');
    const listedBefore = this.listedBefore(stream, memory, page);
    // A frontier page reads positions for the first time; a gap page re-reads some (offset drift).
    const { fresh, repeated, slid } = this.countIds(stream, run, memory, page, step.kind === 'frontier' ? { firstRead: true } : { firstRead: false, gap: step.gap });
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
      if (!page.serverTime) this.logger.warn({ stream: stream.name }, 'the server sent no Date header; using the local clock for the cursor');
    }
    run.records += page.items.length;
    result.records += page.items.length;
    run.offset = step.nextOffset;
    run.paging = step.state;
    if (step.stepBack > 0) {
      // Records were removed since the previous page: up to that many unseen records slid below what was read.
      result.driftStepBacks += 1;
      this.logger.info({ stream: stream.name, offset: page.offset, drop: step.stepBack, gaps: step.state.gaps }, 'the list shrank while paging; the positions records may have slid to are read again');
    }
    // Our clock shifted to the cursor's: the server's Date minus now (0 when the server sends no Date).
    const offsetMs = page.serverTime ? page.serverTime.getTime() - Date.now() : 0;
    const firstPage = run.pages === 1;
    const clock = await this.writePage(stream, run, page, result, listedBefore, (store) => this.observeRecordClock(store, stream, page.items, offsetMs, firstPage));
    if (clock && clock.after > clock.before) {
      this.logger.warn(
        { stream: stream.name, lagSeconds: clock.after, previousLagSeconds: clock.before },
        "the records' clock lags the cursor's clock: incremental syncs widen their updatedAfter overlap by this much",
      );
    }
    if (page.rejected && page.rejected.length > 0) {
      result.rejected += page.rejected.length;
      this.logger.warn(
        { stream: stream.name, offset: page.offset, rejected: page.rejected.length, first: page.rejected[0]!.error },
        'list items failed their schema: quarantined in rejected_records; the rest of the page committed',
      );
    }
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

  /**
   * Measures the lag of the stream's record clock from this page's changed records (and, on a run's
   * first page, from the writes finished since the last success) and records it. Call inside the
   * page's transaction (`store` bound to it), before its records are applied; the caller warns when
   * the lag grew (after the commit: a transaction body awaits only statements).
   * @returns the stream's lag before and after, seconds
   */
  private async observeRecordClock(store: MirrorStore, stream: RegisteredStream, records: readonly ApiRecord[], offsetMs: number, firstPage: boolean): Promise<{ before: number; after: number }> {
    const recordClock = new RecordClockStore(store.executor);
    // One read, then a write only when a lag was measured (it returns the lag after it).
    const before = (await recordClock.read(stream.name)).lagSeconds;
    let after = before;
    const fromPage = await lagsFromPage(store.executor, stream, records, offsetMs);
    if (fromPage.length > 0) after = await recordClock.observe(stream.name, fromPage, 'list');
    if (firstPage) {
      const since = (await store.readSyncState(stream.name)).lastSuccessAt ?? new Date(0).toISOString();
      const fromWrites = await lagsFromWrites(store.executor, stream.name, since, offsetMs);
      if (fromWrites.length > 0) after = await recordClock.observe(stream.name, fromWrites, 'write');
    }
    return { before, after };
  }

  private async markUnsupported(stream: RegisteredStream, result: RunResult, notFound: NotFoundError): Promise<void> {
    result.status = 'unsupported';
    // The whole URL: a wrong base URL makes every list answer 404, and the URL shows it.
    const asked = notFound.url ?? stream.request.path;
    result.notFoundUrl = notFound.url;
    await this.fenced(stream.name, async (store) => {
      await store.updateSyncState(stream.name, {
        supported: 0,
        last_error: `GET ${asked} answered 404: the stream is unsupported by this server (or BIZOPS_BASE_URL is not the API's base URL); records arrive from write responses only`,
        last_run_finished_at: new Date().toISOString(),
      });
      await store.saveRun(stream.name, null);
    });
    this.logger.warn({ stream: stream.name, path: stream.request.path }, 'list endpoint not found (404): stream marked unsupported');
  }

  /** A page's ids with their positions in the set (the page's offset plus the index in the answer); quarantined items included (`quarantineKey`). */
  private positionedIds(stream: RegisteredStream, page: Page<ApiRecord>): { id: string; position: number }[] {
    const rejected = [...(page.rejected ?? [])].sort((left, right) => left.index - right.index);
    const out: { id: string; position: number }[] = [];
    let index = 0;
    let next = 0;
    for (const item of page.items) {
      while (next < rejected.length && rejected[next]!.index === index) {
        next += 1;
        index += 1;
      }
      out.push({ id: String(item[stream.key]), position: page.offset + index });
      index += 1;
    }
    // Quarantined items count as listed; one without an id under its quarantine key (its content).
    for (const item of rejected) out.push({ id: quarantineKey(item.raw, stream.key), position: page.offset + item.index });
    return out;
  }

  /** The ids of `page` this process's part of the run listed on an earlier page (before `countIds` remembers the page). */
  private listedBefore(stream: RegisteredStream, memory: RunMemory, page: Page<ApiRecord>): Set<string> {
    return new Set(this.positionedIds(stream, page).filter(({ id }) => memory.positions.has(id)).map(({ id }) => id));
  }

  /**
   * Follows the set's size from one answer to the next: a drop means records were removed (their
   * positions close up), a rise that records entered (an incremental run's set grows). Both move
   * positions, so they bound how far a record listed again may have moved (`countIds`), and a
   * removal may take a record the scan listed already (scan-check.ts `listedThenRemoved`: counted
   * apart while paging and after the end, `afterEnd`). Sets `lastTotal` and `lowestTotal`.
   */
  private noteTotal(run: RunCheckpoint, memory: RunMemory, total: number, afterEnd: boolean): void {
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
   */
  private countIds(stream: RegisteredStream, run: RunCheckpoint, memory: RunMemory, page: Page<ApiRecord>, read: { firstRead: boolean; gap?: PositionRange }): { fresh: number; repeated: number; slid: number } {
    let fresh = 0;
    let repeated = 0;
    let slid = 0;
    const inThisAnswer = new Set<string>();
    for (const { id, position } of this.positionedIds(stream, page)) {
      if (inThisAnswer.has(id)) {
        // Twice in one answer: no order changing between requests did that. The server lists this
        // record at two positions (a duplicate), so the total counts one record too many.
        if (!(run.duplicateIds ?? []).includes(id)) run.duplicateIds = [...(run.duplicateIds ?? []), id];
        continue;
      }
      inThisAnswer.add(id);
      const first = memory.positions.get(id);
      if (first === undefined) {
        memory.positions.set(id, { position, removed: memory.removed, added: memory.added });
        fresh += 1;
        const inGap = read.gap !== undefined && position >= read.gap.from && position <= read.gap.to;
        if (inGap) slid += 1;
        else if (!read.firstRead) creditFound(run, position);
        continue;
      }
      repeated += 1;
      const down = memory.removed - first.removed;
      const up = memory.added - first.added;
      if (position >= first.position - down && position <= first.position + up) continue; // drift, or the same place
      noteTie(run, first.position, position, read.firstRead ? 1 : 0);
    }
    return { fresh, repeated, slid };
  }

  /** Distinct ids the run listed: for a complete scan the rows it marked seen (exact across a resume), else the run's tally. */
  private async distinctIds(stream: RegisteredStream, run: RunCheckpoint): Promise<number> {
    if (run.mode === 'complete' && run.scanNumber !== undefined) {
      const scanNumber = run.scanNumber;
      return this.database(stream.name, async () => (await this.store.countSeenInScan(stream, scanNumber)) + (await this.rejectedRecords.countListedOutsideMirror(stream, run.startedAt)), this.signals.get(stream.name));
    }
    return run.distinctIds ?? 0;
  }

  /**
   * At the end of the pages: is the scan complete (distinct ids >= the final total)? When it is short
   * and ids came twice, re-reads the tie regions first (`reReadTies`).
   */
  private async checkScan(stream: RegisteredStream, run: RunCheckpoint, result: RunResult, memory: RunMemory, options: RunOptions): Promise<ScanOutcome> {
    const total = run.lastTotal ?? 0;
    let reReads = 0;
    let rounds = 0;
    let boundHit = false;
    if (scanOutcome(run, await this.distinctIds(stream, run), 0).outcome === 'incomplete' && (run.tieRegions ?? []).length > 0) {
      ({ reads: reReads, rounds, boundHit } = await this.reReadTies(stream, run, result, memory, options));
    }
    const outcome = scanOutcome(run, await this.distinctIds(stream, run), reReads);
    if (outcome.outcome === 'incomplete') {
      this.logger.warn(
        { stream: stream.name, reason: outcome.reason, total: outcome.total, distinctIds: outcome.distinctIds, repeatedIds: outcome.repeatedIds, reReads, rounds },
        boundHit
          ? `incomplete scan: ties came back in another order per request and ${rounds} rounds of re-reads (${reReads} pages, the most one scan may spend) did not find every record; no record is counted missing, the cursor stays, and the next scan tries again`
          : 'incomplete scan: it listed fewer distinct records than the list\'s total; no record is counted missing and the cursor stays',
      );
    } else if (reReads > 0) {
      this.logger.info({ stream: stream.name, total, repeatedIds: outcome.repeatedIds, reReads, rounds }, 'ties came back in another order per request; re-reading their tie runs completed the scan');
    }
    return outcome;
  }

  /**
   * Re-reads the tie regions (scan-check.ts `TieRegion`) until the scan has listed as many distinct
   * ids as it must. Each round reads the regions still owing records, each with the pages centred
   * on it (`regionPages`): a run of up to a page arrives whole in one answer whatever its order; a
   * longer one arrives a page-sized random part at a time, so later rounds read it again until its
   * debt is paid. Records new to the scan are credited to their region; ids listed at a new
   * position widen and merge regions. When no region owes anything but the scan is still short (a
   * record credited to a neighbouring run), or a round found nothing, the next one also reads the
   * owing regions' neighbours; after another empty round, every region (a sweep). An empty sweep
   * ends the re-reads, unless a region is longer than a page. At most `tieReReadRounds` rounds
   * (SyncEngineOptions): no region is read in more rounds than that.
   * @returns pages read, rounds, and whether the round bound stopped them
   */
  private async reReadTies(stream: RegisteredStream, run: RunCheckpoint, result: RunResult, memory: RunMemory, options: RunOptions): Promise<{ reads: number; rounds: number; boundHit: boolean }> {
    let short = requiredIds(run) - (await this.distinctIds(stream, run));
    let reads = 0;
    // Whole: as many distinct ids as required, by the scan's own count (exact across a resume).
    const whole = async (): Promise<boolean> => {
      short = requiredIds(run) - (await this.distinctIds(stream, run));
      return short <= 0;
    };
    // How wide a round reads: the regions owing records; after a round that found nothing, those
    // and their neighbours (a record credited to the nearest region may belong to the next one);
    // after another, every region (a sweep). A round that finds something narrows again.
    let reach: 'owing' | 'neighbours' | 'all' = 'owing';
    let emptySweeps = 0;
    for (let round = 1; ; round += 1) {
      if (round > this.tieReReadRounds) return { reads, rounds: round - 1, boundHit: true };
      const regions = run.tieRegions ?? [];
      const owes = (index: number): boolean => (regions[index]?.missing ?? 0) > 0;
      if (reach === 'owing' && !regions.some((_, index) => owes(index))) reach = 'neighbours';
      let targets = reach === 'all' ? [...regions] : regions.filter((_, index) => owes(index) || (reach === 'neighbours' && (owes(index - 1) || owes(index + 1))));
      if (targets.length === 0) {
        reach = 'all';
        targets = [...regions];
      }
      let found = 0;
      for (const target of targets) {
        for (const offset of regionPages(target, run.lastTotal ?? 0)) {
          // Regions merge as ids turn up at new positions: follow the target into its merged region.
          const region = (run.tieRegions ?? []).includes(target) ? target : regionAt(run, target.from);
          if (reach === 'owing' && (region === undefined || region.missing <= 0)) break;
          const fresh = await this.reReadPage(stream, run, result, memory, offset, options);
          reads += 1;
          found += fresh;
          short -= fresh;
          // Counted from this process's memory: confirmed with the scan's own count.
          if (short <= 0 && (await whole())) return { reads, rounds: round, boundHit: false };
        }
      }
      if (found > 0) {
        reach = 'owing';
        emptySweeps = 0;
      } else if (reach !== 'all') reach = reach === 'owing' ? 'neighbours' : 'all';
      else {
        // Every region was read and nothing turned up: done. A region longer than a page is read a
        // random part at a time, so one empty sweep proves little there: two in a row end it (an
        // unseen record of a run of 200 escapes both with a chance of about 1 in 50).
        emptySweeps += 1;
        const long = (run.tieRegions ?? []).some((region) => region.to - region.from + 1 > LIST_PAGE_LIMIT);
        if (emptySweeps >= (long ? 2 : 1)) return { reads, rounds: round, boundHit: false };
      }
    }
  }

  /**
   * Reads the page at `offset` again and commits what it lists; ids new to the scan are credited
   * to their tie region, ids listed at another position than before widen the regions.
   * @returns records new to the scan
   */
  private async reReadPage(stream: RegisteredStream, run: RunCheckpoint, result: RunResult, memory: RunMemory, offset: number, options: RunOptions): Promise<number> {
    const page = await this.fetchPage(stream, run, offset, options.signal);
    result.pages += 1;
    run.pages += 1;
    this.noteTotal(run, memory, page.pagination.total, true);
    const listedBefore = this.listedBefore(stream, memory, page);
    const { fresh } = this.countIds(stream, run, memory, page, { firstRead: false });
    run.distinctIds = (run.distinctIds ?? 0) + fresh;
    await this.writePage(stream, run, page, result, listedBefore);
    return fresh;
  }

  /**
   * Commits one page in one transaction (`fenced`): confirms and renews the stream's lease, runs
   * `beforeApply` (the record clock's measurement) on the transaction's store, applies the records
   * (mirror rows and their changelog rows), moves invalid items into quarantine and accepted ones
   * out of it, and saves the checkpoint; then hands the appended changes to `onChanges`. Counts them
   * in `result.changes` and `run.changes`.
   * @returns what `beforeApply` returned (undefined without one)
   * @throws LeaseLostError when another process took over the stream's lease (ours expired while
   *   waiting): that process now owns the checkpoint, so nothing is written
   */
  private async writePage<T>(
    stream: RegisteredStream,
    run: RunCheckpoint,
    page: Page<ApiRecord>,
    result: RunResult,
    listedBefore: ReadonlySet<string>,
    beforeApply?: (store: MirrorStore) => Promise<T>,
  ): Promise<T | undefined> {
    let measured: T | undefined;
    const changesBefore = run.changes;
    let changes: AppendedChange[];
    let secondVersions: string[] = [];
    try {
      changes = await this.fenced(stream.name, async (store) => {
        measured = await beforeApply?.(store);
        const scanNumber = run.mode === 'complete' ? run.scanNumber : undefined;
        secondVersions = [];
        const appended = await store.applyRecords(stream, page.items, { scanNumber, listedBefore: (id) => listedBefore.has(id), secondVersions });
        // Accepted records leave the quarantine; invalid ones enter it (the rest of the page commits).
        const rejectedRecords = new RejectedRecords(store);
        await rejectedRecords.release(stream.name, page.items.map((record) => String(record[stream.key])));
        if (page.rejected && page.rejected.length > 0) appended.push(...(await rejectedRecords.quarantine(stream, page.rejected, { scanNumber })));
        run.changes = changesBefore + appended.length;
        await store.saveRun(stream.name, run);
        return appended;
      });
    } catch (error) {
      // Rolled back: the checkpoint in memory must not count changes that were not stored.
      run.changes = changesBefore;
      throw error;
    }
    result.changes += changes.length;
    if (changes.length > 0) this.options.onChanges?.(changes);
    if (secondVersions.length > 0) {
      this.logger.warn(
        { stream: stream.name, offset: page.offset, ids: secondVersions.slice(0, 10), count: secondVersions.length },
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
  private async finish(stream: RegisteredStream, run: RunCheckpoint, result: RunResult, scan: ScanOutcome, options: RunOptions): Promise<void> {
    const complete = scan.outcome === 'complete';
    let held: DeletionHold | null | undefined;
    const tombstones = await this.fenced(stream.name, async (store) => {
      const appended: AppendedChange[] = [];
      if (complete && run.mode === 'complete' && run.scanNumber !== undefined) {
        const scanNumber = run.scanNumber;
        const now = new Date().toISOString();
        let holding: { count: number; live: number } | undefined;
        appended.push(
          ...(await store.recordMisses(stream, scanNumber, run.startedAt, now, {
            massDeletion: { share: this.massDeletionShare, confirmed: options.confirmDeletions },
            onHeld: (hold) => (holding = hold),
          })),
        );
        const previous = (await store.readSyncState(stream.name)).deletionHold;
        held = holding ? { ...holding, share: this.massDeletionShare, scanNumber, since: previous?.since ?? now, at: now } : null;
        if (holding && previous?.count !== holding.count) {
          // Said once per hold (and again when it grows or shrinks), not at every scan that keeps it.
          appended.push(
            await store.appendChange({
              type: MASS_DELETION_HELD,
              stream: stream.name,
              recordId: stream.name,
              occurredAt: now,
              data: { record: { stream: stream.name, held: holding.count, live: holding.live, share: this.massDeletionShare, scanNumber }, changes: {} },
            }),
          );
        }
        // A complete scan that did not list a quarantined item: it is no longer served, with an id or without one.
        await new RejectedRecords(store).releaseUnlisted(stream.name, run.startedAt);
      }
      const now = new Date().toISOString();
      await store.updateSyncState(stream.name, {
        ...(complete ? { cursor: run.serverStartedAt ?? null } : {}),
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
      });
      await store.saveRun(stream.name, null);
      return appended;
    });
    const gone = tombstones.filter((change) => change.type !== MASS_DELETION_HELD);
    result.tombstones = gone.length;
    result.changes += tombstones.length;
    if (held) result.deletionsHeld = held.count;
    if (tombstones.length > 0) this.options.onChanges?.(tombstones);
    if (held) {
      this.logger.warn(
        { stream: stream.name, held: held.count, live: held.live, share: held.share },
        `a complete scan would tombstone ${held.count} of ${held.live} live records, more than sync.massDeletionShare (${held.share}): none is tombstoned (a list that stopped serving part of the stream, such as a capped result window, looks like this); if they are really gone, run \`bizops-sync backfill --stream ${stream.name} --confirm-deletions\``,
      );
    }
    this.logger.info(
      { stream: stream.name, reason: run.reason, mode: run.mode, scan: scan.outcome, pages: result.pages, records: result.records, changes: result.changes, tombstones: result.tombstones },
      'run finished',
    );
  }

}
