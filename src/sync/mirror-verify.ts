/**
 * Verify (docs/sync.md "Verify"): is the mirror equal to the API? One complete scan of a stream at
 * the rate budget's `backfill` priority, compared with the mirror page by page, field by field,
 * with the diff change detection uses (src/mirror/change-detection.ts `diffRecord`), so that verify
 * and sync agree on what a difference is. It writes nothing to the mirror's records, changelog or
 * sync state (its scratch list of listed ids lives in `verify_listed`, src/mirror/verify-listing.ts),
 * unless asked to repair.
 *
 * The scan is the backfill's: the one paginator (src/client/paginate.ts: drift gaps, endless-list
 * guards), `createdBefore` frozen at the server time of the first page, `sortBy=createdAt`, and the
 * engine's completeness rule and tie re-reads (src/sync/scan-check.ts). Each id is compared once,
 * at its first listing (one version per scan). Memory is bounded by a page: listed ids go to
 * `verify_listed`, each page's stored rows are read by its ids, and at the end the live rows the
 * scan never listed are counted by one query (the extras). Only a complete scan counts extras: an
 * incomplete one cannot tell a record gone from one it did not reach.
 *
 * What it reports per stream:
 *   - missing: listed by the API, absent from the mirror or tombstoned there;
 *   - extra: live in the mirror (and there when the scan began), never listed by a complete scan;
 *   - stale: in both, with fields that differ (the diff's fields, counted per field).
 *
 * Repair (`repair: true`): under the stream's lease (src/mirror/leases.ts), each page's missing
 * and stale records are applied as a backfill applies them (`MirrorStore.applyRecords`: upserts and
 * their change events in one transaction), and, when the scan is complete, the extras are
 * tombstoned with the stream's gone event. The scan itself proves them gone, so repair does not
 * wait for a second scan (docs/decisions.md).
 */
import type { ApiClient } from '../client/client.ts';
import { NotFoundError } from '../client/api-errors.ts';
import { LIST_PAGE_LIMIT, paginateByOffset, type Page, type PositionRange } from '../client/paginate.ts';
import { declaredFieldPaths, diffRecord, type DiffFields } from '../mirror/change-detection.ts';
import { listUndeclaredFields } from '../mirror/field-registry.ts';
import { confirmLease, LeaseLostError, Leases, PROCESS_LEASE_HOLDER, streamLeaseName, type HeldLease } from '../mirror/leases.ts';
import { MASS_DELETION_FLOOR, type AppendedChange, type MirrorStore, type RunCheckpoint } from '../mirror/mirror-store.ts';
import { quarantineKey } from '../mirror/rejected-records.ts';
import { VerifyListing, type FirstListing } from '../mirror/verify-listing.ts';
import { silentLogger, type Logger } from '../logging/logger.ts';
import { partitionColumn, readField, type ApiRecord } from '../streams/define-stream.ts';
import { streamByName, type RegisteredStream, type StreamName } from '../streams/definitions.ts';
import { DEFAULT_MASS_DELETION_SHARE } from './sync-engine.ts';
import { noPartitionsMessage, partitionValues, type ConfiguredPartitions } from './partition-values.ts';
import { creditFound, noteTie, regionAt, regionPages, requiredIds, scanOutcome, tallyPage } from './scan-check.ts';

/** How many ids a report lists per kind of difference (the counts are whole). */
export const VERIFY_SAMPLE_SIZE = 20;

/** Most tie re-read rounds of one verification (as the engine's default `tieReReadRounds`). */
const TIE_REREAD_ROUNDS = 20;

/** Extras tombstoned per transaction by a repair. */
const TOMBSTONES_PER_TRANSACTION = 500;

