/**
 * A map from string keys that keeps only its latest `limit` keys, the oldest dropped first (the id
 * memories of a scan: src/client/paginate.ts, src/sync/scan-memory.ts).
 *
 * Bounded, it is a hash table of its own, sized once for `limit`: the keys sit in a ring in
 * insertion order (the oldest found by its index, so adding costs the same at the 20,000th key and
 * at the 1,000,000th), and an open-addressing index (linear probing, at most a third full) maps a
 * key's 32-bit hash to its place in the ring. A lookup reads the index and the ring's hashes, two
 * typed arrays small enough for the CPU's caches (336 KB at 20,000 keys), and compares a key's text
 * only when the hashes match: a new id, the common case of a scan, reads no stored key. A JavaScript
 * `Map` of the same keys costs 1.3 to 1.5 times the CPU per id: each lookup follows its bucket's chain
 * through entries and key strings spread over the heap, and dropping the oldest leaves deleted slots
 * that it rehashes into a newly allocated table every 12,000 or so new keys. Asking a `Map` for its
 * first key instead of keeping a ring walks those deleted slots (a cost per key that grew with the
 * run).
 *
 * Unbounded (no `limit`), it is a plain `Map`.
 */
export class RecentMap<V> {
  readonly #limit: number | undefined;
  /** Every key, when unbounded. */
  readonly #all: Map<string, V> | undefined;
  /** Index size - 1 (a power of two, at least 3 times `limit`), when bounded. */
  readonly #mask: number;
  /** Index: a key's place in the ring plus 1 at the first free position from its hash's; 0 is free. */
  readonly #index: Int32Array;
  /** The ring: each place's key, value and the key's hash (the arrays grow to `limit`); `#oldest` is the oldest place once full. */
  readonly #keys: (string | undefined)[];
  readonly #values: (V | undefined)[];
  readonly #hashes: Int32Array;
  #count = 0;
  #oldest = 0;
  /** The key hashed last and its hash: a lookup followed by a `set` of the same key (a scan's first listing) hashes it once. */
  #lastKey: string | undefined;
  #lastHash = 0;

  /**
   * @param limit keys kept (an integer >= 1), the oldest dropped first; undefined keeps every key
   * @throws RangeError when `limit` is not an integer >= 1
   */
  constructor(limit?: number) {
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 1)) throw new RangeError(`limit: must be an integer >= 1, got ${limit}`);
    this.#limit = limit;
    if (limit === undefined) {
      this.#all = new Map();
      this.#mask = 0;
      this.#index = new Int32Array(0);
      this.#hashes = new Int32Array(0);
      this.#keys = [];
      this.#values = [];
      return;
    }
    let size = 16;
    while (size < limit * 3) size *= 2;
    this.#mask = size - 1;
    this.#index = new Int32Array(size);
    this.#hashes = new Int32Array(limit);
    this.#keys = [];
    this.#values = [];
  }

  /** True when the map keeps only its latest `limit` keys. */
  get bounded(): boolean {
    return this.#limit !== undefined;
  }

  /** How many keys it holds now (at most `limit`). */
  get size(): number {
    return this.#all ? this.#all.size : this.#count;
  }

  get(key: string): V | undefined {
    if (this.#all) return this.#all.get(key);
    const at = this.#find(key, this.#hash(key));
    return at < 0 ? undefined : this.#values[this.#index[at]! - 1];
  }

  has(key: string): boolean {
    if (this.#all) return this.#all.has(key);
    return this.#find(key, this.#hash(key)) >= 0;
  }

  /**
   * Sets `key`'s value. A key already held keeps its place in the order; a new key is the latest,
   * and past the limit the oldest key is dropped.
   * @returns true when `key` is new (it was not held), false when it was held already
   */
  set(key: string, value: V): boolean {
    const all = this.#all;
    if (all) {
      const size = all.size;
      all.set(key, value);
      return all.size !== size;
    }
    const hash = this.#hash(key);
    let at = this.#find(key, hash);
    if (at >= 0) {
      this.#values[this.#index[at]! - 1] = value;
      return false;
    }
    const limit = this.#limit!;
    let place: number;
    if (this.#count < limit) {
      place = this.#count;
      this.#count += 1;
      this.#keys.push(key);
      this.#values.push(value);
    } else {
      place = this.#oldest;
      this.#oldest = place + 1 === limit ? 0 : place + 1;
      this.#unindex(place);
      at = this.#find(key, hash); // the removal may have moved the free position found
      this.#keys[place] = key;
      this.#values[place] = value;
    }
    this.#index[~at] = place + 1;
    this.#hashes[place] = hash;
    return true;
  }

  /** `key`'s hash (`hashOf`), remembered for the next call. */
  #hash(key: string): number {
    if (key === this.#lastKey) return this.#lastHash;
    const hash = hashOf(key);
    this.#lastKey = key;
    this.#lastHash = hash;
    return hash;
  }

  /** The index position holding `key`, or the bitwise complement (`~`, negative) of the free position where it would go. */
  #find(key: string, hash: number): number {
    const index = this.#index;
    const hashes = this.#hashes;
    const keys = this.#keys;
    const mask = this.#mask;
    for (let at = hash & mask; ; at = (at + 1) & mask) {
      const entry = index[at]!;
      if (entry === 0) return ~at;
      if (hashes[entry - 1] === hash && keys[entry - 1] === key) return at;
    }
  }

  /** Takes the ring's `place` out of the index, moving the entries after it back so that no probe stops early (backward-shift deletion). */
  #unindex(place: number): void {
    const index = this.#index;
    const hashes = this.#hashes;
    const mask = this.#mask;
    let hole = hashes[place]! & mask;
    while (index[hole] !== place + 1) hole = (hole + 1) & mask;
    for (let next = (hole + 1) & mask; ; next = (next + 1) & mask) {
      const entry = index[next]!;
      if (entry === 0) break;
      // The entry may fill the hole when the hole lies between its hash's position and where it sits.
      const home = hashes[entry - 1]! & mask;
      if (((next - home) & mask) >= ((next - hole) & mask)) {
        index[hole] = entry;
        hole = next;
      }
    }
    index[hole] = 0;
    this.#keys[place] = undefined;
    this.#values[place] = undefined;
  }
}

/** A string's 32-bit hash: FNV-1a over its UTF-16 code units, then mixed so that every bit moves the low ones the index uses. */
function hashOf(key: string): number {
  let hash = 0x811c9dc5 | 0;
  for (let at = 0; at < key.length; at += 1) hash = Math.imul(hash ^ key.charCodeAt(at), 0x01000193);
  hash ^= hash >>> 15;
  hash = Math.imul(hash, 0x2c1b3c6d);
  hash ^= hash >>> 12;
  return hash;
}
