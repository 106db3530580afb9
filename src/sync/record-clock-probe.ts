/**
 * The stream's own probe of the records' clock (docs/sync.md "Record clock"), for a stream whose
 * list items carry no timestamps (transactions, spec §2): nothing it lists says when it was stamped,
 * so a records' clock lagging the cursor's by more than the overlap would hide its changes from
 * every incremental run, and nothing on its pages would show it. What the server does say is how
 * many records the list holds:
 *
 * - **Before** each incremental run (`totalBefore`): one request, `GET <list>?limit=1` with the
 *   stream's fixed filters and no other, whose `pagination.total` is every record the list holds now.
 * - **After** the run (`afterRun`): every one of them should now be live in the mirror (or in its
 *   quarantine): those it held before, and those created since, which the run listed, being stamped
 *   after its `updatedAfter`. When the list held more (`unlisted`), the run's window missed records
 *   created since the previous run: the records' clock lags by more than the window allowed for
 *   (or the mirror lost records). Then the stream's next run is a complete scan
 *   (`RecordClockLag.unlisted`, which it clears), `status` warns, and the lag is bounded from what
 *   the server says: the newest stamp is found by counts (`updatedAfter=now - W&limit=1` with W
 *   doubling from the overlap plus the lag known, then halving the last step three times), and a
 *   record stamped after `now - W` bounds the lag by W (every record was stamped before now). That upper bound becomes the stream's lag (a
 *   lag too large costs re-reads, never a missed change) until a page stamped in step caps it.
 *
 * Records created since the previous run but deleted before this one, or a record the mirror holds
 * that the API deleted, hide as many unlisted records from the count: the next complete scan finds
 * them. Updates alone change no count: a lag seen only through updates of transactions shows at the
 * next change of a stream whose items carry `updatedAt`, or at reconciliation.
 *
 * Costs one request per incremental run of such a stream (a quiet `sync` of the five streams: 8
 * requests); the search, at most `MAX_SEARCH_STEPS` requests, only when records were unlisted. A
 * probe answered with a 4xx is not asked again by the process (one warning); any other failure
 * skips one probe, never the run.
 */
import type { ApiClient } from '../client/client.ts';
import type { Logger } from '../logging/logger.ts';
import { LeaseLostError } from '../mirror/leases.ts';
import type { MirrorStore } from '../mirror/mirror-store.ts';
import { RecordClockStore } from '../mirror/record-clock-store.ts';
import { RejectedRecords } from '../mirror/rejected-records.ts';
import type { StreamDefinition } from '../streams/define-stream.ts';
import { countListItems, probeRefusalStatus, type ProbeRequestOptions } from './list-count.ts';
import { measuresRecordClock, MIN_LAG_SECONDS } from './record-clock-lags.ts';

export type { ProbeRequestOptions } from './list-count.ts';

/** Most doublings of one search for the newest stamp (the overlap times 2^13 is over a week at 120 s). */
export const MAX_SEARCH_STEPS = 14;

/** Halvings of the last doubling once a window holds a stamp: the bound within an eighth of it. */
const BISECT_STEPS = 3;

/** What the probe found after a run (for logs and tests). */
export interface ProbeOutcome {
  /** Records the list held before the run that the mirror does not hold after it (0: none). */
  unlisted: number;
  /** The upper bound of the lag found by the search, seconds; undefined when no search was made or it found none. */
  lagBoundSeconds?: number;
  /** Count requests the search sent. */
  searchRequests: number;
}

/** The stream's own probe of the records' clock (module comment). One per engine. */
export class RecordClockProbe {
  private readonly client: ApiClient;
  private readonly logger: Logger;
  /** Streams whose list refused the probe (a 4xx): not asked again by this process. */
  private readonly refused = new Set<string>();

  constructor(options: { client: ApiClient; logger: Logger }) {
    this.client = options.client;
    this.logger = options.logger;
  }

  /**
   * True for a stream that has its own probe: unpartitioned, read incrementally by `updatedAfter`,
   * and whose list items carry no `updatedAt` (a stream that measures the records' clock needs none:
   * its own pages bound the lag; a partitioned one would need one request per partition).
   */
  static probes(stream: StreamDefinition): boolean {
    return stream.request.cursor === 'updatedAfter' && !stream.partitions && !measuresRecordClock(stream);
  }

  /**
   * Before an incremental run of `stream`: how many records its list holds now (one request), or
   * undefined when the stream has no probe, the list refused it before, or it failed (logged).
   * @throws LeaseLostError, or the abort of `signal`: the run stops as it would on its own request
   */
  async totalBefore(stream: StreamDefinition, options: ProbeRequestOptions): Promise<number | undefined> {
    if (!RecordClockProbe.probes(stream) || this.refused.has(stream.name)) return undefined;
    try {
      return await this.count(stream, undefined, options);
    } catch (error) {
      this.failed(stream, error, options);
      return undefined;
    }
  }