/** Progress after each page (for a progress bar or log lines). */
export interface VerifyProgress {
  stream: StreamName;
  /** Always `verify`. */
  reason: 'verify';
  /** Items listed so far (re-reads included). */
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
 * `status`: `equal` (a complete scan found no difference); `drift` (it found some: see the counts);
 * `incomplete` (the scan could not list every record: ties in an unstable order, a list cut short;
 * missing and stale are counted, extras are not); `unsupported` (the list answered 404);
 * `busy` (repair only: another process holds the stream's lease); `failed` (`error` says why).
 */
export interface StreamVerification {
  stream: StreamName;
  status: 'equal' | 'drift' | 'incomplete' | 'unsupported' | 'busy' | 'failed';
  /** The last page's `pagination.total`. */
  total: number;
  /** Distinct records the scan listed. */
  listed: number;
  /** List requests sent. */
  pages: number;
  /** Records the API lists that the mirror lacks (or holds tombstoned): how many, and the first ids. */
  missing: { count: number; ids: string[] };
  /** Live mirror records a complete scan never listed; null when the scan was not complete. */
  extra: { count: number; ids: string[] } | null;
  /** Records in both whose fields differ: how many, per field how many records, and the first of them with their fields. */
  stale: { count: number; fields: Record<string, number>; records: { id: string; fields: string[] }[] };
  /** List items that failed their schema (counted as listed, not compared: docs/sync.md "Invalid records"). */
  invalid: number;
  /**
   * With repair: the change rows appended (records applied, tombstones), the tombstones among them,
   * and the extras held back as a mass deletion (not tombstoned; `confirmDeletions` lets them through).
   */
  repaired?: { changes: number; tombstones: number; held: number };
  /** For `failed`, `unsupported` and `busy`: what happened. */
  error?: string;
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
  /**
   * A list read once per value of a required parameter (a partitioned stream): each value is
   * scanned with `param` = it and compared with the rows whose `column` holds it (its extras are
   * counted among those rows only); the counts add up into one verification of the stream. Absent:
   * one list.
   */
  partitions?: { param: string; column: string; values: readonly string[] };
  /**
   * The configuration's partition values (`sync.partitions`): for a partitioned stream verified
   * without `partitions`, its values are these, else the ones mirrored from its source stream, as
   * the sync reads them (src/sync/partition-values.ts).
   */
  configuredPartitions?: ConfiguredPartitions;
}

/** One part of a stream a verification scans: a partition (its list parameter and value, the column holding it), or the whole list. */
interface VerifyScope {
  param: string;
  column: string;
  value: string;
}

/** The scan's own bookkeeping: a checkpoint as the engine keeps one (never saved), and the drift counters. */
interface ScanState {
  run: RunCheckpoint;
  removed: number;
  added: number;
  /** Items listed (re-reads included). */
  items: number;
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
    stale: { count: 0, fields: {}, records: [] },
    invalid: 0,
  };
  let partitions = options.partitions;
  if (stream.partitions && partitions === undefined) {
    // Its list requires a parameter (docs/sync.md "Partitioned streams"): one scan per value, the
    // values the sync reads (configured, else mirrored from another stream).
    const column = partitionColumn(stream)!;
    try {
      partitions = { param: stream.partitions.param, column, values: await partitionValues(options.store.executor, stream, options.configuredPartitions) };
    } catch (error) {
      result.status = 'failed';
      result.error = (error as Error).message;
      return result;
    }
    if (partitions.values.length === 0) {
      // Nothing is read: equal when the mirror holds none of its records either.
      const live = (await options.store.countRecords(stream)).live;
      result.extra = { count: 0, ids: [] };
      if (live > 0) {
        result.status = 'incomplete';
        result.extra = null;
        result.error = `${noPartitionsMessage(stream, options.configuredPartitions)}; the mirror holds ${live} live records of it, which cannot be compared`;
      }
      return result;
    }
  }
  let listing: VerifyListing | undefined;
  const leases = options.repair ? new Leases(options.store.executor, options.lease?.seconds) : undefined;
  let lease: HeldLease | undefined;
  let leaseTaken = false;
  let renewal: NodeJS.Timeout | undefined;
  try {
    if (leases) {
      const acquired = await leases.acquire(streamLeaseName(stream.name), options.lease?.holder ?? PROCESS_LEASE_HOLDER);
      if (!acquired) {
        const held = await leases.state(streamLeaseName(stream.name));
        result.status = 'busy';
        result.error = `another process holds the stream's lease (${held?.holder ?? '?'} until ${held?.expiresAt ?? '?'}); run the repair again later`;
        return result;
      }
      lease = acquired.lease;
      leaseTaken = acquired.taken;
      renewal = setInterval(() => void leases.renew(acquired.lease).catch(() => undefined), Math.max(10, (leases.seconds * 1000) / 3));
      renewal.unref();
      result.repaired = { changes: 0, tombstones: 0, held: 0 };
    }
    await new VerifyListing(options.store.executor).dropAbandoned();
    const parts: (VerifyScope | undefined)[] = partitions ? partitions.values.map((value) => ({ param: partitions.param, column: partitions.column, value })) : [undefined];
    for (const scope of parts) {
      // One scratch list per part: its extras are the rows of that part it did not list.
      listing = new VerifyListing(options.store.executor);
      await new Verification(stream, options, listing, result, lease && leases ? { lease, seconds: leases.seconds } : undefined, logger, scope).scan();
      await listing.clear();
      listing = undefined;
    }
  } catch (error) {
    const err = error as Error;
    if (error instanceof NotFoundError && stream.request.unsupportedOn404 && result.pages === 0) {
      result.status = 'unsupported';
      result.error = `GET ${error.url ?? stream.request.path} answered 404: the server has no list for this stream, so it cannot be verified`;
    } else {
      result.status = 'failed';
      result.error = options.signal?.aborted ? 'interrupted' : err.message;
      if (!(err instanceof LeaseLostError) && !options.signal?.aborted) logger.error({ stream: stream.name, err }, 'verify failed');
    }
  } finally {
    if (renewal) clearInterval(renewal);
    await listing?.clear().catch(() => undefined);
    if (lease && leaseTaken) await leases!.release(lease).catch(() => undefined);
  }
  return result;
}

/** One verification of one stream: its scan, page comparison, tie re-reads and end. */
class Verification {
  private readonly state: ScanState;
  private readonly startedAt = new Date().toISOString();
  private readonly sampleSize: number;
  private diffFields: DiffFields = { listed: [], known: () => false };
  private readonly stream: RegisteredStream;
  private readonly options: VerifyStreamOptions;
  private readonly listing: VerifyListing;
  private readonly result: StreamVerification;
  private readonly repair: { lease: HeldLease; seconds: number } | undefined;
  private readonly logger: Logger;
  /** The partition this scan reads, or undefined for the whole list. */
  private readonly scope: VerifyScope | undefined;

