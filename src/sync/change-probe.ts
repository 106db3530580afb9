/**
 * The change probe of a complete-scan stream (docs/sync.md "Change probe"): a poll of onboardings
 * reads the whole list (3 pages for 250 open onboardings, 10 for 1,000), so a resting poll first asks
 * two questions of one item each, and scans only when either answer says the list moved since the
 * stream's last complete scan:
 *
 * - `GET <list>?limit=1`: its `pagination.total` against the last complete scan's total. A record
 *   that started (joined the list) or completed (left it) moves it, unless as many left as joined.
 * - `GET <list>?limit=1&updatedAfter=T`, T = the cursor (the server's time at the last complete
 *   scan's first page) less the overlap and the records' clock lag seen on any stream (the window
 *   an incremental run would ask, docs/sync.md "Incremental"): its `pagination.total` counts the
 *   records updated or created since (spec §1 Pagination: `updatedAfter`, "only items updated after
 *   it"). A step changed, a record that started: more than 0.
 *
 * What neither answer sees (a change the server stamps no later than T: a records' clock lagging by
 * more than was measured; a list that ignores the filter sees everything and only costs scans) is
 * found by the next complete scan, which the scheduler makes at least every `sync.maxScanFactor`
 * ticks (src/daemon/poll-backoff.ts). A probe answered with a 4xx is not asked again by the process
 * (one warning: the stream scans on every poll as before); any other failure scans this once.
 */
import type { ApiClient } from '../client/client.ts';
import type { Logger } from '../logging/logger.ts';
import { LeaseLostError } from '../mirror/leases.ts';
import type { StreamDefinition } from '../streams/define-stream.ts';
import { countListItems, probeRefusalStatus, type ProbeRequestOptions } from './list-count.ts';

/** What a change probe found (`RunResult.probe`). */
export interface ChangeProbeOutcome {
  /** The list's `pagination.total` now. */
  total: number;
  /** The final total of the stream's last complete scan, compared with `total`. */
  lastTotal: number;
  /** Records the list holds updated (or created) after `updatedAfter`. */
  updated: number;
  /** The `updatedAfter` asked (ISO 8601): the cursor less the overlap and the records' clock lag. */
  updatedAfter: string;
  /** True when the list moved (`total` differs from `lastTotal`, or `updated` > 0): the run scans. */
  moved: boolean;
  /** Requests the probe sent (2). */
  requests: number;
}

/** Where a probe starts from: the stream's last complete scan, and the window it allows for. */
export interface ChangeProbeBasis {
  /** The stream's cursor: the server's time at its last complete scan's first page (ISO 8601). */
  cursor: string;
  /** That scan's final `pagination.total`. */
  lastTotal: number;
  /** The stream's overlap, ms (`sync.overlapSeconds` or its own lookback). */
  overlapMs: number;
  /** The largest records' clock lag seen on any stream, seconds (docs/sync.md "Record clock"). */
  lagSeconds: number;
}

/** The change probe of complete-scan streams (module comment). One per engine. */
export class ChangeProbe {
  private readonly client: ApiClient;
  private readonly logger: Logger;
  /** Streams whose list refused a probe (a 4xx): every poll of theirs scans, for this process. */
  private readonly refused = new Set<string>();

  constructor(options: { client: ApiClient; logger: Logger }) {
    this.client = options.client;
    this.logger = options.logger;
  }

  /** True for a stream a probe can stand in for: read by complete scans, unpartitioned. */
  static probes(stream: StreamDefinition): boolean {
    return stream.request.cursor === 'complete-scan' && !stream.partitions;
  }

  /**
   * Asks whether `stream`'s list moved since its last complete scan (two requests of one item).
   * @returns the outcome; undefined when the stream has no probe, its list refused one before, or a
   *   request failed (logged): the run then scans
   * @throws LeaseLostError, or the abort of `options.signal`: the run stops as on its own request
   */
  async probe(stream: StreamDefinition, basis: ChangeProbeBasis, options: ProbeRequestOptions): Promise<ChangeProbeOutcome | undefined> {
    if (!ChangeProbe.probes(stream) || this.refused.has(stream.name)) return undefined;
    const updatedAfter = new Date(Date.parse(basis.cursor) - basis.overlapMs - basis.lagSeconds * 1000).toISOString();
    try {
      const total = await this.count(stream, {}, options);
      // A total that moved decides already: the second request is not sent.
      if (total !== basis.lastTotal) return { total, lastTotal: basis.lastTotal, updated: 0, updatedAfter, moved: true, requests: 1 };
      const updated = await this.count(stream, { updatedAfter }, options);
      return { total, lastTotal: basis.lastTotal, updated, updatedAfter, moved: updated > 0, requests: 2 };
    } catch (error) {
      if (error instanceof LeaseLostError || options.signal?.aborted) throw error;
      const status = probeRefusalStatus(error);
      if (status !== undefined) {
        this.refused.add(stream.name);
        this.logger.warn({ stream: stream.name, status }, `the stream's change probe (GET ${stream.request.path}?limit=1) answered ${status}: not asked again by this process, every poll of the stream is a complete scan (docs/sync.md "Change probe")`);
      } else {
        this.logger.warn({ stream: stream.name, err: { message: (error as Error).message } }, "the stream's change probe failed; this poll is a complete scan");
      }
      return undefined;
    }
  }

  /** The list's `pagination.total` under `query` (one request of one item). */
  private async count(stream: StreamDefinition, query: Record<string, string>, options: ProbeRequestOptions): Promise<number> {
    return (await countListItems(this.client, stream, query, options)).total;
  }
}