  /**
   * After an incremental run of `stream` that completed: compares the list's total before it with
   * what the mirror holds; records the unlisted records (the next run is a complete scan) and the
   * lag's upper bound the search finds (module comment). Never throws but for a lost lease or an
   * abort: a failed search is logged and the complete scan still comes.
   * @param store the mirror, outside a transaction
   * @param totalBefore `totalBefore`'s answer
   * @param allowedSeconds the lag the run's window allowed for (seconds): a bound no larger explains nothing
   * @param overlapSeconds the run's overlap (`sync.overlapSeconds` or the stream's lookback)
   */
  async afterRun(
    stream: StreamDefinition,
    store: MirrorStore,
    totalBefore: number,
    options: ProbeRequestOptions & {
      /** The lag the run's window allowed for, seconds: a bound no larger explains nothing. */
      allowedSeconds: number;
      /** The run's overlap, seconds (`sync.overlapSeconds` or the stream's lookback). */
      overlapSeconds: number;
      /** Runs `fn` in one transaction fenced by the stream's lease (the engine's). */
      write: (fn: (store: MirrorStore) => Promise<void>) => Promise<void>;
    },
  ): Promise<ProbeOutcome> {
    const held = (await store.countRecords(stream)).live + (await new RejectedRecords(store).countListedOutsideMirror(stream, new Date(0).toISOString()));
    const unlisted = totalBefore - held;
    if (unlisted <= 0) return { unlisted: 0, searchRequests: 0 };
    const window = options;
    await options.write((tx) => new RecordClockStore(tx.executor).noteUnlisted({ stream: stream.name }, unlisted));
    let bound: { seconds: number; requests: number } | undefined;
    try {
      bound = await this.searchNewestStamp(stream, window.allowedSeconds + window.overlapSeconds, options);
    } catch (error) {
      this.failed(stream, error, options);
    }
    // A bound within what the window allowed for does not explain the unlisted records (the mirror lost them): no lag.
    const lagBoundSeconds = bound !== undefined && bound.seconds > window.allowedSeconds + window.overlapSeconds && bound.seconds >= MIN_LAG_SECONDS ? bound.seconds : undefined;
    if (lagBoundSeconds !== undefined) await options.write(async (tx) => void (await new RecordClockStore(tx.executor).observe({ stream: stream.name }, [lagBoundSeconds], 'probe')));
    this.logger.warn(
      { stream: stream.name, unlisted, listTotal: totalBefore, mirrored: held, lagBoundSeconds },
      lagBoundSeconds !== undefined
        ? `the list holds ${unlisted} record(s) the incremental runs did not list: the records' clock lags the cursor's by more than they allowed for (at most ${lagBoundSeconds} s, now the lag incremental syncs allow for); the next run of the stream is a complete scan`
        : `the list holds ${unlisted} record(s) the mirror does not: the next run of the stream is a complete scan`,
    );
    return { unlisted, ...(lagBoundSeconds !== undefined ? { lagBoundSeconds } : {}), searchRequests: bound?.requests ?? 0 };
  }

  /**
   * The newest stamp found by counts: `updatedAfter = now - W` for W = `fromSeconds`, doubling,
   * until the list holds a record stamped later; then no record was stamped more than W before now
   * in the cursor's clock, which bounds the lag (module comment).
   * @returns the bound (seconds, W plus the second a `Date` header hides) and the requests sent; undefined when none was found within `MAX_SEARCH_STEPS`
   */
  private async searchNewestStamp(stream: StreamDefinition, fromSeconds: number, options: ProbeRequestOptions): Promise<{ seconds: number; requests: number } | undefined> {
    let requests = 0;
    /** Whether the list holds a record stamped later than `windowSeconds` before now, and that window in the cursor's clock. */
    const stampedWithin = async (windowSeconds: number): Promise<{ found: boolean; seconds: number }> => {
      requests += 1;
      const page = await countListItems(this.client, stream, { updatedAfter: new Date(Date.now() - windowSeconds * 1000).toISOString() }, options);
      // The page's time (its Date, else ours) is the cursor's clock: the window measured from it.
      const shiftSeconds = page.serverTimeMs === undefined ? 0 : (page.serverTimeMs - page.sentAtMs) / 1000;
      return { found: page.total > 0, seconds: windowSeconds + shiftSeconds };
    };
    let narrow = 0;
    let wide = Math.max(1, Math.ceil(fromSeconds));
    let bound: number | undefined;
    for (let step = 0; step < MAX_SEARCH_STEPS; step += 1, narrow = wide, wide *= 2) {
      const answer = await stampedWithin(wide);
      if (answer.found) {
        bound = answer.seconds;
        break;
      }
    }
    if (bound === undefined) return undefined;
    // The newest stamp lies between the last two windows: halve the gap a few times for a tighter bound.
    for (let step = 0; step < BISECT_STEPS && wide - narrow > 1; step += 1) {
      const middle = Math.round((narrow + wide) / 2);
      const answer = await stampedWithin(middle);
      if (answer.found) {
        wide = middle;
        bound = answer.seconds;
      } else narrow = middle;
    }
    // The Date header hides up to a second.
    return { seconds: Math.ceil(bound) + 1, requests };
  }

  /** The list's `pagination.total` under `query` (one request of one item). */
  private async count(stream: StreamDefinition, query: Record<string, string> | undefined, options: ProbeRequestOptions): Promise<number> {
    return (await countListItems(this.client, stream, query ?? {}, options)).total;
  }

  /** A probe request failed: a lost lease or an abort stops the run; a 4xx refuses the probe for the process; anything else skips it. */
  private failed(stream: StreamDefinition, error: unknown, options: ProbeRequestOptions): void {
    if (error instanceof LeaseLostError || options.signal?.aborted) throw error;
    const status = probeRefusalStatus(error);
    if (status !== undefined) {
      this.refused.add(stream.name);
      this.logger.warn({ stream: stream.name, status }, `the stream's record clock probe (GET ${stream.request.path}?limit=1) answered ${status}: it is not asked again by this process (docs/sync.md "Record clock")`);
      return;
    }
    this.logger.warn({ stream: stream.name, err: { message: (error as Error).message } }, "the stream's record clock probe failed; this run goes on with the lag measured so far");
  }
}
