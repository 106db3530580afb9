/**
 * A map that keeps only its latest `limit` keys, the oldest dropped first (the id memories of a
 * scan: src/client/paginate.ts, src/sync/scan-memory.ts).
 *
 * The insertion order is a ring of the keys, so the oldest key is found by its index: adding costs
 * the same at the 20,000th key and at the 1,000,000th. Asking a JavaScript `Map` or `Set` for its
 * first key instead (`keys().next()`) walks the deleted slots V8 leaves at the front of the table
 * until its next rehash, a cost per key that grew with the run (21 % of a 100,000-record backfill's
 * CPU, 39 % of a 1,000,000-record one's).
 */
export class RecentMap<K, V> {
  readonly #limit: number | undefined;
  readonly #entries = new Map<K, V>();
  /** The kept keys in insertion order, as a ring: `#order[#oldest]` is the oldest once the ring is full. */
  readonly #order: K[] = [];
  #oldest = 0;

  /**
   * @param limit keys kept (an integer >= 1), the oldest dropped first; undefined keeps every key
   * @throws RangeError when `limit` is not an integer >= 1
   */
  constructor(limit?: number) {
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 1)) throw new RangeError(`limit: must be an integer >= 1, got ${limit}`);
    this.#limit = limit;
  }

  /** True when the map keeps only its latest `limit` keys. */
  get bounded(): boolean {
    return this.#limit !== undefined;
  }

  /** How many keys it holds now (at most `limit`). */
  get size(): number {
    return this.#entries.size;
  }

  get(key: K): V | undefined {
    return this.#entries.get(key);
  }

  has(key: K): boolean {
    return this.#entries.has(key);
  }

  /**
   * Sets `key`'s value. A key already held keeps its place in the order; a new key is the latest,
   * and past the limit the oldest key is dropped.
   * @returns true when `key` is new (it was not held), false when it was held already
   */
  set(key: K, value: V): boolean {
    const entries = this.#entries;
    const size = entries.size;
    // One lookup: a held key changes the value in place, its place in the order kept.
    entries.set(key, value);
    if (entries.size === size) return false;
    const limit = this.#limit;
    if (limit === undefined) return true;
    const order = this.#order;
    if (order.length < limit) {
      order.push(key);
      return true;
    }
    const oldest = this.#oldest;
    entries.delete(order[oldest]!);
    order[oldest] = key;
    this.#oldest = oldest + 1 === limit ? 0 : oldest + 1;
    return true;
  }
}
