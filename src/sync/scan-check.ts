/**
 * Scan completeness (docs/sync.md "Scan completeness"): what one run's pages say about whether it
 * listed the whole set it paged through. Pure bookkeeping over the run's checkpoint; the engine
 * (src/sync/sync-engine.ts) feeds it each page and asks it at the end.
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
 *
 * Tie regions. Records tying on `createdAt` form a run of consecutive positions, and a server with
 * an unstable order shuffles each run anew per request, only within the run. So an id listed at two
 * positions proves both lie in one run, and so does every position between them: such spans,
 * merged where they overlap, are the run's *region*. Every position of the set is read once by the
 * pages, so each repeat inside a run stands for exactly one record of that run not listed yet: a
 * region owes as many records as repeats landed in it. A record found by a re-read is credited to
 * the region holding its position (else the nearest: a record not listed yet belongs to a run that
 * repeated, and so has a region). Bookkeeping per run, not per page boundary: a re-read page that
 * covers two runs cannot pay one run's debt with the other's records.
 */
import { LIST_PAGE_LIMIT, type PositionRange } from '../client/paginate.ts';
import type { RunCheckpoint, ScanOutcome } from '../mirror/mirror-store.ts';

/**
 * Positions `from..to` (both inclusive, offsets in the set being paged) known to lie inside one run
 * of records tying on the sort field, and how many records of that run the scan has not listed yet.
 */
export interface TieRegion {
  from: number;
  to: number;
  missing: number;
}

/**
 * Records one page's counts in the checkpoint.
 * @param pageTotal the page's `pagination.total`
 * @param newIds items whose id this run had not listed before
 * @param repeatedIds items whose id an earlier page of this run listed
 */
export function tallyPage(run: RunCheckpoint, pageTotal: number, newIds: number, repeatedIds: number): void {
  run.distinctIds = (run.distinctIds ?? 0) + newIds;
  run.lowestTotal = Math.min(run.lowestTotal ?? pageTotal, pageTotal);
  if (repeatedIds > 0) run.repeatedIds = (run.repeatedIds ?? 0) + repeatedIds;
}

/**
 * Records that one id was listed at positions `first` and `second`: both, and every position
 * between, lie in one tie run. Merges the regions this span overlaps into one and adds `missing`
 * (1 for a repeat of the main pages: one record of the run not listed yet; 0 for a re-read, which
 * reads positions already read once).
 * @returns the region now holding the span
 */
export function noteTie(run: RunCheckpoint, first: number, second: number, missing: number): TieRegion {
  const from = Math.min(first, second);
  const to = Math.max(first, second);
  const regions = run.tieRegions ?? [];
  const merged: TieRegion = { from, to, missing };
  const kept: TieRegion[] = [];
  for (const region of regions) {
    if (region.from <= to && region.to >= from) {
      merged.from = Math.min(merged.from, region.from);
      merged.to = Math.max(merged.to, region.to);
      merged.missing += region.missing;
    } else {
      // Regions are disjoint, so one that misses the span also misses every region merged into it.
      kept.push(region);
    }
  }
  kept.push(merged);
  kept.sort((left, right) => left.from - right.from);
  run.tieRegions = kept;
  return merged;
}

/**
 * A re-read listed a record new to this scan at `position`: the region holding that position owes
 * one record fewer; a position between regions is credited to the nearest one.
 */
export function creditFound(run: RunCheckpoint, position: number): void {
  const region = regionAt(run, position);
  if (region) region.missing -= 1;
}

/** The region holding `position`, else the nearest one (undefined when there is none). */
export function regionAt(run: RunCheckpoint, position: number): TieRegion | undefined {
  let best: TieRegion | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const region of run.tieRegions ?? []) {
    const distance = position < region.from ? region.from - position : position > region.to ? position - region.to : 0;
    if (distance < bestDistance) {
      best = region;
      bestDistance = distance;
    }
  }
  return best;
}

/**
 * Offsets of the pages that re-read a region. A region of at most a page gets one page centred on
 * it: a run of up to 100 records around it then arrives whole in one answer, whatever its order. A
 * longer region gets ceil(span / 100) pages spread evenly from its first position to its last,
 * each wholly inside the run: every answer is then 100 of the run's records (a random part of it,
 * since it cannot arrive whole), the most one request can bring. Offsets at or past `total` are
 * left out.
 */
export function regionPages(region: Pick<TieRegion, 'from' | 'to'>, total: number): number[] {
  const span = region.to - region.from + 1;
  if (span <= LIST_PAGE_LIMIT) {
    const centred = region.from - Math.floor((LIST_PAGE_LIMIT - span) / 2);
    // Near the end of the list, centre within what exists.
    return [Math.max(0, Math.min(centred, total - LIST_PAGE_LIMIT))].filter((offset) => offset < total);
  }
  const pages = Math.ceil(span / LIST_PAGE_LIMIT);
  const last = region.to + 1 - LIST_PAGE_LIMIT;
  const offsets: number[] = [];
  for (let page = 0; page < pages; page += 1) {
    const offset = region.from + Math.round(((last - region.from) * page) / (pages - 1));
    if (offset < total) offsets.push(offset);
  }
  return offsets;
}

