/**
 * RecentMap: the bounded id memory of the paginator and of a complete scan's first listings keeps
 * exactly its latest `limit` keys, the oldest dropped first, however many times the ring turns over.
 * (Its constant cost per key is what `npm run bench -- backfill` shows at 100,000 and 1,000,000.)
 */
import { describe, expect, it } from 'vitest';
import { RecentMap } from '../../src/client/recent-map.ts';

describe('RecentMap', () => {
  it('holds the latest `limit` keys after the ring turned over many times, the oldest dropped first', () => {
    const map = new RecentMap<string, number>(7);
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
    const map = new RecentMap<string, string>(3);
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
    const one = new RecentMap<number, number>(1);
    for (let index = 0; index < 5; index += 1) one.set(index, index);
    expect([one.size, one.has(4), one.has(3)]).toEqual([1, true, false]);
    const all = new RecentMap<number, number>();
    for (let index = 0; index < 5_000; index += 1) all.set(index, index);
    expect([all.size, all.bounded, all.has(0)]).toEqual([5_000, false, true]);
    expect(() => new RecentMap(0)).toThrow(/^limit: must be an integer >= 1, got 0$/);
    expect(() => new RecentMap(2.5)).toThrow(/^limit: must be an integer >= 1, got 2.5$/);
  });
});