  /**
   * @param result the stream's verification: this scan adds its counts to it (several partitions
   *   add up into one)
   */
  constructor(
    stream: RegisteredStream,
    options: VerifyStreamOptions,
    listing: VerifyListing,
    result: StreamVerification,
    repair: { lease: HeldLease; seconds: number } | undefined,
    logger: Logger,
    scope?: VerifyScope,
  ) {
    this.scope = scope;
    this.stream = stream;
    this.options = options;
    this.listing = listing;
    this.result = result;
    this.repair = repair;
    this.logger = logger;
    this.sampleSize = options.sampleSize ?? VERIFY_SAMPLE_SIZE;
    this.state = { run: { mode: 'complete', reason: 'reconcile', startedAt: this.startedAt, offset: 0, pages: 0, records: 0, changes: 0 }, removed: 0, added: 0, items: 0 };
  }

  /** Pages to the end, re-reads ties when short, then counts the extras (complete scans only). */
  async scan(): Promise<void> {
    // The fields the stream knows (the registry): compared like sync compares them.
    const undeclared = await listUndeclaredFields(this.options.store.executor, this.stream.name);
    const registered = new Set(undeclared.map((field) => field.field));
    const firstSeen = new Map(undeclared.map((field) => [field.field, field.firstSeenAt]));
    const declared = declaredFieldPaths(this.stream);
    this.diffFields = { listed: this.stream.listedFields, known: (path) => registered.has(path) && !declared.has(path), firstSeenAt: (path) => firstSeen.get(path) };
    const pages = paginateByOffset((offset) => this.fetchPage(offset), {
      label: `GET ${this.stream.request.path}`,
      stepBackOnShrink: true,
      idOf: (item) => String(item[this.stream.key]),
    });
    for await (const step of pages) {
      const { page } = step;
      this.noteTotal(page.pagination.total, step.kind === 'gap');
      const { fresh, repeated, slid } = await this.comparePage(page, step.kind === 'frontier' ? { firstRead: true } : { firstRead: false, gap: step.gap });
      if (step.gap) {
        const { from, to } = step.gap;
        const inTies = (this.state.run.tieRegions ?? []).some((region) => region.from <= to && region.to >= from);
        this.state.run.slidFound = (this.state.run.slidFound ?? 0) + (inTies ? to - from + 1 : slid);
      }
      tallyPage(this.state.run, page.pagination.total, fresh, repeated);
      this.state.run.offset = step.nextOffset;
      this.progress(page);
    }
    let outcome = scanOutcome(this.state.run, await this.listing.count(), 0);
    if (outcome.outcome === 'incomplete' && (this.state.run.tieRegions ?? []).length > 0) {
      const reReads = await this.reReadTies();
      outcome = scanOutcome(this.state.run, await this.listing.count(), reReads);
    }
    this.result.listed += outcome.distinctIds;
    this.result.total += outcome.total;
    const where = this.scope ? ` (${this.scope.param} ${this.scope.value})` : '';
    if (outcome.outcome === 'incomplete') {
      this.result.status = 'incomplete';
      this.result.extra = null;
      this.result.error = `the scan${where} listed ${outcome.distinctIds} distinct records of a total of ${outcome.total} (${outcome.reason}): extra records cannot be counted; run verify again`;
      this.logger.warn({ stream: this.stream.name, ...(this.scope ? { partition: this.scope.value } : {}), reason: outcome.reason, total: outcome.total, distinctIds: outcome.distinctIds }, 'verify: incomplete scan; extras not counted');
      return;
    }
    const extra = await this.listing.unlisted(this.stream, this.startedAt, this.sampleSize, this.scope);
    // An earlier part that was incomplete leaves the stream's extras uncounted (null).
    if (this.result.status !== 'incomplete') {
      const counted = this.result.extra ?? { count: 0, ids: [] };
      this.result.extra = { count: counted.count + extra.count, ids: [...counted.ids, ...extra.ids].slice(0, this.sampleSize) };
    }
    if (this.repair && extra.count > 0) await this.tombstoneExtras(extra.count);
    if (this.result.status === 'incomplete') return;
    const drift = this.result.missing.count + this.result.stale.count + (this.result.extra?.count ?? 0);
    this.result.status = drift > 0 ? 'drift' : 'equal';
  }

