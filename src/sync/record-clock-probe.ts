/**
 * The record clock's probe (docs/sync.md "Record clock"): before an incremental run of a stream that
 * cannot measure the records' clock itself (transaction list items carry no timestamps, spec §2),
 * one page of a stream that can (deals) sorted by `updatedAt`, newest first, and limited to records
 * stamped after that stream's high water (`updatedAfter`). Each such record was stamped after the
 * high water's moment, so it bounds the lag from below (src/sync/record-clock-lags.ts); the newest
 * bounds it from above. The run then widens its overlap by a lag measured on changes made since
 * the last run, not on the next complete scan.
 *
 * The spec does not say which lists accept `sortBy=updatedAt` (§1: "allowed values vary by
 * endpoint"). A probe answered with a 4xx, or with a page not sorted newest first (a server that
 * ignored the parameter), is not used again by this process (one warning); any other failure skips
 * one probe, never the run. The probe costs one request per incremental run of such a stream, at
 * the run's priority, after the same lease check as the run's own requests.
 */
import { BizopsApiError } from '../client/api-errors.ts';
import type { ApiClient } from '../client/client.ts';
import type { Priority } from '../client/rate-budget.ts';
import type { Logger } from '../logging/logger.ts';
import { instantMs } from '../mirror/instants.ts';
import { LeaseLostError } from '../mirror/leases.ts';
import { RecordClockStore } from '../mirror/record-clock-store.ts';
import type { SqlExecutor } from '../mirror/sql/executor.ts';
import type { ApiRecord, StreamDefinition } from '../streams/define-stream.ts';
import { lagCeiling, lagsAboveHighWater, measuresRecordClock } from './record-clock-lags.ts';

/** What one probe found (for logs and tests). */
export interface ProbeOutcome {
  /** The stream probed. */
  stream: string;
  /** Records stamped after its high water on the probe's page. */
  stampedAfter: number;
  /** The probed stream's lag after the probe, seconds. */
  lagSeconds: number;
}

/** Probes the record clock for runs of streams that cannot measure it themselves. One per engine. */
export class RecordClockProbe {
  private readonly client: ApiClient;
  private readonly executor: SqlExecutor;
  private readonly logger: Logger;
  private readonly streams: readonly StreamDefinition[];
  /** Streams whose list refused the probe (a 4xx, or an answer not sorted by `updatedAt`): not asked again by this process. */
  private readonly refused = new Set<string>();

  /**
   * @param streams the registered streams; those that measure the records' clock are the ones probed
   */
  constructor(options: { client: ApiClient; executor: SqlExecutor; logger: Logger; streams: readonly StreamDefinition[] }) {
    this.client = options.client;
    this.executor = options.executor;
    this.logger = options.logger;
    // A partitioned stream's list needs its parameter: never probed (docs/sync.md "Partitioned streams").
    this.streams = options.streams.filter((candidate) => measuresRecordClock(candidate) && !candidate.partitions);
  }

  /**
   * Before an incremental run of `stream`: when the stream cannot measure the records' clock, probes
   * the first stream that can and has a high water (one request), and records what it measured.
   * @param hooks.beforeRequest the run's lease check (throws LeaseLostError: no request leaves)
   * @returns what the probe found, or undefined when no probe was made (or it failed: logged)
   * @throws LeaseLostError, or the abort of `signal`: the run stops as it would on its own request
   */
  async beforeRun(stream: StreamDefinition, options: { priority: Priority; signal?: AbortSignal; beforeRequest: () => Promise<void> }): Promise<ProbeOutcome | undefined> {
    if (measuresRecordClock(stream)) return undefined;
    const recordClock = new RecordClockStore(this.executor);
    for (const probed of this.streams) {
      if (this.refused.has(probed.name)) continue;
      try {
        const { highWater } = await recordClock.read(probed.name);
        if (!highWater) continue;
        const page = await this.client.listPage<ApiRecord>(probed.request.path, 0, {
          itemsKey: probed.request.itemsKey,
          itemSchema: probed.itemSchema,
          priority: options.priority,
          signal: options.signal,
          invalidItems: 'collect',
          hooks: { beforeRequest: options.beforeRequest },
          query: { ...probed.request.filters, sortBy: 'updatedAt', sortOrder: 'desc', updatedAfter: highWater.updatedAt },
        });
        const stamps = page.items.map((item) => instantMs(item.updatedAt));
        if (stamps.some((stamp, index) => Number.isNaN(stamp) || (index > 0 && stamp > stamps[index - 1]!))) {
          this.refuse(probed, 'its answer was not sorted by updatedAt, newest first (the server ignores sortBy=updatedAt there)');
          continue;
        }
        const lower = lagsAboveHighWater(highWater, page.items);
        let lagSeconds = lower.length > 0 ? await recordClock.observe(probed.name, lower, 'probe') : (await recordClock.read(probed.name)).lagSeconds;
        const ceiling = lagCeiling(page.items, page.serverTime?.getTime() ?? Date.now());
        if (ceiling !== undefined && ceiling < lagSeconds) lagSeconds = await recordClock.cap(probed.name, ceiling);
        return { stream: probed.name, stampedAfter: lower.length, lagSeconds };
      } catch (error) {
        if (error instanceof LeaseLostError || options.signal?.aborted) throw error;
        const status = error instanceof BizopsApiError ? error.status : undefined;
        if (status !== undefined && status >= 400 && status < 500 && status !== 429) {
          this.refuse(probed, `GET ${probed.request.path}?sortBy=updatedAt answered ${status}`);
          continue;
        }
        this.logger.warn({ stream: stream.name, probed: probed.name, err: { message: (error as Error).message } }, "the record clock's probe failed; this run goes on with the lag measured so far");
        return undefined;
      }
    }
    return undefined;
  }

  private refuse(probed: StreamDefinition, why: string): void {
    this.refused.add(probed.name);
    this.logger.warn(
      { stream: probed.name, reason: why },
      "the record clock's probe is not used on this stream: the lag is measured from its own runs and the writes only (docs/sync.md \"Record clock\")",
    );
  }
}
