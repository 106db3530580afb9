/**
 * The tie bookkeeping of src/sync/scan-check.ts: regions per run of ties, their debt, and the pages
 * that re-read them. Pure functions over a checkpoint; the engine's use of them is tested against
 * the simulator in scans.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { RunCheckpoint } from '../../src/mirror/mirror-store.ts';
import { creditFound, gapPageInTies, noteTie, regionPages, scanOutcome } from '../../src/sync/scan-check.ts';

function checkpoint(): RunCheckpoint {
  return { mode: 'complete', reason: 'backfill', startedAt: new Date(0).toISOString(), offset: 0, pages: 0, records: 0, changes: 0, lastTotal: 1_000 };
}

describe('tie regions', () => {
  it('an id listed at two positions makes a region owing one record; overlapping spans merge and add up, disjoint ones stay apart', () => {
    const run = checkpoint();
    noteTie(run, 195, 204, 1);
    noteTie(run, 290, 310, 1);
    expect(run.tieRegions).toEqual([
      { from: 195, to: 204, missing: 1 },
      { from: 290, to: 310, missing: 1 },
    ]);
    // A span joining both (one run of ties from 195 to 310) merges them.
    noteTie(run, 300, 200, 1);
    expect(run.tieRegions).toEqual([{ from: 195, to: 310, missing: 3 }]);
    // A re-read that lists an id at a new position widens the region without adding debt.
    noteTie(run, 180, 250, 0);
    expect(run.tieRegions).toEqual([{ from: 180, to: 310, missing: 3 }]);
  });

  it('a record found by a re-read pays the debt of the region holding its position, else of the nearest one', () => {
    const run = checkpoint();
    noteTie(run, 95, 104, 2);
    noteTie(run, 395, 410, 2);
    creditFound(run, 100);
    creditFound(run, 380);
    expect(run.tieRegions!.map((region) => region.missing)).toEqual([1, 1]);
  });

  it('re-read pages: one page centred on a region of up to a page; pages wholly inside a longer one', () => {
    expect(regionPages({ from: 195, to: 204 }, 1_000)).toEqual([150]);
    expect(regionPages({ from: 0, to: 10 }, 1_000)).toEqual([0]);
    expect(regionPages({ from: 990, to: 998 }, 1_000)).toEqual([900]);
    // 250 positions: 3 pages, the first starting at the region, the last ending at it.
    expect(regionPages({ from: 120, to: 369 }, 1_000)).toEqual([120, 195, 270]);
    expect(regionPages({ from: 120, to: 220 }, 1_000)).toEqual([120, 121]);
  });

  it('a drift gap inside a tie region is read by the page that re-reads the region; outside every region, the default', () => {
    const run = checkpoint();
    run.lastTotal = 299;
    noteTie(run, 197, 272, 3);
    // The page centred on the region, which covers the gap: one request for both.
    expect(gapPageInTies(run, { from: 199, to: 199 })).toBe(185);
    expect(gapPageInTies(run, { from: 120, to: 121 })).toBeUndefined();
    // A region longer than a page: the page covering the gap that lies most inside the run.
    noteTie(run, 20, 160, 4);
    expect(gapPageInTies(run, { from: 150, to: 151 })).toBe(52);
    expect(gapPageInTies(run, { from: 60, to: 61 })).toBe(20);
  });

  it('a scan short of its total with tie regions is incomplete for unstable order; without, ended early', () => {
    const run = checkpoint();
    expect(scanOutcome(run, 990, 0)).toMatchObject({ outcome: 'incomplete', reason: 'ended-early' });
    noteTie(run, 95, 104, 1);
    expect(scanOutcome(run, 990, 3)).toMatchObject({ outcome: 'incomplete', reason: 'unstable-order', reReads: 3 });
    expect(scanOutcome(run, 1_000, 3)).toMatchObject({ outcome: 'complete' });
  });
});
