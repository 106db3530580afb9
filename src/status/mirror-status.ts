/**
 * What the mirror says of itself, gathered in one place for every reader: the `status` command
 * (jobs/status.ts adds where the mirror is and its health) and the operator's console of the daemon
 * (src/console/). The changelog's last and oldest seq kept and its named consumers; per stream:
 * rows, cursor and its age, the last run, the last error, the scan's outcome, an unsupported
 * stream, the record clock's lag, quarantined records, a run waiting to resume; the writes by status,
 * those needing review and the latest failed ones; the webhook endpoints' delivery state; the leases. Reads only, through a
 * `SqlExecutor` (src/mirror/sql/executor.ts): works on a read-only connection, on both back ends.
 */
import { listUndeclaredFields } from '../mirror/field-registry.ts';
import { LEASE_REQUEST_PREFIX, Leases, streamLeaseName, type LeaseState } from '../mirror/leases.ts';
import { MirrorStore, type DeletionHold, type PartitionSources, type ScanOutcome, type SyncState } from '../mirror/mirror-store.ts';
import { RecordClockStore } from '../mirror/record-clock-store.ts';
import { RejectedRecords } from '../mirror/rejected-records.ts';
import type { SqlExecutor } from '../mirror/sql/executor.ts';
import { listConsumers, type ConsumerListing } from '../notify/pull/consumer-listing.ts';
import { loadAllEndpoints } from '../notify/delivery/endpoint-store.ts';
import { changelogPrunedThrough } from '../notify/retention.ts';
import { STREAM_LIST, type RegisteredStream, type StreamName } from '../streams/definitions.ts';
import { describePartitions, noPartitionsMessage } from '../sync/partition-values.ts';
import { StreamConditionStore, type StreamConditionState } from '../mirror/stream-condition-store.ts';
import { WriteStore } from '../writes/write-store.ts';

/** One stream's line of `status`. Times are ISO 8601. */
export interface StreamStatus {
  stream: StreamName;
  supported: boolean;
  /** Live rows (listed upstream) and tombstoned rows. */
  records: number;
  tombstoned: number;
  /** ISO server time: the next incremental run asks updatedAfter = cursor - overlap. */
  cursor: string | null;
  /**
   * How far the mirror may be behind the API, seconds: now − `cursor` (a change made upstream after
   * the cursor is not mirrored before the next run). Null before the first complete run.
   */
  lagSeconds: number | null;
  completeScans: number;
  lastRun: {
    mode: string | null;
    startedAt: string | null;
    finishedAt: string | null;
    succeededAt: string | null;
    requests: number | null;
    records: number | null;
    changes: number | null;
    /**
     * `running`: started and not finished, the stream's lease held (its counts are the previous
     * run's, not this one's); `unfinished`: started and not finished, nobody holding the lease (the
     * process stopped; the next run resumes it); `finished`; null before any run.
     */
    state: 'running' | 'unfinished' | 'finished' | null;
  };
  lastError: string | null;
  /**
   * The stream's operational condition (docs/operations.md "Operational events"): `ok`, `failing`,
   * `stale` or `unsupported`, the failed runs in a row since its last success, and since when the
   * condition holds (null while `ok` from the start).
   */
  condition: StreamConditionState;
  /**
   * How the last finished run's scan ended (docs/sync.md "Scan completeness"): `complete`, or
   * `incomplete` with a reason and counts (no miss counted, cursor kept). Null before one finished.
   */
  lastScan: ScanOutcome | null;
  /**
   * Why incremental syncs skip the stream, or null when they do not: an `unsupported` stream (its
   * list answered 404) is asked again by a sync at most every `sync.unsupportedProbeSeconds`.
   */
  skipped: string | null;
  /**
   * How far the stream's record timestamps were seen to lag the cursor's clock, seconds (0: no lag
   * seen); incremental syncs widen their overlap by it (docs/sync.md "Record clock").
   */
  recordClockLagSeconds: number;
  /**
   * Records the stream's own record clock probe found in the list that its incremental runs had not
   * listed, and when (ISO 8601); the next run is a complete scan, which clears it; null when none
   * (docs/sync.md "Record clock").
   */
  unlistedRecords: { records: number; at: string } | null;
  /**
   * Tombstones the last complete scan held back because they were more than
   * `sync.massDeletionShare` of the stream (docs/sync.md "Mass deletions held"), or null.
   */
  deletionHold: DeletionHold | null;
  /** Records quarantined because they failed their schema (`rejected_records`; docs/operations.md "Quarantined records"). */
  rejected: number;
  /**
   * Fields the stream's records carried that its definition does not declare (the field registry,
   * docs/mirror.md "Fields the spec does not show"): kept in `raw` and compared like any other.
   */
  undeclaredFields: { field: string; firstSeenAt: string; exampleRecordId: string }[];
  /** The unfinished run a restart will resume, if any. */
  inProgress: { reason: string; mode: string; offset: number; total: number | null; records: number } | null;
  /**
   * A partitioned stream's parameter and its partitions that have run, each with its own records,
   * cursor, scans and last run (docs/sync.md "Partitioned streams"); null for an unpartitioned
   * stream. The stream's own `cursor` is then its oldest partition's, its `lastRun` the run of all
   * its partitions. With no partition, `skipped` says why nothing is requested.
   */
  partitions: {
    param: string;
    list: PartitionStatus[];
    /**
     * Where the partition values came from at the stream's last run and how many there were (the
     * configuration key, another stream's column, its own mirrored records), with `describe` the
     * line `status` prints; null before its first run.
     */
    sources?: (PartitionSources & { describe: string }) | null;
  } | null;
}

