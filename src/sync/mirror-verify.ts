/**
 * Verify (docs/sync.md "Verify"): is the mirror equal to the API? One complete scan of a stream (of
 * each of its partitions) at the rate budget's `backfill` priority, compared with the mirror page by
 * page, field by field, with the diff change detection uses (src/mirror/change-detection.ts
 * `diffRecord`), so that verify and sync agree on what a difference is. It writes nothing to the
 * mirror's records, changelog or sync state (its scratch list of listed ids lives in
 * `verify_listed`, src/mirror/verify-listing.ts), unless asked to repair.
 *
 * The scan is the engine's own: a `StreamRun` (src/sync/stream-run.ts) with a page sink
 * (`VerifySink`): the one paginator (drift gaps, endless-list guards), read-ahead, `createdBefore`
 * frozen at the server time of the first page, the id counting that finds ties and drift, the tie
 * re-reads and the completeness rule (src/sync/scan-check.ts) are those of every backfill. The sink
 * compares each id once, at its first listing (one version per scan): listed ids go to
 * `verify_listed`, so memory stays bounded by a page, and a partitioned stream's scans each keep a
 * listing of their own (a part of the verification's).
 *
 * Extras are decided after every partition was scanned: live rows of the scanned partitions (their
 * column holding a scanned value) that no scan of the verification listed. A record that moved to
 * another partition is listed there and is stale (its partition field differs), never extra.
 * Rows of no scanned partition are counted apart (`outside`). Only complete scans count extras: an
 * incomplete one cannot tell a record gone from one it did not reach. And a list that lists fewer
 * records (its totals) than the mirror holds live of what it scanned cannot prove the records it did
 * not list gone (a capped list looks like that): such a record is an extra only when the previous
 * complete scan missed it too (the two-scan rule), the rest are `unconfirmed`. Before either is
 * decided, when a live row no scan listed is left, each scan asks for the records created in its
 * frozen set's second (stream-run.ts `listedInBoundSecond`): those count as listed.
 *
 * What it reports per stream:
 *   - missing: listed by the API, absent from the mirror or tombstoned there;
 *   - extra: live in the mirror (and there when the verification began), never listed by a scan;
 *   - stale: in both, with fields that differ (the diff's fields, counted per field);
 *   - outside: live rows of no partition scanned (a partitioned stream);
 *   - unconfirmed: not listed, by a list whose totals do not account for the mirror's live rows.
 *
 * Repair (`repair: true`): under the stream's lease (src/mirror/leases.ts), each page's missing
 * and stale records are applied as a backfill applies them (`MirrorStore.applyRecords`: upserts and
 * their change events in one transaction), and, when every scan was complete, the extras are
 * tombstoned with the stream's gone event (held as a mass deletion as the sync holds one); the
 * unconfirmed ones get a miss counted, as a complete scan counts one (docs/decisions.md).
 */
import type { ApiClient } from '../client/client.ts';
import type { NotFoundError } from '../client/api-errors.ts';
import type { Page } from '../client/paginate.ts';
import { declaredFieldPaths, diffRecord, type DiffFields } from '../mirror/change-detection.ts';
import { listUndeclaredFields } from '../mirror/field-registry.ts';
import { confirmLease, LeaseLostError, Leases, PROCESS_LEASE_HOLDER, streamLeaseName, type HeldLease } from '../mirror/leases.ts';
import { MASS_DELETION_FLOOR, type AppendedChange, type MirrorStore, type RunCheckpoint, type ScanOutcome } from '../mirror/mirror-store.ts';
import { quarantineKey } from '../mirror/rejected-records.ts';
import { VerifyListing, type UnlistedScope } from '../mirror/verify-listing.ts';
import { silentLogger, type Logger } from '../logging/logger.ts';
import { partitionColumn, readField, type ApiRecord } from '../streams/define-stream.ts';
import { streamByName, type RegisteredStream, type StreamName } from '../streams/definitions.ts';
import { DEFAULT_MASS_DELETION_SHARE } from './sync-engine.ts';
import { noPartitionsMessage, readPartitions, type ConfiguredPartitions } from './partition-values.ts';
import { StreamRun, type PageSink, type RunEnvironment, type RunResult } from './stream-run.ts';

