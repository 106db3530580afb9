/**
 * The sync engine: runs any stream of src/streams/definitions.ts (backfill, incremental sync,
 * reconciliation) under the sync rules of docs/sync.md. The engine keeps what outlives one run and
 * what runs share: the stream leases (one process per stream, a fence per holder, renewed while a
 * run lasts), the wait for a database that went away, the choice between resuming a checkpoint and
 * starting a new one, and the run's outcome when it fails or is interrupted. The run itself (paging,
 * committing, scan completeness, the end of a scan) is a `StreamRun` (src/sync/stream-run.ts).
 */
import { errorLine } from '../client/api-errors.ts';
import type { ApiClient } from '../client/client.ts';
import { silentLogger, type Logger } from '../logging/logger.ts';
import { confirmLeaseRenewingWhenDue, DEFAULT_LEASE_SECONDS, LeaseLostError, Leases, noteLeaseConfirmed, PROCESS_LEASE_HOLDER, streamLeaseName, type HeldLease } from '../mirror/leases.ts';
import { whileDatabaseAway } from '../mirror/sql/wait-for-database.ts';
import { DatabaseUnavailableError } from '../mirror/sql/executor.ts';
import type { AppendedChange, MirrorStore, SyncState } from '../mirror/mirror-store.ts';
import { streamByName, type RegisteredStream, type StreamName } from '../streams/definitions.ts';
import { describePartitions, noPartitionsMessage, partitionSources, readPartitions, type ConfiguredPartitions } from './partition-values.ts';
import { checkCreatedRange, sameCreatedRange } from './created-range.ts';
import { WrongBaseUrlError } from './base-url-check.ts';
import type { StreamConditions } from './stream-conditions.ts';
import { RecordClockProbe, type ProbeRequestOptions } from './record-clock-probe.ts';
import { ChangeProbe } from './change-probe.ts';
import { RecordClockStore } from '../mirror/record-clock-store.ts';
import { lookbackMsOf, newCheckpoint, StreamRun, type RunEnvironment, type RunOptions, type RunReason, type RunResult } from './stream-run.ts';

export { MASS_DELETION_HELD, type RunOptions, type RunProgress, type RunReason, type RunResult } from './stream-run.ts';

/**
 * What a SyncEngine is built from (jobs/context.ts builds it): the API client whose layers pace and
 * retry its list requests, the mirror store it commits pages to, and its run-lock identity.
 */
export interface SyncEngineOptions {
  /** Lists pages; requests go at priority `incremental` (sync) or `backfill` (backfill, reconcile). */
  client: ApiClient;
  /** The company the runs mirror (config `companyId`): the `bizops.company` attribute of their trace spans. */
  company?: string;
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
   * `sync.unsupportedProbeSeconds`). Default 600; 0 probes on every sync.
   */
  unsupportedProbeSeconds?: number;
  /**
   * The first sync of each `unsupported` stream by this engine asks its list whatever its last probe
   * (the daemon: an unsupported stream is asked again at every start). Default false: the CLI's
   * `sync` keeps to `unsupportedProbeSeconds`.
   */
  probeUnsupportedAtStart?: boolean;
  /**
   * Each stream's operational condition (stream-conditions.ts): every run's outcome is noted when it
   * ends, and a change of condition appends its `stream.*` event (handed to `onChanges`). Absent: no
   * condition is kept.
   */
  conditions?: StreamConditions;
  /**
   * Most rounds of tie re-reads at the end of one scan (docs/sync.md "Ties"): each round reads each
   * tie region still owing records once, so no region is read in more rounds than this. A scan still
   * short after them ends incomplete (a warning naming the bound). Default 20; an integer >= 1.
   */
  tieReReadRounds?: number;
  /**
   * First listings a complete scan keeps in memory (docs/sync.md "Scan memory"), an integer >= 1:
   * the rest are the mirror's scan marks. Default 20,000 (src/sync/scan-memory.ts `RECENT_LISTINGS`);
   * tests lower it.
   */
  scanMemory?: number;
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
  /**
   * The configured partitions of partitioned streams (config `sync.partitions`: stream -> parameter
   * -> values; docs/sync.md "Partitioned streams"); a stream listed here reads exactly these. Default none.
   */
  partitions?: ConfiguredPartitions;
}

const SECOND_MS = 1000;

/** Default of `SyncEngineOptions.databaseWaitSeconds` (config `sync.databaseWaitSeconds`). */
export const DEFAULT_DATABASE_WAIT_SECONDS = 60;