  /** The page at `offset` as a backfill asks it: sorted by createdAt, the set frozen after the first page. */
  private fetchPage(offset: number): Promise<Page<ApiRecord>> {
    this.options.signal?.throwIfAborted();
    const request = this.stream.request;
    return this.options.client
      .listPage<ApiRecord>(request.path, offset, {
        itemsKey: request.itemsKey,
        itemSchema: this.stream.itemSchema,
        priority: 'backfill',
        signal: this.options.signal,
        invalidItems: 'collect',
        query: { ...request.filters, ...(this.scope ? { [this.scope.param]: this.scope.value } : {}), sortBy: request.sort.by, sortOrder: request.sort.order, createdBefore: this.state.run.createdBefore },
      })
      .then((page) => {
        this.result.pages += 1;
        this.state.run.pages += 1;
        if (this.state.run.createdBefore === undefined) {
          // The server's clock at the first page, floored to the second, as the engine freezes a scan's set.
          const serverNow = page.serverTime?.getTime() ?? Date.now();
          this.state.run.createdBefore = new Date(Math.floor(serverNow / 1000) * 1000).toISOString();
        }
        return page;
      });
  }

  /** Drops and rises of the total between answers (as the engine's `noteTotal`). */
  private noteTotal(total: number, afterEnd: boolean): void {
    const run = this.state.run;
    const previous = run.lastTotal;
    if (previous !== undefined && total < previous) {
      this.state.removed += previous - total;
      if (afterEnd) run.removedAfterEnd = (run.removedAfterEnd ?? 0) + previous - total;
      else run.removedWhileReading = (run.removedWhileReading ?? 0) + previous - total;
    }
    if (previous !== undefined && total > previous) this.state.added += total - previous;
    run.lastTotal = total;
    run.lowestTotal = Math.min(run.lowestTotal ?? total, total);
  }