/** How many ids a report lists per kind of difference (the counts are whole). */
export const VERIFY_SAMPLE_SIZE = 20;

/** Most tie re-read rounds of one verification (as the engine's default `tieReReadRounds`). */
const TIE_REREAD_ROUNDS = 20;

/** Extras tombstoned per transaction by a repair. */
const TOMBSTONES_PER_TRANSACTION = 500;

/** Progress after each page (for a progress bar or log lines). */
export interface VerifyProgress {
  stream: StreamName;
  /** The partition being scanned (a partitioned stream); absent otherwise. */
  partition?: string;
  /** Always `verify`. */
  reason: 'verify';
  /** Items listed so far, every partition's (re-reads included). */
  records: number;
  /** Differences found so far (missing and stale; extras are counted at the end). */
  changes: number;
  /** `pagination.total` of the last page. */
  total: number;
  /** Offset of the next page. */
  offset: number;
  pages: number;
}

/**
 * One stream's verification.
 * `status`: `equal` (complete scans found no difference); `drift` (they found some: see the counts);
 * `incomplete` (a scan could not list every record: ties in an unstable order, a list cut short; or
 * the lists' totals do not account for the mirror's live rows and some were `unconfirmed`; missing
 * and stale are counted); `unsupported` (the list answered 404); `busy` (repair only: another process
 * holds the stream's lease); `failed` (`error` says why).
 */
export interface StreamVerification {
  stream: StreamName;
  status: 'equal' | 'drift' | 'incomplete' | 'unsupported' | 'busy' | 'failed';
  /** The last page's `pagination.total` (a partitioned stream: the sum over its partitions). */
  total: number;
  /** Distinct records the scans listed. */
  listed: number;
  /** List requests sent. */
  pages: number;
  /** A partitioned stream's scanned partitions (how many values were read); absent for an unpartitioned stream. */
  partitions?: number;
  /**
   * A partitioned stream's scans, one per partition value in the order read: what each listed and
   * found (`complete`: the scan listed every record its total names). Extra and outside rows are
   * decided once every partition was scanned (a record may have moved between them), so they are
   * counted for the stream only. Absent for an unpartitioned stream.
   */
  perPartition?: PartitionVerification[];
  /** Records the API lists that the mirror lacks (or holds tombstoned): how many, and the first ids. */
  missing: { count: number; ids: string[] };
  /** Live mirror records complete scans never listed; null when a scan was not complete. */
  extra: { count: number; ids: string[] } | null;
  /**
   * Live mirror records not listed by lists whose totals were below the mirror's live rows of what
   * they scanned, and not missed by the previous complete scan: possibly gone, possibly cut off by
   * the list (a capped result window); extras once a second complete scan misses them too. Null
   * when not counted (an incomplete scan), 0 when the lists accounted for every live row.
   */
  unconfirmed: { count: number; ids: string[] } | null;
  /** A partitioned stream's live rows of no scanned partition (their partition field holds another value); null for an unpartitioned stream. */
  outside: { count: number; ids: string[] } | null;
  /** Records in both whose fields differ: how many, per field how many records, and the first of them with their fields. */
  stale: { count: number; fields: Record<string, number>; records: { id: string; fields: string[] }[] };
  /** List items that failed their schema (counted as listed, not compared: docs/sync.md "Invalid records"). */
  invalid: number;
  /**
   * With repair: the change rows appended (records applied, tombstones), the tombstones among them,
   * the extras held back as a mass deletion (not tombstoned; `confirmDeletions` lets them through),
   * and the unconfirmed records that had a miss counted.
   */
  repaired?: { changes: number; tombstones: number; held: number; missesCounted: number };
  /** For `failed`, `unsupported`, `busy` and `incomplete`: what happened. */
  error?: string;
}

/** One partition's scan within a `StreamVerification` (`verify --json` prints them as `perPartition`). */
export interface PartitionVerification {
  /** The partition value read (`locationId` of the corrective actions). */
  partition: string;
  /** Whether the scan listed every record its total names. */
  complete: boolean;
  /** The last page's `pagination.total`. */
  total: number;
  /** Distinct records the scan listed. */
  listed: number;
  /** List requests sent. */
  pages: number;
  /** Records this partition lists that the mirror lacks (or holds tombstoned). */
  missing: number;
  /** Records this partition lists whose fields differ from the mirror's. */
  stale: number;
}