/** One partition of a partitioned stream in `status`: its value and what its own sync state says. Times are ISO 8601. */
export interface PartitionStatus {
  /** The partition's value, e.g. a location's id. */
  partition: string;
  /** The partition's own operational condition (a location whose list keeps failing while the others answer is `failing`). */
  condition?: StreamConditionState;
  /** Records this partition's scans quarantined (`rejected_records.partition_value`). */
  rejected?: number;
  records: number;
  tombstoned: number;
  cursor: string | null;
  lagSeconds: number | null;
  completeScans: number;
  lastRun: StreamStatus['lastRun'];
  lastError: string | null;
  lastScan: ScanOutcome | null;
  deletionHold: DeletionHold | null;
  inProgress: StreamStatus['inProgress'];
}

/** A write parked as `needs_review` (docs/writes.md): what a person must look at. Times are ISO 8601. */
export interface WriteNeedingReview {
  id: string;
  kind: string;
  /** How it ended, in one line (why it was parked). */
  outcome: string | null;
  error: string | null;
  createdAt: string;
  /** When it was parked. */
  updatedAt: string;
}

/**
 * Failed writes count in the verdict for this many hours after they failed: a failed write is
 * final (its 4xx will not change), so it is news for a day, then history (`status` and the console
 * still list the latest ones).
 */
export const FAILED_WRITES_RECENT_HOURS = 24;

/** A write that failed (the API refused it: a final 4xx, docs/writes.md), with its error. Times are ISO 8601. */
export interface FailedWrite {
  id: string;
  kind: string;
  /** The API's answer in one line (`HTTP 422: ...`). */
  error: string | null;
  httpStatus: number | null;
  /** When it failed. */
  finishedAt: string | null;
}

/** A webhook endpoint's delivery state as `status` reads it from the mirror. Times are ISO 8601. */
export interface EndpointStatus {
  name: string;
  /** `webhook`, or a sink's kind (`nats`, `rabbitmq`, `redis-stream`: docs/sinks.md). */
  kind: string;
  /** Its cursor: every event at or below it is delivered (published), skipped, held back or given up on. */
  deliveredSeq: number;
  /** False once disabled (410 Gone, or failing for `disableAfterDays`). */
  enabled: boolean;
  /** First failed attempt of the current streak; null while it answers. */
  failingSince: string | null;
  /** When it next tries; null when nothing waits. */
  nextAttemptAt: string | null;
  /** The last attempt's HTTP status (null: no answer, or no attempt yet). */
  lastStatus: number | null;
}