/** Default of `SyncEngineOptions.massDeletionShare` (config `sync.massDeletionShare`). */
export const DEFAULT_MASS_DELETION_SHARE = 0.1;

/** Default of `SyncEngineOptions.tieReReadRounds`. */
const TIE_REREAD_ROUNDS = 20;

/** Runs streams into the mirror. One instance can run several streams concurrently (one run per stream). */
export class SyncEngine {
  private readonly client: ApiClient;
  private readonly store: MirrorStore;
  private readonly logger: Logger;
  private readonly overlapMs: number;
  private readonly options: SyncEngineOptions;
  /** Who holds the stream leases this engine takes (`SyncEngineOptions.leaseHolder`). */
  readonly leaseHolder: string;
  private readonly leases: Leases;
  /** The lease of each stream this engine is running now (null while it is being taken): one run per stream per engine. */
  private readonly running = new Map<StreamName, HeldLease | null>();
  /** The abort signal of each stream's run in progress (waits for the database end with it). */
  private readonly signals = new Map<StreamName, AbortSignal | undefined>();
  private readonly tieReReadRounds: number;
  private readonly databaseWaitMs: number;
  private readonly massDeletionShare: number;
  /** The own probe of streams whose list items carry no timestamps (docs/sync.md "Record clock"). */
  private readonly recordClockProbe: RecordClockProbe;
  /** The change probe of complete-scan streams' resting polls (docs/sync.md "Change probe"). */
  private readonly changeProbe: ChangeProbe;
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
    this.logger = options.logger ?? silentLogger;
    this.overlapMs = (options.overlapSeconds ?? 120) * SECOND_MS;
    this.leaseHolder = options.leaseHolder ?? PROCESS_LEASE_HOLDER;
    this.leases = new Leases(options.store.executor, options.leaseSeconds ?? DEFAULT_LEASE_SECONDS);
    this.recordClockProbe = new RecordClockProbe({ client: this.client, logger: this.logger });
    this.changeProbe = new ChangeProbe({ client: this.client, logger: this.logger });
    this.databaseWaitMs = (options.databaseWaitSeconds ?? DEFAULT_DATABASE_WAIT_SECONDS) * SECOND_MS;
    this.massDeletionShare = options.massDeletionShare ?? DEFAULT_MASS_DELETION_SHARE;
  }

  /** True while a run of `stream` is in progress in this engine (taking its lease, or running under it). */
  isRunning(stream: StreamName): boolean {
    return this.running.has(stream);
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
   * A backfill with `options.createdRange` lists that range only (docs/sync.md "Range backfill"),
   * and resumes only a checkpoint of the same range.
   * Never throws for API or network failures: they come back as `status: 'failed'` with `error`.
   * @throws Error for an unknown stream name; CreatedRangeError for a range the stream refuses
   */
  async run(streamName: StreamName | string, reason: RunReason, options: RunOptions = {}): Promise<RunResult> {
    const result = await this.runStream(streamByName(streamName), reason, options);
    await this.noteCondition(result);
    return result;
  }

  /**
   * Notes the run's outcome in the stream's condition (`SyncEngineOptions.conditions`,
   * stream-conditions.ts) and hands an event it appended to `onChanges`. Never throws: a mirror that
   * cannot be written now is warned about (the next run notes its own outcome).
   */
  private async noteCondition(result: RunResult): Promise<void> {
    const conditions = this.options.conditions;
    if (!conditions) return;
    try {
      const appended = await conditions.noteRun(result);
      if (appended) {
        this.logger.warn({ stream: result.stream, event: appended.type, seq: appended.seq }, `the stream's condition changed: ${appended.type}`);
        this.options.onChanges?.([appended]);
      }
      // A partitioned stream's partitions each have their own condition too.
      const partitions = await conditions.notePartitions(result);
      for (const event of partitions) this.logger.warn({ stream: result.stream, event: event.type, seq: event.seq }, `a partition's condition changed: ${event.type}`);
      if (partitions.length > 0) this.options.onChanges?.(partitions);
    } catch (error) {
      this.logger.warn({ stream: result.stream, err: { message: (error as Error).message } }, "could not note the run in the stream's condition");
    }
  }

  /** `run` without noting the stream's condition. */
  private async runStream(stream: RegisteredStream, reason: RunReason, options: RunOptions): Promise<RunResult> {
    if (options.createdRange) checkCreatedRange(stream, options.createdRange);
    let seen: SyncState;
    try {
      seen = await this.database(stream.name, () => this.store.readSyncState(stream.name), options.signal);
    } catch (error) {
      return this.failedBeforeStart(stream, reason, error as Error);
    }
    const wantComplete = reason !== 'sync' || stream.request.cursor === 'complete-scan' || seen.cursor === null;
    const result: RunResult = { ...emptyResult(stream, reason), mode: wantComplete ? 'complete' : 'incremental' };
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
      if (stream.partitions) await this.runPartitions(stream, result, options);
      else await this.runOnce(stream, '', result, options);
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
        // The failed run's own figures (requests sent, records read, changes committed before it failed), not the last success's.
        await this.store
          .updateSyncState(stream.name, { last_error: errorLine(err), last_run_finished_at: new Date().toISOString(), last_run_requests: result.pages, last_run_records: result.records, last_run_changes: result.changes })
          .catch(() => undefined);
        this.logger.error({ stream: stream.name, err }, 'run failed; its checkpoint stands');
      }
    } finally {
      clearInterval(renewal);
      this.running.delete(stream.name);
      this.signals.delete(stream.name);
      // A lease this run took is given back; one the process held before (a daemon's) stays held.
      // A connection ended meanwhile (its backend terminated) fails the release once: sent again on a fresh one.
      if (acquired.taken) {
        const release = () => this.leases.release(acquired.lease);
        await release()
          .catch((error: unknown) => (error instanceof DatabaseUnavailableError ? release() : Promise.reject(error)))
          .catch((error: unknown) => {
            this.logger.warn({ stream: stream.name, err: { message: (error as Error).message } }, 'could not release the stream\'s lease; it lapses on its own');
          });
      }
    }
    return result;
  }

  /**
   * Starts the run of a stream, or of one partition of it, under the stream's lease: resumes its
   * unfinished checkpoint (a complete scan is never dropped for an incremental one; a requested
   * complete scan supersedes an unfinished incremental run) or makes a new one, and notes the start
   * in its sync state. Sets `result.mode` and `result.resumed`.
   * @param partition the partition's value, or '' for an unpartitioned stream
   */
  private async startRun(stream: RegisteredStream, partition: string, result: RunResult, options: RunOptions): Promise<{ run: StreamRun; listTotal?: number }> {
    const reason = result.reason;
    const names = partition ? { stream: stream.name, partition } : { stream: stream.name };
    // Read again under the lease: the previous holder may have committed more since (a replica
    // taking over a dead daemon's stream resumes from its last committed checkpoint).
    const state = await this.database(stream.name, () => this.store.readSyncState(stream.name, partition), options.signal);
    // Records the stream's own probe found unlisted by its incremental runs: this run is a complete scan (record-clock-probe.ts).
    const unlisted = reason === 'sync' && RecordClockProbe.probes(stream) ? (await this.database(stream.name, () => new RecordClockStore(this.store.executor).read({ stream: stream.name, partition }), options.signal)).unlisted : null;
    if (unlisted) this.logger.info({ ...names, unlisted: unlisted.records, since: unlisted.at }, 'the list held records the incremental runs had not listed: this sync is a complete scan');
    const wantComplete = reason !== 'sync' || stream.request.cursor === 'complete-scan' || state.cursor === null || unlisted !== null;
    result.mode = wantComplete ? 'complete' : 'incremental';
    let run = state.run;
    let listTotal: number | undefined;
    // A backfill resumes only a checkpoint of its own range (or of none): created-range.ts.
    const rangeAgrees = !run || reason !== 'backfill' || sameCreatedRange(run.createdRange, options.createdRange);
    if (run && (run.mode === 'complete' || !wantComplete) && rangeAgrees) {
      result.resumed = true;
      this.logger.info({ ...names, offset: run.offset, reason: run.reason }, 'resuming an unfinished run from its checkpoint');
    } else {
      const mode = wantComplete ? 'complete' : 'incremental';
      // A stream whose items carry no timestamps counts its list first (record-clock-probe.ts).
      if (mode === 'incremental') listTotal = await this.recordClockProbe.totalBefore(stream, this.probeRequests(stream, options));
      run = await this.database(stream.name, () => newCheckpoint(this.store, stream, partition, { mode, reason, cursor: state.cursor, scanNumber: state.scanNumber, overlapMs: this.overlapMs }), options.signal);
      if (reason === 'backfill' && options.createdRange) run.createdRange = options.createdRange;
      if (state.run && !rangeAgrees) {
        this.logger.info({ ...names, checkpointRange: state.run.createdRange ?? 'whole stream', range: options.createdRange ?? 'whole stream' }, 'the unfinished run is of another range: this backfill starts anew and replaces its checkpoint');
      }
    }
    if (run.createdRange) result.createdRange = run.createdRange;
    result.mode = run.mode;
    const checkpoint = run;
    // The checkpoint is first saved with the first page: a run that fails before any page leaves
    // nothing to resume.
    await this.fenced(stream.name, (store) => store.updateSyncState(stream.name, { last_run_started_at: new Date().toISOString(), last_run_mode: `${checkpoint.reason}/${checkpoint.mode}` }, partition));
    return { run: new StreamRun(stream, partition, checkpoint, result, options, this.environment(stream, options.signal)), ...(listTotal !== undefined ? { listTotal } : {}) };
  }

  /**
   * Starts and runs a stream, or one partition of it (`startRun`, then `StreamRun.execute`); after an
   * incremental run that completed, the stream's own probe compares the list's count with the
   * mirror (record-clock-probe.ts).
   * @throws as `StreamRun.execute`
   */
  private async runOnce(stream: RegisteredStream, partition: string, result: RunResult, options: RunOptions): Promise<void> {
    if (options.probeFirst && (await this.probedUnmoved(stream, partition, result, options))) return;
    const { run, listTotal } = await this.startRun(stream, partition, result, options);
    await run.execute();
    const checkpoint = run.checkpoint;
    if (listTotal === undefined || result.status !== 'succeeded' || result.scan?.outcome !== 'complete' || checkpoint.mode !== 'incremental') return;
    await this.recordClockProbe.afterRun(stream, this.store, listTotal, {
      allowedSeconds: checkpoint.windowLagSeconds ?? 0,
      overlapSeconds: lookbackMsOf(stream, this.overlapMs) / SECOND_MS,
      ...this.probeRequests(stream, options),
      write: (fn) => this.fenced(stream.name, fn),
    });
  }

  /**
   * A resting poll of a complete-scan stream (`RunOptions.probeFirst`): asks the change probe
   * (change-probe.ts) whether the list moved since the stream's last complete scan. Unmoved: the run
   * ends here, a success noted in the stream's state (`last_run_mode` `sync/probe`; the cursor, the
   * scan number and the last scan stay the last complete scan's) and `true`. Moved, or nothing to
   * compare with (no complete scan yet, a checkpoint to resume, a probe refused or failed): `false`,
   * and the complete scan runs; `result.pages` counts the probe's requests.
   * @throws LeaseLostError, the abort of the run, a database error: as a run's own step
   */
  private async probedUnmoved(stream: RegisteredStream, partition: string, result: RunResult, options: RunOptions): Promise<boolean> {
    if (result.reason !== 'sync' || !ChangeProbe.probes(stream)) return false;
    const state = await this.database(stream.name, () => this.store.readSyncState(stream.name, partition), options.signal);
    const lastScan = state.lastScan;
    if (state.run || state.cursor === null || !state.supported || lastScan?.mode !== 'complete' || lastScan.outcome !== 'complete') return false;
    const startedAt = new Date().toISOString();
    const lagSeconds = Math.ceil(await this.database(stream.name, () => new RecordClockStore(this.store.executor).largest(), options.signal));
    const basis = { cursor: state.cursor, lastTotal: lastScan.total, overlapMs: lookbackMsOf(stream, this.overlapMs), lagSeconds };
    const probe = await this.changeProbe.probe(stream, basis, this.probeRequests(stream, options));
    if (!probe) return false;
    result.probe = probe;
    result.pages += probe.requests;
    const names = partition ? { stream: stream.name, partition } : { stream: stream.name };
    if (probe.moved) {
      this.logger.info({ ...names, total: probe.total, lastTotal: probe.lastTotal, updated: probe.updated, updatedAfter: probe.updatedAfter }, 'the change probe says the list moved since its last complete scan: scanning');
      return false;
    }
    result.mode = 'incremental';
    const now = new Date().toISOString();
    await this.fenced(stream.name, (store) =>
      store.updateSyncState(
        stream.name,
        { last_run_started_at: startedAt, last_run_finished_at: now, last_success_at: now, last_error: null, last_run_mode: 'sync/probe', last_run_requests: probe.requests, last_run_records: 0, last_run_changes: 0 },
        partition,
      ),
    );
    this.logger.debug({ ...names, total: probe.total, updatedAfter: probe.updatedAfter }, 'the change probe says the list has not moved since its last complete scan');
    return true;
  }

  /** How the stream's own probe sends its requests: at the run's priority, after the run's lease check. */
  private probeRequests(stream: RegisteredStream, options: RunOptions): ProbeRequestOptions {
    return { priority: 'incremental', signal: options.signal, beforeRequest: () => this.leaseBeforeRequest(stream.name) };
  }

  /**
   * Runs every partition of a partitioned stream in turn under the one stream lease (docs/sync.md
   * "Partitioned streams"), each with its own checkpoint, cursor and scans; fills `result.partitions`
   * and adds their counts to `result`. A partition that fails is recorded in its own state and the
   * next one runs; an interruption, a lost lease or a wrong base URL stops them all (rethrown). With no partition
   * known, nothing is requested: `result.status` is `no-partitions` and the stream's state says so.
   * Ends with the stream's own row: the run's start, end and counts, the oldest partition cursor.
   * @throws the abort or LeaseLostError that stopped the partitions; a database error on the stream's row
   */
  private async runPartitions(stream: RegisteredStream, result: RunResult, options: RunOptions): Promise<void> {
    const startedAt = new Date().toISOString();
    const set = await this.database(stream.name, () => readPartitions(this.store.executor, stream, this.options.partitions), options.signal);
    const values = set.values;
    const sources = partitionSources(set);
    result.partitions = [];
    result.partitionSources = { ...sources, describe: describePartitions(stream, sources) };
    if (values.length === 0) {
      result.status = 'no-partitions';
      const message = noPartitionsMessage(stream, this.options.partitions);
      await this.fenced(stream.name, (store) =>
        store.updateSyncState(stream.name, { last_run_started_at: startedAt, last_run_finished_at: new Date().toISOString(), last_error: message, last_run_mode: `${result.reason}/none`, partitions: JSON.stringify(sources) }),
      );
      this.logger.warn({ stream: stream.name }, message);
      return;
    }
    await this.fenced(stream.name, (store) => store.updateSyncState(stream.name, { last_run_started_at: startedAt, last_run_mode: `${result.reason}/partitions`, partitions: JSON.stringify(sources) }));
    this.logger.info({ stream: stream.name, partitions: sources }, `partitions: ${result.partitionSources.describe}`);
    for (const partition of values) {
      options.signal?.throwIfAborted();
      const part = emptyResult(stream, result.reason, partition);
      result.partitions.push(part);
      try {
        await this.runOnce(stream, partition, part, options);
      } catch (error) {
        if (options.signal?.aborted || error instanceof LeaseLostError || error instanceof WrongBaseUrlError) throw error;
        part.status = 'failed';
        part.error = error as Error;
        await this.store
          .updateSyncState(stream.name, { last_error: errorLine(part.error), last_run_finished_at: new Date().toISOString(), last_run_requests: part.pages, last_run_records: part.records, last_run_changes: part.changes }, partition)
          .catch(() => undefined);
        this.logger.error({ stream: stream.name, partition, err: error }, 'the partition\'s run failed; its checkpoint stands, the next partition runs');
      } finally {
        addCounts(result, part);
      }
      if (part.status === 'unsupported') break;
    }
    const failed = result.partitions.find((part) => part.status === 'failed');
    const unsupported = result.partitions.find((part) => part.status === 'unsupported');
    if (unsupported) {
      result.status = 'unsupported';
      result.notFoundUrl = unsupported.notFoundUrl;
      return;
    }
    if (failed) {
      result.status = 'failed';
      result.error = failed.error;
    }
    result.mode = result.partitions.every((part) => part.mode === 'complete') ? 'complete' : 'incremental';
    result.resumed = result.partitions.some((part) => part.resumed);
    await this.fenced(stream.name, async (store) => {
      // One statement at a time: inside a transaction every read goes through one client (PostgreSQL:
      // one connection, which must not be sent a query while it runs another).
      const cursors: (string | null)[] = [];
      for (const partition of values) cursors.push((await store.readSyncState(stream.name, partition)).cursor);
      const now = new Date().toISOString();
      await store.updateSyncState(stream.name, {
        // The stream's cursor is its oldest partition's: how far behind the stream may be.
        cursor: cursors.includes(null) ? null : cursors.reduce((oldest, cursor) => (Date.parse(cursor!) < Date.parse(oldest!) ? cursor : oldest)),
        supported: 1,
        last_run_finished_at: now,
        ...(failed ? { last_error: `partition ${failed.partition ?? '?'}: ${failed.error ? errorLine(failed.error) : 'failed'}` } : { last_success_at: now, last_error: null }),
        last_run_requests: result.pages,
        last_run_records: result.records,
        last_run_changes: result.changes,
      });
    });
  }

  /** What a run of `stream` may do: the engine's client and store, and its steps fenced by the stream's lease. */
  private environment(stream: RegisteredStream, signal: AbortSignal | undefined): RunEnvironment {
    return {
      client: this.client,
      store: this.store,
      logger: this.logger,
      ...(this.options.company !== undefined ? { company: this.options.company } : {}),
      database: (step) => this.database(stream.name, step, signal),
      fenced: (fn) => this.fenced(stream.name, fn),
      beforeRequest: () => this.leaseBeforeRequest(stream.name),
      onChanges: this.options.onChanges,
      tieReReadRounds: this.tieReReadRounds,
      scanMemory: this.options.scanMemory,
      massDeletionShare: this.massDeletionShare,
    };
  }

  /**
   * Runs `fn` in one transaction that first confirms the stream's lease (its fence still current,
   * renewing it when due: src/mirror/leases.ts `confirmLeaseRenewingWhenDue`): a run whose lease
   * another process took over writes nothing.
   * @throws LeaseLostError naming the stream when the fence is no longer current (rolled back)
   */
  private fenced<T>(stream: StreamName, fn: (store: MirrorStore) => Promise<T>): Promise<T> {
    const lease = this.running.get(stream);
    if (!lease) return Promise.reject(new Error(`${stream}: no lease held for this run`));
    return this.database(
      stream,
      async () => {
        const sentAt = performance.now();
        let renewed = false;
        const result = await this.store.transaction(async (store) => {
          const lost = (error: unknown): unknown =>
            error instanceof LeaseLostError ? new LeaseLostError(lease, `${stream}: another process took over this stream's lease (fence ${lease.fence} is no longer current); stopping without writing`) : error;
          // PostgreSQL: the body's first statement goes in the same write as the confirmation (one round
          // trip fewer); its answer is read before the commit, and a lost lease rolls the body back.
          // SQLite renews only when due (leases.ts `confirmLeaseRenewingWhenDue`): most pages' commits write no lease row.
          const confirmation = confirmLeaseRenewingWhenDue(store.executor, lease, this.leases.seconds).then(
            (renewedNow) => {
              renewed = renewedNow;
              return undefined;
            },
            (error: unknown) => ({ error }),
          );
          if (store.executor.dialect !== 'postgres') {
            const failed = await confirmation;
            if (failed) throw lost(failed.error);
          }
          let value: T;
          try {
            value = await fn(store);
          } catch (error) {
            const failed = await confirmation;
            throw failed ? lost(failed.error) : error;
          }
          const failed = await confirmation;
          if (failed) throw lost(failed.error);
          return value;
        });
        // Committed: a renewal inside it counts (leases.ts `leaseTimeLeftMs`); a check alone renewed nothing.
        if (renewed) noteLeaseConfirmed(lease, sentAt, this.leases.seconds);
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
    return { ...emptyResult(stream, reason), mode: 'incremental', status: 'failed', error };
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
    const intervalMs = (this.options.unsupportedProbeSeconds ?? 600) * SECOND_MS;
    return Date.now() - Date.parse(lastProbeAt) >= intervalMs;
  }

}

/** A result with nothing done yet: `succeeded`, a complete scan, every count 0 (`partition` for one partition's run). */
function emptyResult(stream: RegisteredStream, reason: RunReason, partition?: string): RunResult {
  return {
    stream: stream.name,
    ...(partition === undefined ? {} : { partition }),
    reason,
    mode: 'complete',
    status: 'succeeded',
    resumed: false,
    pages: 0,
    records: 0,
    changes: 0,
    tombstones: 0,
    rejected: 0,
    driftStepBacks: 0,
  };
}

/** Adds one partition's counts to its stream's result. */
function addCounts(total: RunResult, part: RunResult): void {
  total.pages += part.pages;
  total.records += part.records;
  total.changes += part.changes;
  total.tombstones += part.tombstones;
  total.rejected += part.rejected;
  total.driftStepBacks += part.driftStepBacks;
  if (part.deletionsHeld !== undefined) total.deletionsHeld = (total.deletionsHeld ?? 0) + part.deletionsHeld;
  if (part.keptWrittenThrough !== undefined) total.keptWrittenThrough = (total.keptWrittenThrough ?? 0) + part.keptWrittenThrough;
}