/** What `verifyStream` works with. */
export interface VerifyStreamOptions {
  /** Lists pages at priority `backfill`. */
  client: ApiClient;
  /** The mirror compared with (and, with repair, written). */
  store: MirrorStore;
  logger?: Logger;
  /** Apply the differences (module comment). Default false: read-only. */
  repair?: boolean;
  /** Who takes the stream's lease for a repair (default this process: `PROCESS_LEASE_HOLDER`), and its length (seconds; config `sync.leaseSeconds`). */
  lease?: { holder?: string; seconds: number };
  /**
   * A repair tombstones no extra when they are more than `MASS_DELETION_FLOOR` and more than this
   * share of the stream's live records (config `sync.massDeletionShare`; docs/sync.md "Mass
   * deletions held"), unless `confirmDeletions`. Default 0.1.
   */
  massDeletionShare?: number;
  /** Tombstone the extras however many (`verify --repair --confirm-deletions`). */
  confirmDeletions?: boolean;
  /** Called after each repair commit that appended changes (e.g. to wake the webhook dispatcher). */
  onChanges?: (changes: readonly AppendedChange[]) => void;
  signal?: AbortSignal;
  onProgress?: (progress: VerifyProgress) => void;
  /** Ids listed per kind of difference. Default `VERIFY_SAMPLE_SIZE`. */
  sampleSize?: number;
  /** First listings a scan keeps in memory (the rest are in `verify_listed`); default the engine's. */
  scanMemory?: number;
  /**
   * A list read once per value of a required parameter: each value is scanned with `param` = it,
   * and the extras are the rows whose `column` holds one of the values that no scan listed (rows
   * holding another value are `outside`). Absent: a partitioned stream's own values
   * (src/sync/partition-values.ts, as the sync reads them), else one list.
   */
  partitions?: { param: string; column: string; values: readonly string[] };
  /** The configuration's partition values (`sync.partitions`), joined to the derived and mirrored ones as the sync joins them. */
  configuredPartitions?: ConfiguredPartitions;
}

/** The scans of one verification: the stream as they read it, its partitions (or none), and the scope the extras are counted in. */
interface VerifyPlan {
  stream: RegisteredStream;
  values: readonly string[] | undefined;
  scope: UnlistedScope | undefined;
  /** The stream's definition partitions it: its change rows name their partition (not so for a stream read per value of the `partitions` option only). */
  namesPartitions: boolean;
}

/**
 * Verifies one stream against the API (module comment). Never throws for API, network or database
 * failures: they end as `status: 'failed'` with `error`.
 * @throws Error for an unknown stream name
 */