/** What the mirror says of itself (`readMirrorReport`). */
export interface MirrorReport {
  /** The changelog's last seq (0 when empty). */
  changelogSeq: number;
  /**
   * The oldest changelog seq kept: the retention (`changes.retainDays`, `changes prune`) pruned every
   * seq below it (1 when nothing was pruned).
   */
  oldestSeq: number;
  /** The named consumers of the changelog over HTTP, with their cursor and lag (docs/mirror.md "Named consumers"). */
  consumers: ConsumerListing[];
  /** Every registered stream, in the registry's order. */
  streams: StreamStatus[];
  /**
   * The streams marked unsupported (their list answered 404 while the other lists answered,
   * docs/sync.md "Deals"), in the registry's order; empty when none.
   */
  unsupported: StreamName[];
  /** Writes by status (`failed`, `needs_review`, `queued`, `sending`, `succeeded`), only the statuses that occur. */
  writes: Record<string, number>;
  /** The writes needing review, newest first, at most `needsReviewLimit` of them (`writes.needs_review` counts them all). */
  writesNeedingReview: WriteNeedingReview[];
  /** The latest failed writes, newest first, at most `failedWritesLimit` of them (`writes.failed` counts them all). */
  failedWrites: FailedWrite[];
  /** Writes that failed within the last `FAILED_WRITES_RECENT_HOURS` (24): what the verdict counts. */
  recentFailedWrites: number;
  /**
   * The webhook endpoints and sinks the mirror keeps delivery state for (registered by a daemon), by name:
   * enabled or not, failing since when, next attempt. What the verdict of `status` reads.
   */
  endpoints: EndpointStatus[];
  /** Who holds which lease (docs/operations.md "Running two daemons (replicas)"): the `leases` table, by name, without the requests of `waiting`. */
  leases: LeaseState[];
  /**
   * The streams a one-off run is waiting for (`--wait`, docs/operations.md "A one-off run beside the
   * daemon (--wait)"): a live lease request (`wait:stream:<stream>`), with its holder and expiry. A
   * daemon holding such a stream yields it once its run in progress ends, and takes it back after.
   */
  waiting: { stream: string; waiter: string | null; until: string | null }[];
}

/** Options of `readMirrorReport`. */
export interface MirrorReportOptions {
  /** Most writes needing review listed (`writesNeedingReview`). Default 20. */
  needsReviewLimit?: number;
  /** Most failed writes listed (`failedWrites`). Default 20. */
  failedWritesLimit?: number;
  /** The time `lagSeconds` is measured at. Default now. */
  now?: Date;
}

/**
 * Reads the report of the mirror behind `executor` (read-only statements only).
 * @throws the driver's error when a statement fails (a damaged SQLite page, a PostgreSQL outage)
 */
