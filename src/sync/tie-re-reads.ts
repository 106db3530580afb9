/**
 * Tie re-reads (docs/sync.md "Ties"): at the end of a scan that listed fewer distinct ids than it
 * must while ids came twice, the tie regions of src/sync/scan-check.ts are read again, round by
 * round, until the scan is whole or the round bound is hit. Pure scheduling: which pages to read in
 * which round; reading a page and counting what it found is the run's (src/sync/stream-run.ts).
 */
import { LIST_PAGE_LIMIT } from '../client/paginate.ts';
import type { RunCheckpoint } from '../mirror/mirror-store.ts';
import { regionAt, regionPages, requiredIds } from './scan-check.ts';

/** What the re-reads need of the run whose scan they complete. */
export interface TieReReader {
  /** The run's checkpoint: its tie regions, its last total (read and widened as pages come back). */
  readonly checkpoint: RunCheckpoint;
  /** Distinct ids the scan has listed so far, by its own count (exact across a resume). */
  distinctIds(): Promise<number>;
  /**
   * Reads the page at `offset` (an offset in the set being paged) again and commits it.
   * @returns records new to the scan
   */
  reReadPage(offset: number): Promise<number>;
}

/** What the re-reads did: pages read, rounds run, and whether the round bound stopped them. */
export interface TieReReadOutcome {
  reads: number;
  rounds: number;
  boundHit: boolean;
}

/**
 * Re-reads the tie regions (scan-check.ts `TieRegion`) until the scan has listed as many distinct
 * ids as it must. Each round reads the regions still owing records, each with the pages centred
 * on it (`regionPages`): a run of up to a page arrives whole in one answer whatever its order; a
 * longer one arrives a page-sized random part at a time, so later rounds read it again until its
 * debt is paid. Records new to the scan are credited to their region; ids listed at a new
 * position widen and merge regions. When no region owes anything but the scan is still short (a
 * record credited to a neighbouring run), or a round found nothing, the next one also reads the
 * owing regions' neighbours; after another empty round, every region (a sweep). An empty sweep
 * ends the re-reads, unless a region is longer than a page.
 * @param maxRounds at most this many rounds (`SyncEngineOptions.tieReReadRounds`): no region is read in more rounds than that
 * @throws whatever `reader.reReadPage` throws (a failed request or commit ends the run)
 */
export async function reReadTies(reader: TieReReader, maxRounds: number): Promise<TieReReadOutcome> {
  const run = reader.checkpoint;
  let short = requiredIds(run) - (await reader.distinctIds());
  let reads = 0;
  // Whole: as many distinct ids as required, by the scan's own count (exact across a resume).
  const whole = async (): Promise<boolean> => {
    short = requiredIds(run) - (await reader.distinctIds());
    return short <= 0;
  };
  // How wide a round reads: the regions owing records; after a round that found nothing, those
  // and their neighbours (a record credited to the nearest region may belong to the next one);
  // after another, every region (a sweep). A round that finds something narrows again.
  let reach: 'owing' | 'neighbours' | 'all' = 'owing';
  let emptySweeps = 0;
  for (let round = 1; ; round += 1) {
    if (round > maxRounds) return { reads, rounds: round - 1, boundHit: true };
    const regions = run.tieRegions ?? [];
    const owes = (index: number): boolean => (regions[index]?.missing ?? 0) > 0;
    if (reach === 'owing' && !regions.some((_, index) => owes(index))) reach = 'neighbours';
    let targets = reach === 'all' ? [...regions] : regions.filter((_, index) => owes(index) || (reach === 'neighbours' && (owes(index - 1) || owes(index + 1))));
    if (targets.length === 0) {
      reach = 'all';
      targets = [...regions];
    }
    let found = 0;
    for (const target of targets) {
      for (const offset of regionPages(target, run.lastTotal ?? 0)) {
        // Regions merge as ids turn up at new positions: follow the target into its merged region.
        const region = (run.tieRegions ?? []).includes(target) ? target : regionAt(run, target.from);
        if (reach === 'owing' && (region === undefined || region.missing <= 0)) break;
        const fresh = await reader.reReadPage(offset);
        reads += 1;
        found += fresh;
        short -= fresh;
        // Counted from this process's memory: confirmed with the scan's own count.
        if (short <= 0 && (await whole())) return { reads, rounds: round, boundHit: false };
      }
    }
    if (found > 0) {
      reach = 'owing';
      emptySweeps = 0;
    } else if (reach !== 'all') reach = reach === 'owing' ? 'neighbours' : 'all';
    else {
      // Every region was read and nothing turned up: done. A region longer than a page is read a
      // random part at a time, so one empty sweep proves little there: two in a row end it (an
      // unseen record of a run of 200 escapes both with a chance of about 1 in 50).
      emptySweeps += 1;
      const long = (run.tieRegions ?? []).some((region) => region.to - region.from + 1 > LIST_PAGE_LIMIT);
      if (emptySweeps >= (long ? 2 : 1)) return { reads, rounds: round, boundHit: false };
    }
  }
}