export async function verifyStream(streamName: StreamName | string, options: VerifyStreamOptions): Promise<StreamVerification> {
  const stream = streamByName(streamName);
  const logger = options.logger ?? silentLogger;
  const result: StreamVerification = {
    stream: stream.name,
    status: 'equal',
    total: 0,
    listed: 0,
    pages: 0,
    missing: { count: 0, ids: [] },
    extra: null,
    unconfirmed: null,
    outside: null,
    stale: { count: 0, fields: {}, records: [] },
    invalid: 0,
  };
  let plan: VerifyPlan;
  try {
    plan = await verifyPlan(stream, options);
  } catch (error) {
    result.status = 'failed';
    result.error = (error as Error).message;
    return result;
  }
  if (plan.values !== undefined) {
    result.partitions = plan.values.length;
    result.perPartition = [];
    result.outside = { count: 0, ids: [] };
    if (plan.values.length === 0) {
      // Nothing is read: equal when the mirror holds none of its records either.
      const live = (await options.store.countRecords(stream)).live;
      result.extra = { count: 0, ids: [] };
      result.unconfirmed = { count: 0, ids: [] };
      if (live > 0) {
        result.status = 'incomplete';
        result.extra = null;
        result.unconfirmed = null;
        result.error = `${noPartitionsMessage(stream, options.configuredPartitions)}; the mirror holds ${live} live records of it, which cannot be compared`;
      }
      return result;
    }
  }
  const leases = options.repair ? new Leases(options.store.executor, options.lease?.seconds) : undefined;
  let lease: HeldLease | undefined;
  let leaseTaken = false;
  let renewal: NodeJS.Timeout | undefined;
  const listing = new VerifyListing(options.store.executor);
  try {
    if (leases) {
      const acquired = await leases.acquire(streamLeaseName(stream.name), options.lease?.holder ?? PROCESS_LEASE_HOLDER);
      if (!acquired) {
        const held = await leases.state(streamLeaseName(stream.name));
        result.status = 'busy';
        result.error = `another process holds the stream's lease (${held?.holder ?? '?'} until ${held?.expiresAt ?? '?'}); run the repair again later, or with --wait`;
        return result;
      }
      lease = acquired.lease;
      leaseTaken = acquired.taken;
      renewal = setInterval(() => void leases.renew(acquired.lease).catch(() => undefined), Math.max(10, (leases.seconds * 1000) / 3));
      renewal.unref();
      result.repaired = { changes: 0, tombstones: 0, held: 0, missesCounted: 0 };
    }
    await listing.dropAbandoned();
    const verification = new Verification(plan, options, listing, result, lease && leases ? { lease, leases } : undefined, logger);
    await verification.run();
  } catch (error) {
    const err = error as Error;
    result.status = 'failed';
    result.error = options.signal?.aborted ? 'interrupted' : err.message;
    if (!(err instanceof LeaseLostError) && !options.signal?.aborted) logger.error({ stream: stream.name, err }, 'verify failed');
  } finally {
    if (renewal) clearInterval(renewal);
    await listing.clear().catch(() => undefined);
    if (lease && leaseTaken) await leases!.release(lease).catch(() => undefined);
  }
  return result;
}

/**
 * What a verification scans: the partitions given, else a partitioned stream's values as the sync
 * reads them, else the one list. A stream read per value of a parameter its definition does not
 * partition by (the `partitions` option) is scanned as if it did.
 * @throws Error when the partition values cannot be read
 */
async function verifyPlan(stream: RegisteredStream, options: VerifyStreamOptions): Promise<VerifyPlan> {
  const given = options.partitions;
  if (given) {
    const partitioned: RegisteredStream = { ...stream, partitions: { param: given.param, values: { from: 'configuration' } } };
    return { stream: partitioned, values: given.values, scope: { column: given.column, values: given.values }, namesPartitions: stream.partitions !== undefined };
  }
  if (!stream.partitions) return { stream, values: undefined, scope: undefined, namesPartitions: false };
  const column = partitionColumn(stream)!;
  const { values } = await readPartitions(options.store.executor, stream, options.configuredPartitions);
  return { stream, values, scope: { column, values }, namesPartitions: true };
}

/** One verification of one stream: a scan per partition (or one), then the extras, outside and unconfirmed rows. */
class Verification {
  private readonly startedAt = new Date().toISOString();
  private readonly sampleSize: number;
  private diffFields: DiffFields = { listed: [], known: () => false };
  private readonly stream: RegisteredStream;
  /** Items listed and pages sent by the partitions scanned before the current one (progress adds them up). */
  private readonly before = { records: 0, pages: 0 };
  /** Totals of the scans' final pages, summed. */
  private totals = 0;
  /** Live rows of the scanned scope when the verification began. */
  private liveAtStart = 0;
  /** The completed scans' runs with their listings: asked about their frozen set's second before the extras are decided. */
  private readonly scans: { run: StreamRun; listing: VerifyListing }[] = [];

  private readonly plan: VerifyPlan;
  private readonly options: VerifyStreamOptions;
  private readonly listing: VerifyListing;
  private readonly result: StreamVerification;
  private readonly repair: { lease: HeldLease; leases: Leases } | undefined;
  private readonly logger: Logger;

  /**
   * @param listing the verification's listing (an unpartitioned stream's scan uses it, each partition a part of it)
   * @param result filled in as the scans go
   * @param repair the stream's lease held for a repair; undefined: read-only
   */
  constructor(plan: VerifyPlan, options: VerifyStreamOptions, listing: VerifyListing, result: StreamVerification, repair: { lease: HeldLease; leases: Leases } | undefined, logger: Logger) {
    this.plan = plan;
    this.options = options;
    this.listing = listing;
    this.result = result;
    this.repair = repair;
    this.logger = logger;
    this.stream = plan.stream;
    this.sampleSize = options.sampleSize ?? VERIFY_SAMPLE_SIZE;
  }