  /** A page's ids with their positions; quarantined items under their quarantine key. */
  private positionedIds(page: Page<ApiRecord>): { id: string; position: number; record?: ApiRecord }[] {
    const rejected = [...(page.rejected ?? [])].sort((left, right) => left.index - right.index);
    const out: { id: string; position: number; record?: ApiRecord }[] = [];
    let index = 0;
    let next = 0;
    for (const item of page.items) {
      while (next < rejected.length && rejected[next]!.index === index) {
        next += 1;
        index += 1;
      }
      out.push({ id: String(item[this.stream.key]), position: page.offset + index, record: item });
      index += 1;
    }
    for (const item of rejected) out.push({ id: quarantineKey(item.raw, this.stream.key), position: page.offset + item.index });
    return out;
  }

  /**
   * Notes a page's ids (ties, drift, as the engine's `countIds`), compares the records new to the
   * scan with the mirror, and, with repair, applies the differing ones.
   */
  private async comparePage(page: Page<ApiRecord>, read: { firstRead: boolean; gap?: PositionRange }): Promise<{ fresh: number; repeated: number; slid: number }> {
    const run = this.state.run;
    this.state.items += page.items.length;
    this.result.invalid += read.firstRead ? (page.rejected?.length ?? 0) : 0;
    const positioned = this.positionedIds(page);
    const before = await this.listing.firstListings(positioned.map(({ id }) => id));
    const fresh = new Map<string, FirstListing>();
    const toCompare: ApiRecord[] = [];
    let repeated = 0;
    let slid = 0;
    const inThisAnswer = new Set<string>();
    for (const { id, position, record } of positioned) {
      if (inThisAnswer.has(id)) {
        if (!(run.duplicateIds ?? []).includes(id)) run.duplicateIds = [...(run.duplicateIds ?? []), id];
        continue;
      }
      inThisAnswer.add(id);
      const first = before.get(id);
      if (first === undefined) {
        fresh.set(id, { position, removed: this.state.removed, added: this.state.added });
        if (record) toCompare.push(record);
        const inGap = read.gap !== undefined && position >= read.gap.from && position <= read.gap.to;
        if (inGap) slid += 1;
        else if (!read.firstRead) creditFound(run, position);
        continue;
      }
      repeated += 1;
      const down = this.state.removed - first.removed;
      const up = this.state.added - first.added;
      if (position >= first.position - down && position <= first.position + up) continue;
      noteTie(run, first.position, position, read.firstRead ? 1 : 0);
    }
    await this.listing.note(fresh);
    await this.compare(toCompare);
    return { fresh: fresh.size, repeated, slid };
  }

