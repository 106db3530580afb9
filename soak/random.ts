/**
 * The soak's seeded generator (mulberry32): the same seed gives the same schedule, so
 * `npm run soak -- --seed S` replays what a run printed.
 */
export class SoakRandom {
  #state: number;

  /** @param seed any integer; 0 is fine */
  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max], both included. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  /** One element of a non-empty array. @throws Error on an empty array */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list');
    return items[Math.floor(this.next() * items.length)] as T;
  }

  /** One key of `weights`, drawn in proportion to its weight. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    const entries = Object.entries(weights) as [K, number][];
    const total = entries.reduce((sum, [, weight]) => sum + weight, 0);
    let roll = this.next() * total;
    for (const [key, weight] of entries) {
      if (roll < weight) return key;
      roll -= weight;
    }
    return entries[entries.length - 1]![0];
  }
}

/** A fresh seed for a run that was given none: printed, so the run can be replayed. */
export function freshSeed(): number {
  return Math.floor(Math.random() * 2 ** 31);
}