  /** Scans each partition (or the one list), then decides the extras. */
  async run(): Promise<void> {
    // The fields the stream knows (the registry): compared like sync compares them.
    const undeclared = await listUndeclaredFields(this.options.store.executor, this.stream.name);
    const registered = new Set(undeclared.map((field) => field.field));
    const firstSeen = new Map(undeclared.map((field) => [field.field, field.firstSeenAt]));
    const declared = declaredFieldPaths(this.stream);
    this.diffFields = { listed: this.stream.listedFields, known: (path) => registered.has(path) && !declared.has(path), firstSeenAt: (path) => firstSeen.get(path) };
    // Rows written through from now on hold a version newer than the scans may list: never extras (verify-listing.ts `writtenAfter`).
    this.listing.writtenAfter = await this.options.store.lastSeq();
    // The mirror's live rows of what the scans read, before a repair changes them: what the lists' totals must account for.
    this.liveAtStart = await this.listing.liveAtStart(this.stream, this.startedAt, this.plan.scope);
    let complete = true;
    for (const partition of this.plan.values ?? ['']) {
      const scan = await this.scan(partition, this.plan.values === undefined ? this.listing : this.listing.part());
      if (scan === undefined) return; // unsupported
      complete &&= scan.outcome === 'complete' && !scan.missesWithheld;
    }
    if (!complete) {
      this.result.status = 'incomplete';
      return;
    }
    await this.decideExtras();
    if (this.result.status === 'incomplete') return;
    const drift = this.result.missing.count + this.result.stale.count + (this.result.extra?.count ?? 0) + (this.result.outside?.count ?? 0);
    this.result.status = drift > 0 ? 'drift' : 'equal';
  }

