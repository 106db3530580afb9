/**
 * RecentMap: the bounded id memory of the paginator and of a complete scan's first listings keeps
 * exactly its latest `limit` keys, the oldest dropped first, however many times the ring turns over,
 * and answers every lookup as a model of it (a `Map` and an array of the latest keys) does.
 * (Its constant cost per key is what `npm run bench -- backfill` shows at 100,000 and 1,000,000.)
 */
import { describe, expect, it } from 'vitest';
import { RecentMap } from '../../src/client/recent-map.ts';

describe('RecentMap', () => {
  it('holds the latest `limit` keys after the ring turned over many times, the oldest dropped first', () => {
    const map = new RecentMap<number>(7);
    for (let index = 0; index < 1_003; index += 1) {
      map.set(`id${index}`, index);
      expect(map.size).toBe(Math.min(index + 1, 7));
    }
    expect(map.bounded).toBe(true);
    const held = Array.from({ length: 1_003 }, (_, index) => `id${index}`).filter((id) => map.has(id));
    expect(held).toEqual(['id996', 'id997', 'id998', 'id999', 'id1000', 'id1001', 'id1002']);
    expect(map.get('id999')).toBe(999);
    expect(map.get('id995')).toBeUndefined();
  });

  it('a key set again keeps its place and takes the new value; only new keys push the oldest out', () => {
    const map = new RecentMap<string>(3);
    map.set('a', 'first');
    map.set('b', 'b');
    map.set('c', 'c');
    map.set('a', 'second');
    expect([map.size, map.get('a')]).toEqual([3, 'second']);
    map.set('d', 'd');
    expect(['a', 'b', 'c', 'd'].map((key) => map.has(key))).toEqual([false, true, true, true]);
    map.set('e', 'e');
    expect(['b', 'c', 'd', 'e'].map((key) => map.has(key))).toEqual([false, true, true, true]);
  });

  it('limit 1 keeps the last key; without a limit it keeps every key; a limit below 1 is refused naming it', () => {
    const one = new RecentMap<number>(1);
    for (let index = 0; index < 5; index += 1) one.set(String(index), index);
    expect([one.size, one.has('4'), one.has('3')]).toEqual([1, true, false]);
    const all = new RecentMap<number>();
    for (let index = 0; index < 5_000; index += 1) all.set(String(index), index);
    expect([all.size, all.bounded, all.has('0')]).toEqual([5_000, false, true]);
    expect(() => new RecentMap(0)).toThrow(/^limit: must be an integer >= 1, got 0$/);
    expect(() => new RecentMap(2.5)).toThrow(/^limit: must be an integer >= 1, got 2.5$/);
  });

  it('answers as a model of it does through random sets, repeats and lookups, at limits from 1 to 20,000', () => {
    // A seeded generator, so that a failure names a sequence that can be run again.
    let seed = 12345;
    const random = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    const mismatches: string[] = [];
    for (const [limit, universe, steps] of [[1, 4, 2_000], [7, 25, 20_000], [64, 200, 40_000], [20_000, 50_000, 150_000]] as const) {
      const map = new RecentMap<number>(limit);
      const values = new Map<string, number>();
      const order: string[] = [];
      let oldest = 0;
      for (let step = 0; step < steps && mismatches.length === 0; step += 1) {
        const key = `txn_${Math.floor(random() * universe).toString(36)}`;
        const draw = random();
        if (draw < 0.5) {
          const isNew = !values.has(key);
          if (map.set(key, step) !== isNew) mismatches.push(`set ${key} at step ${step}, limit ${limit}: not ${String(isNew)}`);
          values.set(key, step);
          if (isNew) {
            order.push(key);
            if (order.length - oldest > limit) values.delete(order[oldest++]!);
          }
        } else if (draw < 0.8) {
          if (map.get(key) !== values.get(key)) mismatches.push(`get ${key} at step ${step}, limit ${limit}: ${String(map.get(key))}, not ${String(values.get(key))}`);
        } else if (map.has(key) !== values.has(key)) {
          mismatches.push(`has ${key} at step ${step}, limit ${limit}: not ${String(values.has(key))}`);
        }
      }
      if (map.size !== values.size) mismatches.push(`size ${map.size} at limit ${limit}, not ${values.size}`);
      for (const [key, value] of values) if (map.get(key) !== value) mismatches.push(`at the end, get ${key} at limit ${limit}: not ${value}`);
    }
    expect(mismatches.slice(0, 3)).toEqual([]);
  });
});
