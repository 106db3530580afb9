/**
 * Job: the mirror's status per stream and the writes by status (the `status` command; the daemon
 * tests read it too). Reads the mirror only: no API settings needed. Works on both back ends:
 * SQLite (schema version `PRAGMA user_version`, health `PRAGMA quick_check`) and PostgreSQL (schema
 * version from `schema_version`, health: every table of the mirror present in its schema).
 */
import {
  Leases,
  listUndeclaredFields,
  MIGRATIONS,
  mirrorHealthCheck,
  mirrorSchemaVersion,
  RecordClockStore,
  RejectedRecords,
  MirrorStore,
  streamLeaseName,
  type DeletionHold,
  type LeaseState,
  type ScanOutcome,
} from '../src/mirror/index.ts';
import { changelogPrunedThrough, listConsumers, type ConsumerListing } from '../src/notify/index.ts';
import { STREAMS, type StreamName } from '../src/streams/index.ts';
import { WriteStore } from '../src/writes/index.ts';
import { MirrorDamagedError, MirrorNeedsMigrationError } from './mirror-errors.ts';
import { classifyMirrorError, mirrorLocation, openExistingMirror } from './open-mirror.ts';

/** The schema version this build reads: its last migration's (both back ends number them alike). */
const SCHEMA_VERSION = MIGRATIONS.at(-1)?.version ?? 0;

/** One stream's line of `status`. Times are ISO 8601. */
export interface StreamStatus {
  stream: StreamName;
  supported: boolean;
  /** Live rows (listed upstream) and tombstoned rows. */
  records: number;
  tombstoned: number;
  /** ISO server time: the next incremental run asks updatedAfter = cursor - overlap. */
  cursor: string | null;
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
}

/** What `status --json` prints. */
export interface MirrorStatus {
  /** Where the mirror is: the file path, or the PostgreSQL URL with its password masked. */
  database: string;
  /** The back end holding the mirror. */
  backend: 'sqlite' | 'postgres';
  /**
   * The mirror's health: `ok`, or what is wrong. SQLite: `PRAGMA quick_check` of the file (the
   * problems SQLite found; docs/operations.md "A damaged mirror"). PostgreSQL: every table of the
   * mirror is in its schema (`missing tables: ...` otherwise); the server keeps its storage consistent.
   */
  quickCheck: string;
  changelogSeq: number;
  /**
   * The oldest changelog seq kept: the retention (`changes.retainDays`, `changes prune`) pruned every
   * seq below it (1 when nothing was pruned).
   */
  oldestSeq: number;
  /** The named consumers of the changelog over HTTP, with their cursor and lag (docs/mirror.md "Named consumers"). */
  consumers: ConsumerListing[];
  streams: StreamStatus[];
  /** Writes by status (`failed`, `needs_review`, `queued`, `sending`, `succeeded`), only the statuses that occur. */
  writes: Record<string, number>;
  /** Who holds which lease (docs/operations.md "Running two daemons (replicas)"): the `leases` table, by name. */
  leases: LeaseState[];
}

export { MirrorNeedsMigrationError } from './mirror-errors.ts';

/**
 * Reads the status of every stream from the mirror at `dbPath` (a file path or a PostgreSQL URL),
 * opened READ-ONLY: `status` never migrates nor writes the mirror (a daemon may be writing it).
 * @throws MirrorMissingError when the file, or the PostgreSQL schema, does not exist (nothing has run yet)
 * @throws MirrorNeedsMigrationError when the file's schema is older than this bizops-sync's
 *   (`bizops-sync sync` or the daemon migrates it)
 * @throws MirrorDamagedError when SQLite cannot read the file (its header, or a page status reads:
 *   the message then carries quick_check's findings); ConfigError when the path is unusable.
 *   A file whose damaged pages status does not need is READ: `quickCheck` names the problems.
 */
