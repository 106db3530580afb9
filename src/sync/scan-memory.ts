/**
 * What a run remembers of the ids it listed (docs/sync.md "Scan memory"): where each was first
 * listed, and how far positions may have moved since (records removed from the set, records added
 * to it). The run's tie and drift rules (stream-run.ts `countIds`) compare a repeated id's position
 * with its first one.
 *
 * Bounded for a complete scan: only the latest `limit` first listings are kept (the oldest dropped
 * first), so memory stays flat however many records the scan lists. Whether an id dropped from
 * memory was listed by this scan is the mirror's to say (its row's `last_seen_scan`,
 * src/mirror/scan-marks.ts); where it was listed is forgotten, which costs a tie a record further
 * back than `limit` positions cannot mark (the scan is then short and incomplete: no miss counted,
 * never a record lost). An incremental run has no scan marks in the mirror, so it remembers every
 * id (`limit` undefined): its set is what changed since its cursor.
 */

import { RecentMap } from '../client/recent-map.ts';

/** Where an id was first listed: its position, and how many records had been removed and added by then. */
export interface FirstListed {
  position: number;
  removed: number;
  added: number;
}

/**
 * First listings a complete scan keeps: 20,000 positions (200 pages), far more than any run of ties
 * or drift a page can see, about 3 MB.
 */
export const RECENT_LISTINGS = 20_000;

/** The ids a run listed (the latest `limit` of them, or all) with their first listing. */
export class ScanMemory {
  /** Records removed from the set since this process's part of the run began (drops of `pagination.total`). */
  removed = 0;
  /** Records added to the set meanwhile (rises of `pagination.total`: an incremental run's set grows). */
  added = 0;
  /** The latest `limit` first listings (or all), the oldest dropped first at a constant cost per id (src/client/recent-map.ts). */
  readonly #firstListed: RecentMap<FirstListed>;

  /**
   * @param limit first listings kept (an integer >= 1), the oldest dropped first; undefined keeps all
   * @throws RangeError when `limit` is not an integer >= 1
   */
  constructor(limit?: number) {
    this.#firstListed = new RecentMap(limit);
  }

  /** True when the memory is bounded: an id it does not hold may still have been listed (ask the mirror). */
  get bounded(): boolean {
    return this.#firstListed.bounded;
  }

  /** How many first listings it holds now. */
  get size(): number {
    return this.#firstListed.size;
  }

  /** The first listing of `id`, when remembered. */
  get(id: string): FirstListed | undefined {
    return this.#firstListed.get(id);
  }

  /** Whether `id`'s first listing is remembered. */
  has(id: string): boolean {
    return this.#firstListed.has(id);
  }

  /** Remembers `id`'s first listing at `position` (with the removals and additions so far), dropping the oldest past the limit. */
  remember(id: string, position: number): void {
    this.#firstListed.set(id, { position, removed: this.removed, added: this.added });
  }
}