/**
 * Where to read a drift gap that lies in a run of ties (paginate.ts `placeGap`): the page
 * `regionPages` would centre on the tie region the gap overlaps, widened to the gap, when both fit
 * in one page. That one request then reads the gap and re-reads the whole run (a run of up to a
 * page around the region arrives whole, whatever its order), instead of a page ending at the
 * gap's top that cuts through the run and a re-read of the run after it. For a region longer than
 * a page, the page covering the gap that lies most inside it (every answer 100 of the run's
 * records). Undefined when the gap lies in no region (the paginator's default placement).
 * @param gap positions that may hold records slid below positions read (offsets in the set being paged)
 */
export function gapPageInTies(run: RunCheckpoint, gap: PositionRange): number | undefined {
  const region = (run.tieRegions ?? []).find((candidate) => candidate.from <= gap.to && candidate.to >= gap.from);
  if (region === undefined) return undefined;
  const span = { from: Math.min(region.from, gap.from), to: Math.max(region.to, gap.to) };
  const lowest = Math.max(0, gap.to - LIST_PAGE_LIMIT + 1);
  // A region longer than a page: the page covering the gap that lies most inside the run (100 of its records).
  const [offset] = span.to - span.from + 1 > LIST_PAGE_LIMIT ? [Math.min(gap.from, Math.max(lowest, region.from))] : regionPages(span, run.lastTotal ?? 0);
  return offset !== undefined && offset <= gap.from && offset >= lowest ? offset : undefined;
}

/**
 * Distinct ids a scan must list to be complete: the final total, less (for an incremental run)
 * the records that entered its set while it paged, plus the records it may have listed before they
 * were removed (`listedThenRemoved`), less the ids one answer listed twice (the server's duplicates).
 */
export function requiredIds(run: RunCheckpoint): number {
  const total = run.lastTotal ?? 0;
  const base = run.mode === 'incremental' ? total - Math.max(0, total - (run.lowestTotal ?? total)) : total;
  // An id listed at two positions of one answer is one record the total counts twice.
  return base + listedThenRemoved(run) - (run.duplicateIds?.length ?? 0);
}

/**
 * How many of the records the scan listed may have left the set since (removals while it paged):
 * they count among its distinct ids but not in the final total, so the scan must list that many
 * more to prove it saw every record still there. Only a removal below the positions read can take
 * a listed record, and each such removal moves exactly one unread record into a drift gap: removals
 * while paging count as many as the gap pages found there (`slidFound`; a gap inside a run of ties
 * counts whole, as a record that slid into a shuffled run need not show where it slid), at most the
 * drops seen (`removedWhileReading`). A removal after the end was reached counts whole
 * (`removedAfterEnd`: nearly every record was listed by then). Over-counting costs a scan marked
 * incomplete (no miss, the next scan tries again); under-counting could count a record missed that
 * is still there, so every bound errs the first way.
 */
export function listedThenRemoved(run: RunCheckpoint): number {
  return Math.min(run.slidFound ?? 0, run.removedWhileReading ?? 0) + (run.removedAfterEnd ?? 0);
}

/**
 * The outcome of a finished scan.
 * @param distinctIds distinct ids the scan listed (for a complete scan: rows marked seen by it)
 * @param reReads pages re-read around tie regions
 * @param now ISO time
 */
export function scanOutcome(run: RunCheckpoint, distinctIds: number, reReads: number, now = new Date().toISOString()): ScanOutcome {
  const total = run.lastTotal ?? 0;
  const unnamed = run.unnamed?.length ?? 0;
  const base = { mode: run.mode, total, distinctIds, repeatedIds: run.repeatedIds ?? 0, reReads, ...(unnamed > 0 ? { unnamed } : {}), at: now };
  if (distinctIds < requiredIds(run)) return { outcome: 'incomplete', reason: (run.tieRegions?.length ?? 0) > 0 ? 'unstable-order' : 'ended-early', ...base };
  if (run.mode !== 'complete') return { outcome: 'complete', ...base };
  // A deletion needs a proof: the scan named every record it listed, and its total agrees with it.
  if (unnamed > 0) return { outcome: 'complete', missesWithheld: 'unnamed-items', ...base };
  if (distinctIds > mostIdsExplained(run)) return { outcome: 'complete', missesWithheld: 'over-total', ...base };
  return { outcome: 'complete', ...base };
}

/**
 * The most distinct ids an honest list could hand a complete scan: its final total, plus every
 * record removed while the scan ran (each may have been listed before it left), less the ids one
 * answer listed twice. A scan that listed more proves the total wrong: a list that miscounts may
 * also leave records out while its total agrees with what it served, so such a scan proves no
 * record gone.
 */
export function mostIdsExplained(run: RunCheckpoint): number {
  return (run.lastTotal ?? 0) + (run.removedWhileReading ?? 0) + (run.removedAfterEnd ?? 0) - (run.duplicateIds?.length ?? 0);
}