  /**
   * One partition's scan (or the list's): a `StreamRun` whose pages go to a `VerifySink`.
   * @returns how the scan ended; undefined when the list answered 404 (the verification is `unsupported`)
   * @throws what the run throws: a failed request, a lost lease, an abort
   */
  private async scan(partition: string, listing: VerifyListing): Promise<ScanOutcome | undefined> {
    const { stream, options } = this;
    const checkpoint: RunCheckpoint = { mode: 'complete', reason: 'reconcile', startedAt: this.startedAt, offset: 0, pages: 0, records: 0, changes: 0 };
    const runResult: RunResult = {
      stream: stream.name,
      ...(partition ? { partition } : {}),
      reason: 'reconcile',
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
    const sink = new VerifySink(this, stream.key, listing, partition);
    const found = { missing: this.result.missing.count, stale: this.result.stale.count };
    const run = new StreamRun(
      stream,
      partition,
      checkpoint,
      runResult,
      {
        signal: options.signal,
        onProgress: (progress) =>
          options.onProgress?.({
            stream: stream.name,
            ...(partition ? { partition } : {}),
            reason: 'verify',
            records: this.before.records + progress.records,
            changes: this.result.missing.count + this.result.stale.count,
            total: progress.total,
            offset: progress.offset,
            pages: this.before.pages + progress.pages,
          }),
      },
      this.environment(),
      sink,
    );
    try {
      await run.execute();
    } finally {
      this.result.pages += runResult.pages;
      this.before.records += runResult.records;
      this.before.pages += runResult.pages;
    }
    if (runResult.status === 'unsupported') {
      this.result.status = 'unsupported';
      this.result.error = `GET ${runResult.notFoundUrl ?? stream.request.path} answered 404: the server has no list for this stream, so it cannot be verified`;
      return undefined;
    }
    const outcome = sink.outcome!;
    this.scans.push({ run, listing });
    this.result.perPartition?.push({
      partition,
      complete: outcome.outcome === 'complete' && !outcome.missesWithheld,
      total: outcome.total,
      listed: outcome.distinctIds,
      pages: runResult.pages,
      missing: this.result.missing.count - found.missing,
      stale: this.result.stale.count - found.stale,
    });
    this.result.listed += outcome.distinctIds;
    this.result.total += outcome.total;
    this.totals += outcome.total;
    if (outcome.outcome === 'incomplete' || outcome.missesWithheld) {
      const where = partition ? ` (${stream.partitions!.param} ${partition})` : '';
      const why =
        outcome.outcome === 'incomplete'
          ? `listed ${outcome.distinctIds} distinct records of a total of ${outcome.total} (${outcome.reason})`
          : outcome.missesWithheld === 'unnamed-items'
            ? `listed ${outcome.unnamed ?? 'some'} item(s) without an id, any of which may be a record it did not list`
            : `listed ${outcome.distinctIds} distinct records, more than its total of ${outcome.total} explains`;
      const reason = `the scan${where} ${why}: extra records cannot be counted; run verify again`;
      this.result.error = this.result.error ? `${this.result.error}; ${reason}` : reason;
      this.result.extra = null;
      this.result.unconfirmed = null;
    }
    return outcome;
  }

  /** What the scans' runs may do: list pages (renewing the lease first with repair), and, with repair only, write under it. */
  private environment(): RunEnvironment {
    const { options, repair } = this;
    return {
      client: options.client,
      store: options.store,
      logger: this.logger,
      database: (step) => step(),
      fenced: (fn) => this.underLease(fn),
      beforeRequest: async () => {
        if (repair) await repair.leases.ensureHeld(repair.lease);
      },
      onChanges: options.onChanges,
      tieReReadRounds: TIE_REREAD_ROUNDS,
      ...(options.scanMemory !== undefined ? { scanMemory: options.scanMemory } : {}),
      massDeletionShare: options.massDeletionShare ?? DEFAULT_MASS_DELETION_SHARE,
    };
  }

  /**
   * After every scan completed: the extras (rows of the scanned scope no scan listed), the rows
   * outside it, and, when the lists' totals are below the mirror's live rows of the scope, which
   * extras a previous complete scan confirms (module comment); with repair, tombstones and misses.
   */
  private async decideExtras(): Promise<void> {
    const { stream, listing, startedAt, sampleSize, plan } = this;
    const scope = plan.scope;
    await this.listBoundSeconds();
    if (scope) this.result.outside = await listing.unlisted(stream, startedAt, sampleSize, scope, 'outside');
    const live = this.liveAtStart;
    const accounted = this.totals >= live;
    if (accounted) {
      this.result.extra = await listing.unlisted(stream, startedAt, sampleSize, scope, 'inside');
      this.result.unconfirmed = { count: 0, ids: [] };
    } else {
      this.result.extra = await listing.unlisted(stream, startedAt, sampleSize, scope, 'confirmed');
      this.result.unconfirmed = await listing.unlisted(stream, startedAt, sampleSize, scope, 'unconfirmed');
    }
    if (this.repair && this.result.extra.count > 0) await this.tombstoneExtras(this.result.extra.count, accounted ? 'inside' : 'confirmed');
    if (this.result.unconfirmed.count > 0) {
      if (this.repair) {
        const counted = await this.underLease((store) => listing.countMisses(store, stream, startedAt, scope));
        this.result.repaired!.missesCounted += counted;
      }
      this.result.status = 'incomplete';
      this.result.error =
        `the list${scope ? 's' : ''} listed ${this.totals} records (${scope ? 'their totals' : 'its total'}) while the mirror holds ${live} live records of ${scope ? 'them' : 'it'}: ` +
        `${this.result.unconfirmed.count} records not listed may be gone or cut off by the list (a capped list looks like this), so they are not called extra until a second complete scan misses them too` +
        (this.repair ? ' (a miss was counted for each)' : ' (verify --repair counts a miss for each)');
      this.logger.warn({ stream: stream.name, total: this.totals, live, unconfirmed: this.result.unconfirmed.count }, `verify: ${this.result.error}`);
    }
  }

  /**
   * Compares records listed for the first time with their stored rows: the diff of change
   * detection over the stored `raw`, and each typed column against the field it holds (a row edited
   * in place keeps its content hash, so the hash is not trusted here). With repair, applies those
   * that differ (their hashes forgotten first, so that change detection rewrites them). A row a
   * write-through wrote after the page's request was sent (`written_seq` above `changelogMark`) is
   * not compared: it holds a version at least as new as the page's (docs/sync.md "Write-throughs
   * during a run"); the repair leaves it as well.
   * @param partition the partition they were listed in ('' for none): their change rows name it
   * @param changelogMark the page's changelog mark (`PageSink.take`)
   * @returns differences found
   */
  async compare(records: readonly ApiRecord[], listing: VerifyListing, partition: string, changelogMark: number): Promise<number> {
    if (records.length === 0) return 0;
    const key = this.stream.key;
    const stored = await listing.storedRows(this.stream, records.map((record) => String(record[key])));
    const missing: ApiRecord[] = [];
    const stale: ApiRecord[] = [];
    for (const record of records) {
      const id = String(record[key]);
      const row = stored.get(id);
      const writtenSeq = row?.columns.written_seq;
      if (writtenSeq !== undefined && writtenSeq !== null && Number(writtenSeq) > changelogMark) continue;
      if (row === undefined || row.deleted) {
        this.result.missing.count += 1;
        if (this.result.missing.ids.length < this.sampleSize) this.result.missing.ids.push(id);
        missing.push(record);
        continue;
      }
      const storedAt = typeof row.columns.synced_at === 'string' ? row.columns.synced_at : undefined;
      const fields = new Set(Object.keys(diffRecord(JSON.parse(row.raw) as ApiRecord, record, this.diffFields, storedAt)));
      for (const { column, field } of this.stream.columns) {
        const value = readField(record, field);
        if (value !== undefined && !sameColumnValue(row.columns[column], value)) fields.add(field);
      }
      if (fields.size === 0) continue;
      this.result.stale.count += 1;
      for (const field of fields) this.result.stale.fields[field] = (this.result.stale.fields[field] ?? 0) + 1;
      if (this.result.stale.records.length < this.sampleSize) this.result.stale.records.push({ id, fields: [...fields] });
      stale.push(record);
    }
    if (this.repair && missing.length + stale.length > 0) {
      const appended = await this.underLease(async (store) => {
        await listing.forgetHashes(store, this.stream, stale.map((record) => String(record[key])));
        return store.applyRecords(this.stream, [...missing, ...stale], { writtenAfter: changelogMark, ...(partition && this.plan.namesPartitions ? { partition } : {}) });
      });
      this.noteRepaired(appended, 0);
    }
    return missing.length + stale.length;
  }

  /** An invalid item listed for the first time (quarantine-worthy): counted, not compared. */
  noteInvalid(count: number): void {
    this.result.invalid += count;
  }

  /**
   * When a live row no scan listed is left: each scan's frozen set's second (src/sync/stream-run.ts
   * `listedInBoundSecond`), records the scan's bound left out though the mirror may hold them, noted
   * as listed by that scan; the ones the mirror held live when the verification began count in the
   * totals, as the scans' own records do. Nothing is asked when every row was listed.
   */
  private async listBoundSeconds(): Promise<void> {
    const { stream, listing, startedAt, plan } = this;
    const unlisted = (await listing.unlisted(stream, startedAt, 0, plan.scope, 'inside')).count + (plan.scope ? (await listing.unlisted(stream, startedAt, 0, plan.scope, 'outside')).count : 0);
    if (unlisted === 0) return;
    const found = new Set<string>();
    for (const scan of this.scans) {
      const { ids } = await scan.run.listedInBoundSecond();
      const listedBefore = await scan.listing.listed(ids); // on the scan's first page (no bound): in its total already
      const fresh = ids.filter((id) => !listedBefore.has(id));
      await scan.listing.note(new Map(fresh.map((id) => [id, -1])));
      for (const id of fresh) found.add(id);
    }
    this.totals += await listing.liveAtStartAmong(stream, startedAt, [...found], plan.scope);
  }

  /**
   * Tombstones the extras in transactions of `TOMBSTONES_PER_TRANSACTION`, each under the lease;
   * none when they make a mass deletion (`massDeletionShare`) and it is not confirmed.
   */
  private async tombstoneExtras(extras: number, where: 'inside' | 'confirmed'): Promise<void> {
    const share = this.options.massDeletionShare ?? DEFAULT_MASS_DELETION_SHARE;
    if (!this.options.confirmDeletions && extras > MASS_DELETION_FLOOR) {
      const live = this.liveAtStart;
      if (extras > share * live) {
        this.result.repaired!.held += extras;
        this.logger.warn(
          { stream: this.stream.name, extras, live, share },
          `verify --repair: ${extras} extra records of ${live} live are more than sync.massDeletionShare (${share}); none is tombstoned. If they are really gone: verify --repair --confirm-deletions`,
        );
        return;
      }
    }
    for (;;) {
      const appended = await this.underLease((store) =>
        this.listing.tombstoneUnlisted(store, this.stream, this.startedAt, TOMBSTONES_PER_TRANSACTION, this.plan.scope, { where, namePartition: this.plan.namesPartitions }),
      );
      if (appended.length === 0) return;
      this.noteRepaired(appended, appended.length);
    }
  }

  private noteRepaired(appended: AppendedChange[], tombstones: number): void {
    this.result.repaired!.changes += appended.length;
    this.result.repaired!.tombstones += tombstones;
    if (appended.length > 0) this.options.onChanges?.(appended);
  }

  /**
   * Runs `fn` in one transaction that first confirms (and renews) the stream's lease.
   * @throws LeaseLostError when another process took it; Error without repair (verify alone writes nothing)
   */
  private underLease<T>(fn: (store: MirrorStore) => Promise<T>): Promise<T> {
    const repair = this.repair;
    if (!repair) return Promise.reject(new Error(`${this.stream.name}: verify without --repair writes nothing`));
    return this.options.store.transaction(async (store) => {
      await confirmLease(store.executor, repair.lease, repair.leases.seconds);
      return fn(store);
    });
  }
}

/**
 * Where a verification's scan puts its pages (`PageSink`, src/sync/stream-run.ts): each id is noted
 * in the scan's listing at its first listing and its record compared with the mirror then; the
 * listing says what the scan listed beyond the run's memory, and counts its distinct ids.
 */
class VerifySink implements PageSink {
  /** How the scan ended, once it did. */
  outcome: ScanOutcome | undefined;