export async function readMirrorReport(executor: SqlExecutor, options: MirrorReportOptions = {}): Promise<MirrorReport> {
  const now = options.now ?? new Date();
  const store = new MirrorStore(executor);
  const rejected = new RejectedRecords(store);
  const recordClock = new RecordClockStore(executor);
  const conditions = new StreamConditionStore(executor);
  const streams: StreamStatus[] = [];
  const leaseRows = await new Leases(executor).list();
  const leases = leaseRows.filter((lease) => !lease.name.startsWith(LEASE_REQUEST_PREFIX));
  const held = new Set(leases.filter((lease) => !lease.free).map((lease) => lease.name));
  for (const stream of STREAM_LIST as readonly RegisteredStream[]) {
    const state = await store.readSyncState(stream.name);
    const leaseHeld = held.has(streamLeaseName(stream.name));
    const counts = await store.countRecords(stream);
    const quarantined = stream.partitions ? await rejected.countByPartition(stream.name) : new Map<string, number>();
    const partitions = stream.partitions
      ? {
          param: stream.partitions.param,
          list: await Promise.all(
            (await store.listPartitionStates(stream.name)).map(async (partitionState) => {
              const partitionCounts = await store.countRecords(stream, partitionState.partition);
              return {
                partition: partitionState.partition,
                records: partitionCounts.live,
                tombstoned: partitionCounts.deleted,
                condition: await conditions.read(stream.name, partitionState.partition),
                rejected: quarantined.get(partitionState.partition) ?? 0,
                ...stateStatus(partitionState, now, leaseHeld),
              };
            }),
          ),
          sources: state.partitionSources ? { ...state.partitionSources, describe: describePartitions(stream, state.partitionSources) } : null,
        }
      : null;
    const noPartitions = partitions !== null && partitions.list.length === 0 ? (state.lastError ?? noPartitionsMessage(stream)) : null;
    const { lastRun, completeScans, cursor, lagSeconds } = stateStatus(state, now, leaseHeld);
    streams.push({
      stream: stream.name,
      supported: state.supported,
      records: counts.live,
      tombstoned: counts.deleted,
      cursor,
      lagSeconds,
      completeScans,
      lastRun,
      lastError: state.lastError,
      condition: await conditions.read(stream.name),
      lastScan: state.lastScan,
      deletionHold: state.deletionHold,
      skipped: state.supported
        ? noPartitions
        : `unsupported since ${state.lastRunFinishedAt ?? '?'}: ${state.lastError ?? 'the list endpoint answered 404'}; ` +
          `a sync asks the list again at most every sync.unsupportedProbeSeconds (last asked ${state.lastRunStartedAt ?? 'never'}), the daemon at its start, a backfill at once`,
      // The stream's lag is the largest of its own and its partitions'.
      recordClockLagSeconds: await recordClock.streamLag(stream.name),
      unlistedRecords: (await recordClock.read({ stream: stream.name })).unlisted,
      rejected: await rejected.count(stream.name),
      undeclaredFields: (await listUndeclaredFields(executor, stream.name)).map(({ field, firstSeenAt, exampleRecordId }) => ({ field, firstSeenAt, exampleRecordId })),
      inProgress: inProgress(state),
      partitions,
    });
  }
  const writeStore = new WriteStore(executor);
  const writes = Object.fromEntries(
    Object.entries(await writeStore.countByStatus())
      .filter(([, count]) => count > 0)
      .sort(([a], [b]) => a.localeCompare(b)),
  );
  const writesNeedingReview = writes.needs_review
    ? (await writeStore.listByStatus('needs_review', options.needsReviewLimit ?? 20)).map(({ id, kind, outcome, error, createdAt, updatedAt }) => ({ id, kind, outcome, error, createdAt, updatedAt }))
    : [];
  const failedWrites = writes.failed
    ? (await writeStore.listByStatus('failed', options.failedWritesLimit ?? 20)).map(({ id, kind, error, httpStatus, finishedAt }) => ({ id, kind, error, httpStatus, finishedAt }))
    : [];
  const recentFailedWrites = writes.failed ? await writeStore.countFinishedSince('failed', new Date(now.getTime() - FAILED_WRITES_RECENT_HOURS * 3600_000).toISOString()) : 0;
  const endpoints = (await loadAllEndpoints(executor)).map(({ name, kind, deliveredSeq, disabledAt, failingSince, nextAttemptAt, lastStatus }) => ({ name, kind, deliveredSeq, enabled: disabledAt === null, failingSince, nextAttemptAt, lastStatus }));
  return {
    changelogSeq: await store.lastSeq(),
    oldestSeq: (await changelogPrunedThrough(executor)) + 1,
    consumers: await listConsumers(executor, now),
    streams,
    unsupported: streams.filter((stream) => !stream.supported).map((stream) => stream.stream),
    writes,
    writesNeedingReview,
    failedWrites,
    recentFailedWrites,
    endpoints,
    leases,
    waiting: leaseRows
      .filter((lease) => !lease.free && lease.name.startsWith(`${LEASE_REQUEST_PREFIX}stream:`))
      .map((lease) => ({ stream: lease.name.slice(`${LEASE_REQUEST_PREFIX}stream:`.length), waiter: lease.holder, until: lease.expiresAt })),
  };
}

/** The unfinished run a sync state's checkpoint holds, as `status` shows it. */
function inProgress(state: SyncState): StreamStatus['inProgress'] {
  return state.run ? { reason: state.run.reason, mode: state.run.mode, offset: state.run.offset, total: state.run.lastTotal ?? null, records: state.run.records } : null;
}

/** What one sync state row (a stream's or a partition's) says in `status`, at `now`; `leaseHeld`: the stream's lease is held. */
function stateStatus(state: SyncState, now: Date, leaseHeld: boolean): Omit<PartitionStatus, 'partition' | 'records' | 'tombstoned'> {
  const started = state.lastRunStartedAt;
  const ended = started !== null && state.lastRunFinishedAt !== null && state.lastRunFinishedAt >= started;
  return {
    cursor: state.cursor,
    lagSeconds: state.cursor === null ? null : Math.max(0, Math.round((now.getTime() - Date.parse(state.cursor)) / 1000)),
    completeScans: state.scanNumber,
    lastRun: {
      mode: state.lastRunMode,
      startedAt: state.lastRunStartedAt,
      finishedAt: state.lastRunFinishedAt,
      succeededAt: state.lastSuccessAt,
      requests: state.lastRunRequests,
      records: state.lastRunRecords,
      changes: state.lastRunChanges,
      state: started === null ? null : ended ? 'finished' : leaseHeld ? 'running' : 'unfinished',
    },
    lastError: state.lastError,
    lastScan: state.lastScan,
    deletionHold: state.deletionHold,
    inProgress: inProgress(state),
  };
}
