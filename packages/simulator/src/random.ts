/**
 * A small seeded pseudo-random generator (mulberry32) so the simulator's world is the same for the
 * same seed. Not for cryptography.
 */

const ID_ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

/** Deterministic pseudo-random numbers, ids and picks from a seed (mulberry32); not for cryptography. */
export class SeededRandom {
  private state: number;

  /** @param seed any integer; the same seed gives the same sequence */
  constructor(seed: number) {
    this.state = (Math.trunc(seed) ^ 0x9e3779b9) >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max] (both inclusive). */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** True with probability `p` (0..1). */
  chance(p: number): boolean {
    return this.next() < p;
  }

  /** One element of a non-empty array. Throws when the array is empty. */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick: empty array');
    return items[Math.floor(this.next() * items.length)] as T;
  }

  /**
   * A random element satisfying `predicate`, trying up to `attempts` random picks; undefined when the
   * array is empty or no pick satisfied it.
   */
  pickWhere<T>(items: readonly T[], predicate: (item: T) => boolean, attempts = 30): T | undefined {
    if (items.length === 0) return undefined;
    for (let attempt = 0; attempt < attempts; attempt += 1) {
      const candidate = items[this.int(0, items.length - 1)] as T;
      if (predicate(candidate)) return candidate;
    }
    return undefined;
  }

  /** A kind-prefixed opaque id, e.g. `txn_8k2m...` (spec §1.6): prefix, underscore, 20 characters. */
  id(prefix: string): string {
    let out = `${prefix}_`;
    for (let index = 0; index < 20; index += 1) out += ID_ALPHABET[Math.floor(this.next() * 32)];
    return out;
  }
}