  /**
   * Compares records listed for the first time with their stored rows: the diff of change
   * detection over the stored `raw`, and each typed column against the field it holds (a row edited
   * in place keeps its content hash, so the hash is not trusted here). With repair, applies those
   * that differ (their hashes forgotten first, so that change detection rewrites them).
   */
  private async compare(records: readonly ApiRecord[]): Promise<void> {
    if (records.length === 0) return;
    const key = this.stream.key;
    const stored = await this.listing.storedRows(this.stream, records.map((record) => String(record[key])));
    const missing: ApiRecord[] = [];
    const stale: ApiRecord[] = [];
    for (const record of records) {
      const id = String(record[key]);
      const row = stored.get(id);
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
        await this.listing.forgetHashes(store, this.stream, stale.map((record) => String(record[key])));
        return store.applyRecords(this.stream, [...missing, ...stale]);
      });
      this.noteRepaired(appended, 0);
    }
  }

  /**
   * Tombstones the extras in transactions of `TOMBSTONES_PER_TRANSACTION`, each under the lease;
   * none when they make a mass deletion (`massDeletionShare`) and it is not confirmed.
   */
  private async tombstoneExtras(extras: number): Promise<void> {
    const share = this.options.massDeletionShare ?? DEFAULT_MASS_DELETION_SHARE;
    if (!this.options.confirmDeletions && extras > MASS_DELETION_FLOOR) {
      const live = (await this.options.store.countRecords(this.stream)).live;
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
      const appended = await this.underLease((store) => this.listing.tombstoneUnlisted(store, this.stream, this.startedAt, TOMBSTONES_PER_TRANSACTION, this.scope));
      if (appended.length === 0) return;
      this.noteRepaired(appended, appended.length);
    }
  }

  private noteRepaired(appended: AppendedChange[], tombstones: number): void {
    this.result.repaired!.changes += appended.length;
    this.result.repaired!.tombstones += tombstones;
    if (appended.length > 0) this.options.onChanges?.(appended);
  }

  /** Runs `fn` in one transaction that first confirms (and renews) the stream's lease. @throws LeaseLostError when another process took it */
  private underLease<T>(fn: (store: MirrorStore) => Promise<T>): Promise<T> {
    const repair = this.repair!;
    return this.options.store.transaction(async (store) => {
      await confirmLease(store.executor, repair.lease, repair.seconds);
      return fn(store);
    });
  }

  /**
   * Re-reads the tie regions until the scan is whole (the engine's rounds, simplified: the regions
   * owing records, else every region; two rounds that find nothing end it), at most
   * `TIE_REREAD_ROUNDS` rounds.
   * @returns pages re-read
   */
  private async reReadTies(): Promise<number> {
    const run = this.state.run;
    let reads = 0;
    let empty = 0;
    for (let round = 1; round <= TIE_REREAD_ROUNDS; round += 1) {
      const regions = run.tieRegions ?? [];
      const owing = regions.filter((region) => region.missing > 0);
      const targets = owing.length > 0 && empty === 0 ? owing : [...regions];
      let found = 0;
      for (const target of targets) {
        for (const offset of regionPages(target, run.lastTotal ?? 0)) {
          const region = (run.tieRegions ?? []).includes(target) ? target : regionAt(run, target.from);
          if (owing.length > 0 && empty === 0 && (region === undefined || region.missing <= 0)) break;
          const page = await this.fetchPage(offset);
          reads += 1;
          this.noteTotal(page.pagination.total, true);
          const { fresh } = await this.comparePage(page, { firstRead: false });
          run.distinctIds = (run.distinctIds ?? 0) + fresh;
          found += fresh;
          this.progress(page);
          if (fresh > 0 && (await this.listing.count()) >= requiredIds(run)) return reads;
        }
      }
      if (found > 0) empty = 0;
      else {
        empty += 1;
        const long = (run.tieRegions ?? []).some((region) => region.to - region.from + 1 > LIST_PAGE_LIMIT);
        if (empty >= (long ? 3 : 2)) return reads;
      }
    }
    return reads;
  }

  private progress(page: Page<ApiRecord>): void {
    this.options.onProgress?.({
      stream: this.stream.name,
      reason: 'verify',
      records: this.state.items,
      changes: this.result.missing.count + this.result.stale.count,
      total: page.pagination.total,
      offset: this.state.run.offset,
      pages: this.result.pages,
    });
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