export async function readStatus(dbPath: string): Promise<MirrorStatus> {
  const connection = await openExistingMirror(dbPath, { readonly: true });
  const location = mirrorLocation(dbPath);
  let quickCheck: string | undefined;
  try {
    const version = await mirrorSchemaVersion(connection);
    if (version < SCHEMA_VERSION) {
      throw new MirrorNeedsMigrationError(
        `the mirror ${location} is at schema version ${version}, this bizops-sync reads version ${SCHEMA_VERSION}; \`status\` does not migrate it: run \`bizops-sync sync\` (or start the daemon) once`,
      );
    }
    quickCheck = await mirrorHealthCheck(connection);
    const store = new MirrorStore(connection);
    const rejected = new RejectedRecords(store);
    const recordClock = new RecordClockStore(connection);
    const streams: StreamStatus[] = [];
    const leases = await new Leases(connection).list();
    const held = new Set(leases.filter((lease) => !lease.free).map((lease) => lease.name));
    for (const stream of Object.values(STREAMS)) {
      const state = await store.readSyncState(stream.name);
      const started = state.lastRunStartedAt;
      const ended = started !== null && state.lastRunFinishedAt !== null && state.lastRunFinishedAt >= started;
      const counts = await store.countRecords(stream);
      streams.push({
        stream: stream.name,
        supported: state.supported,
        records: counts.live,
        tombstoned: counts.deleted,
        cursor: state.cursor,
        completeScans: state.scanNumber,
        lastRun: {
          mode: state.lastRunMode,
          startedAt: state.lastRunStartedAt,
          finishedAt: state.lastRunFinishedAt,
          succeededAt: state.lastSuccessAt,
          requests: state.lastRunRequests,
          records: state.lastRunRecords,
          changes: state.lastRunChanges,
          state: started === null ? null : ended ? 'finished' : held.has(streamLeaseName(stream.name)) ? 'running' : 'unfinished',
        },
        lastError: state.lastError,
        lastScan: state.lastScan,
        deletionHold: state.deletionHold,
        skipped: state.supported
          ? null
          : `unsupported since ${state.lastRunFinishedAt ?? '?'}: ${state.lastError ?? 'the list endpoint answered 404'}; ` +
            `a sync asks the list again at most every sync.unsupportedProbeSeconds (last asked ${state.lastRunStartedAt ?? 'never'}), a backfill at once`,
        recordClockLagSeconds: (await recordClock.read(stream.name)).lagSeconds,
        rejected: await rejected.count(stream.name),
        undeclaredFields: (await listUndeclaredFields(connection, stream.name)).map(({ field, firstSeenAt, exampleRecordId }) => ({ field, firstSeenAt, exampleRecordId })),
        inProgress: state.run
          ? { reason: state.run.reason, mode: state.run.mode, offset: state.run.offset, total: state.run.lastTotal ?? null, records: state.run.records }
          : null,
      });
    }
    const writes = Object.fromEntries(
      Object.entries(await new WriteStore(connection).countByStatus())
        .filter(([, count]) => count > 0)
        .sort(([a], [b]) => a.localeCompare(b)),
    );
    return {
      database: location,
      backend: connection.dialect,
      quickCheck,
      changelogSeq: await store.lastSeq(),
      oldestSeq: (await changelogPrunedThrough(connection)) + 1,
      consumers: await listConsumers(connection),
      streams,
      writes,
      leases,
    };
  } catch (error) {
    // A read-only open is lazy: a damaged header shows at the first statement, a damaged page at the
    // first read of it (quick_check may have listed it already: then the line names its findings).
    const classified = classifyMirrorError(dbPath, error);
    if (classified instanceof MirrorDamagedError && quickCheck !== undefined && quickCheck !== 'ok') {
      throw new MirrorDamagedError(
        `the mirror ${dbPath} is damaged (PRAGMA quick_check: ${quickCheck}); restore it from a backup, or move it away and run \`bizops-sync backfill\``,
        { cause: error },
      );
    }
    throw classified;
  } finally {
    await connection.close();
  }
}
