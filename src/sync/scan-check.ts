/**
 * Scan completeness (docs/sync.md "Scan completeness"): what one run's pages say about whether it
 * listed the whole set it paged through. Pure bookkeeping over the run's checkpoint; the engine
 * (src/sync/engine.ts) feeds it each page and asks it at the end.
 *
 * The rule: a scan is complete when it saw at least as many distinct ids as the final page's
 * `pagination.total`. Otherwise it is incomplete, and the reason is `unstable-order` when ids came
 * twice outside a drift re-read (ties returned in a different order per request: some records
 * took the place of others at a page boundary), else `ended-early` (the list said `hasMore: false`
 * short of its own total). An incomplete scan counts no miss and leaves the cursor where it was.
 *
 * An incremental run is allowed the growth of the total during the run: records updated while it
 * pages enter its `updatedAfter` set at positions it already passed; they are not lost (their
 * `updatedAt` is after the run's cursor, so the next run lists them), and must not make every
 * incremental run under churn look incomplete.
 */
import type { RunCheckpoint, ScanOutcome } from '../mirror/store.ts';

/**
 * Records one page's repeats in the checkpoint: a page that repeats ids outside a drift re-read
 * marks its boundary (its offset) as owing that many records, which a tie re-read looks for.
 * @param pageOffset the offset the page was requested at
 * @param pageTotal the page's `pagination.total`
 * @param newIds items whose id this run had not listed before
 * @param repeatedIds items whose id an earlier page of this run listed
 */
export function tallyPage(run: RunCheckpoint, pageOffset: number, pageTotal: number, newIds: number, repeatedIds: number): void {
  run.distinctIds = (run.distinctIds ?? 0) + newIds;
  run.lowestTotal = Math.min(run.lowestTotal ?? pageTotal, pageTotal);
  if (repeatedIds === 0) return;
  run.repeatedIds = (run.repeatedIds ?? 0) + repeatedIds;
  if (run.driftReadsUntil !== undefined && pageOffset < run.driftReadsUntil) return;
  run.tieBoundaries = [...(run.tieBoundaries ?? []), { offset: pageOffset, missing: repeatedIds }];
}

/**
 * The outcome of a finished scan.
 * @param distinctIds distinct ids the scan listed (for a complete scan: rows marked seen by it)
 * @param reReads pages re-read around tie boundaries
 * @param now ISO time
 */
export function scanOutcome(run: RunCheckpoint, distinctIds: number, reReads: number, now = new Date().toISOString()): ScanOutcome {
  const total = run.lastTotal ?? 0;
  const entered = run.mode === 'incremental' ? Math.max(0, total - (run.lowestTotal ?? total)) : 0;
  const base = { mode: run.mode, total, distinctIds, repeatedIds: run.repeatedIds ?? 0, reReads, at: now };
  if (distinctIds >= total - entered) return { outcome: 'complete', ...base };
  return { outcome: 'incomplete', reason: (run.tieBoundaries?.length ?? 0) > 0 ? 'unstable-order' : 'ended-early', ...base };
}