  /**
   * @param key the stream's record key
   * @param partition the partition this scan reads ('' for none)
   */
  private readonly verification: Verification;
  private readonly key: string;
  private readonly listing: VerifyListing;
  private readonly partition: string;

  constructor(verification: Verification, key: string, listing: VerifyListing, partition: string) {
    this.verification = verification;
    this.key = key;
    this.listing = listing;
    this.partition = partition;
  }

  async take(page: Page<ApiRecord>, _listedBefore: ReadonlySet<string>, changelogMark: number): Promise<number> {
    const key = this.key;
    const positioned: { id: string; position: number; record?: ApiRecord }[] = page.items.map((record, index) => ({ id: String(record[key]), position: page.offset + index, record }));
    for (const item of page.rejected ?? []) positioned.push({ id: quarantineKey(item.raw, key), position: page.offset + item.index });
    const listed = await this.listing.listed(positioned.map(({ id }) => id));
    const fresh = new Map<string, number>();
    const toCompare: ApiRecord[] = [];
    let invalid = 0;
    for (const { id, position, record } of positioned) {
      if (listed.has(id) || fresh.has(id)) continue;
      fresh.set(id, position);
      if (record) toCompare.push(record);
      else invalid += 1;
    }
    await this.listing.note(fresh);
    this.verification.noteInvalid(invalid);
    return this.verification.compare(toCompare, this.listing, this.partition, changelogMark);
  }

  listedEarlier(ids: readonly string[]): Promise<ReadonlySet<string>> {
    return this.listing.listed(ids);
  }

  distinctIds(): Promise<number> {
    return this.listing.count();
  }

  async finish(scan: ScanOutcome): Promise<void> {
    this.outcome = scan;
  }

  async unsupported(_notFound: NotFoundError): Promise<void> {
    // The verification says so (status `unsupported`); nothing is written.
  }
}

/**
 * A typed column's stored value against the field's value in the API's item, as the mirror stores
 * it (src/mirror/mirror-store.ts: booleans 0/1, objects and arrays JSON text, null as null).
 */
function sameColumnValue(stored: unknown, value: unknown): boolean {
  const expected = value === null ? null : typeof value === 'boolean' ? (value ? 1 : 0) : typeof value === 'object' ? JSON.stringify(value) : value;
  if (stored === expected) return true;
  // PostgreSQL may hand a bigint back as text, a REAL as a number: compare numbers as numbers.
  return typeof expected === 'number' && stored !== null && stored !== '' && Number(stored) === expected;
}
