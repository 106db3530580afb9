/**
 * Job: verify streams against the API (the `verify` command): one complete scan of each, compared
 * with the mirror field by field; with `repair`, the differences applied as a backfill applies
 * them. Wiring only: src/sync/mirror-verify.ts does the work (docs/sync.md "Verify").
 */
import type { Config } from '../src/config/index.ts';
import type { Logger } from '../src/logging/index.ts';
import type { StreamName } from '../src/streams/index.ts';
import { Leases } from '../src/mirror/index.ts';
import { attemptUntilFree, verifyStream, type StreamVerification, type VerifyProgress } from '../src/sync/index.ts';
import { openContext, type ContextOptions } from './context.ts';

/** Options of `verifyJob`. */
export interface VerifyJobOptions extends Pick<ContextOptions, 'rateBudget' | 'clientRetry' | 'leaseHolder'> {
  logger?: Logger;
  /** Apply the differences (missing and stale records, extras tombstoned), with their change events. */
  repair?: boolean;
  /** With repair: tombstone the extras even when they are more than `sync.massDeletionShare` of a stream. */
  confirmDeletions?: boolean;
  /**
   * With repair: a stream another process holds (a daemon) is waited for as `backfill --wait` waits
   * (a request for its lease held meanwhile: src/sync/wait-for-lease.ts), then repaired; default
   * false: it ends busy. `signal` ends the wait.
   */
  waitWhileBusy?: boolean;
  /** Stops between pages; the streams not verified yet are left out of the result. */
  signal?: AbortSignal;
  onProgress?: (progress: VerifyProgress) => void;
}

/**
 * Verifies each of `streams` of the connection `config` names, one after another, on its own
 * context (the API client on the connection's rate budget, requests at `backfill` priority).
 * @returns one verification per stream verified (in the order given)
 */
export async function verifyJob(config: Config, streams: readonly StreamName[], options: VerifyJobOptions = {}): Promise<StreamVerification[]> {
  const { logger, repair, confirmDeletions, waitWhileBusy, signal, onProgress, ...contextOptions } = options;
  const context = await openContext(config, { ...(logger ? { logger } : {}), ...contextOptions });
  try {
    const results: StreamVerification[] = [];
    for (const stream of streams) {
      if (signal?.aborted) break;
      const attempt = () =>
        verifyStream(stream, {
          client: context.client,
          store: context.store,
          logger: context.logger,
          repair,
          confirmDeletions,
          massDeletionShare: config.sync.massDeletionShare,
          configuredPartitions: config.sync.partitions,
          lease: { holder: context.engine.leaseHolder, seconds: config.sync.leaseSeconds },
          signal,
          onProgress,
        });
      results.push(
        repair && waitWhileBusy
          ? await attemptUntilFree({
              leases: new Leases(context.store.executor, config.sync.leaseSeconds),
              stream,
              holder: context.engine.leaseHolder,
              attempt,
              busy: (verified) => verified.status === 'busy',
              pollMs: Math.min(1000, (config.sync.leaseSeconds * 1000) / 3),
              ...(signal ? { signal } : {}),
              logger: context.logger,
            })
          : await attempt(),
      );
    }
    return results;
  } finally {
    await context.close();
  }
}
