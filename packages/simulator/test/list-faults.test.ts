import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../src/index.ts';
import { api } from './helpers.ts';

let simulator: RunningSimulator;
beforeAll(async () => {
  simulator = await startSimulator({ rateLimit: false, size: { transactions: 600 }, createdInBursts: 8 });
});
afterAll(async () => {
  await simulator.close();
});
beforeEach(() => simulator.faults.clear());

const page = async (offset: number, extra = '') => (await api(simulator, `/transactions?sortBy=createdAt&sortOrder=asc&limit=100&offset=${offset}${extra}`)).body.content;
const ids = (items: { id: string }[]) => items.map((item) => item.id);

describe('list faults', () => {
  it('createdInBursts: many records share one createdAt', () => {
    const times = simulator.world.transactions.map((record) => record.createdAt);
    expect(new Set(times).size).toBeLessThan(times.length / 3);
  });

  it('truncate-list: the page reaching atOffset says hasMore false while total still counts every record', async () => {
    simulator.faults.inject({ kind: 'truncate-list', atOffset: 250, times: 10, match: { path: '/transactions' } });
    const third = await page(200);
    expect(third.transactions).toHaveLength(50);
    expect(third.pagination).toMatchObject({ total: 600, hasMore: false });
    const past = await page(300);
    expect(past.transactions).toHaveLength(0);
    expect(past.pagination).toMatchObject({ total: 600, hasMore: false });
    expect((await page(100)).pagination.hasMore).toBe(true);
  });

  it('truncate-list cutTotal: the cut pages also say total atOffset; earlier pages the real total', async () => {
    simulator.faults.inject({ kind: 'truncate-list', atOffset: 250, cutTotal: true, times: 10, match: { path: '/transactions' } });
    expect((await page(100)).pagination).toMatchObject({ total: 600, hasMore: true });
    const cut = await page(200);
    expect(cut.transactions).toHaveLength(50);
    expect(cut.pagination).toMatchObject({ total: 250, hasMore: false });
  });

  it('unstable-order: ties at a page boundary come back in another order per request; pages still hold the same createdAt values', async () => {
    simulator.faults.inject({ kind: 'unstable-order', times: 1000, match: { path: '/transactions' } });
    const stable = simulator.world.transactions;
    // A boundary inside a tie run: records 99 and 100 share a createdAt.
    const boundary = [100, 200, 300, 400, 500].find((offset) => stable[offset - 1]?.createdAt === stable[offset]?.createdAt);
    expect(boundary).toBeDefined();
    const createdAt = new Map(stable.map((record) => [record.id, record.createdAt]));
    const pages = new Set<string>();
    for (let attempt = 0; attempt < 20; attempt += 1) {
      const content = await page((boundary as number) - 100);
      expect(ids(content.transactions).map((id) => createdAt.get(id))).toEqual(stable.slice((boundary as number) - 100, boundary).map((r) => r.createdAt));
      pages.add([...ids(content.transactions)].sort().join(','));
    }
    // Different records of the tie run land on this page from one request to the next.
    expect(pages.size).toBeGreaterThan(1);
  });

  it('unstable-order with a seed: the same requests in the same sequence get the same orders; another seed, others', async () => {
    const stable = simulator.world.transactions;
    const boundary = [100, 200, 300, 400, 500].find((offset) => stable[offset - 1]?.createdAt === stable[offset]?.createdAt) as number;
    const sequence = async (seed: number): Promise<string[]> => {
      simulator.faults.clear();
      simulator.faults.inject({ kind: 'unstable-order', seed, times: 1000, match: { path: '/transactions' } });
      const orders: string[] = [];
      for (let attempt = 0; attempt < 5; attempt += 1) orders.push(ids((await page(boundary - 100)).transactions).join(','));
      return orders;
    };
    const first = await sequence(7);
    expect(new Set(first).size).toBeGreaterThan(1);
    expect(await sequence(7)).toEqual(first);
    expect(await sequence(8)).not.toEqual(first);
    expect(() => simulator.faults.inject({ kind: 'unstable-order', seed: 1.5 })).toThrow(/seed must be an integer/);
  });

  it('endless-list repeat: past the end the last page comes again with hasMore true', async () => {
    simulator.faults.inject({ kind: 'endless-list', mode: 'repeat', times: 10, match: { path: '/transactions' } });
    const last = await page(500);
    expect(last.pagination.hasMore).toBe(true);
    const past = await page(700);
    expect(ids(past.transactions)).toEqual(ids(last.transactions));
    expect(past.pagination).toMatchObject({ total: 600, hasMore: true });
  });

  it('endless-list past-total: past the end records from the start come again', async () => {
    simulator.faults.inject({ kind: 'endless-list', mode: 'past-total', times: 10, match: { path: '/transactions' } });
    const first = await page(0);
    const wrapped = await page(600);
    expect(ids(wrapped.transactions)).toEqual(ids(first.transactions));
    expect(wrapped.pagination.hasMore).toBe(true);
  });

  it('rejects a list fault without its parameters, naming the field', async () => {
    expect(() => simulator.faults.inject({ kind: 'truncate-list', atOffset: -1 })).toThrow(/atOffset/);
    expect(() => simulator.faults.inject({ kind: 'endless-list', mode: 'forever' as 'repeat' })).toThrow(/mode/);
    const response = await fetch(`${simulator.url}/__admin/faults`, { method: 'POST', body: JSON.stringify({ kind: 'unstable-order', times: 2, match: { path: '/transactions' } }) });
    expect(response.status).toBe(200);
  });

  it('capped-list: nothing at or past the cap, and every page says total cap', async () => {
    simulator.faults.inject({ kind: 'capped-list', cap: 250, times: 10, match: { path: '/transactions' } });
    expect((await page(0)).pagination).toMatchObject({ total: 250, hasMore: true });
    const last = await page(200);
    expect(last.transactions).toHaveLength(50);
    expect(last.pagination).toMatchObject({ total: 250, hasMore: false });
    expect((await page(300)).transactions).toHaveLength(0);
  });

  it('duplicate-id: one record served again at another position with other content; the total counts both', async () => {
    simulator.faults.inject({ kind: 'duplicate-id', position: 3, at: 150, patch: { description: 'older copy' }, times: 10, match: { path: '/transactions' } });
    const first = (await page(0)).transactions as { id: string; description: string }[];
    const second = await page(100);
    const copy = (second.transactions as { id: string; description: string }[])[50]!;
    expect(copy.id).toBe(first[3]!.id);
    expect(copy.description).toBe('older copy');
    expect(first[3]!.description).not.toBe('older copy');
    expect(second.pagination.total).toBe(601);
  });

  it('id-less-item: an item without id is inserted; the total counts it', async () => {
    simulator.faults.inject({ kind: 'id-less-item', position: 5, times: 10, match: { path: '/transactions' } });
    const items = (await page(0)).transactions as { id?: string }[];
    expect(items[5]).not.toHaveProperty('id');
    expect(items.filter((item) => item.id === undefined)).toHaveLength(1);
    expect((await page(0)).pagination.total).toBe(601);
  });

  it('id-less-item instead, nullId: the record itself served without its id (or id: null) in its own place; the total unchanged', async () => {
    const record = simulator.world.transactions[5]!;
    simulator.faults.inject({ kind: 'id-less-item', position: 5, instead: true, times: 1, match: { path: '/transactions' } });
    const without = await page(0);
    expect(without.pagination.total).toBe(600);
    expect(without.transactions[5]).not.toHaveProperty('id');
    expect(ids(without.transactions)).not.toContain(record.id);
    simulator.faults.inject({ kind: 'id-less-item', position: 5, instead: true, nullId: true, times: 1, match: { path: '/transactions' } });
    const nulled = (await page(0)).transactions as { id: unknown }[];
    expect(nulled[5]!.id).toBeNull();
    expect(nulled).toHaveLength(100);
  });

  it('timestamp-style: the same instants written with +00:00, or without a .000 fraction', async () => {
    const customers = async () => (await api(simulator, '/customers?sortBy=createdAt&sortOrder=asc&limit=100')).body.content.customers as { createdAt: string; updatedAt: string }[];
    const plain = await customers();
    simulator.faults.inject({ kind: 'timestamp-style', style: '+00:00', times: 1, match: { path: '/customers' } });
    const offset = await customers();
    expect(offset[0]!.createdAt).toBe(plain[0]!.createdAt.replace('Z', '+00:00'));
    expect(offset.map((item) => Date.parse(item.updatedAt))).toEqual(plain.map((item) => Date.parse(item.updatedAt)));
    expect(() => simulator.faults.inject({ kind: 'timestamp-style', style: 'local' as '+00:00' })).toThrow(/style/);
  });

  it('key-order: the same items with their keys in reverse order', async () => {
    const customers = async () => (await api(simulator, '/customers?sortBy=createdAt&sortOrder=asc&limit=100')).body.content.customers as Record<string, unknown>[];
    const plain = await customers();
    simulator.faults.inject({ kind: 'key-order', times: 1, match: { path: '/customers' } });
    const reordered = await customers();
    expect(Object.keys(reordered[0]!)).toEqual(Object.keys(plain[0]!).reverse());
    expect(reordered).toEqual(plain);
  });

  it('backwards-updated-at: one record served, and filtered, with the given updatedAt', async () => {
    const record = simulator.world.transactions[10]!;
    const old = '2020-01-01T00:00:00.000Z';
    simulator.faults.inject({ kind: 'backwards-updated-at', id: record.id, updatedAt: old, times: 10, match: { path: '/transactions' } });
    const recent = await page(0, `&updatedAfter=${encodeURIComponent('2021-01-01T00:00:00.000Z')}`);
    expect(ids(recent.transactions)).not.toContain(record.id);
    simulator.faults.inject({ kind: 'backwards-updated-at', id: record.id, updatedAt: old, times: 10, match: { path: '/transactions' } });
    const since = await page(0, `&updatedAfter=${encodeURIComponent('2019-12-31T00:00:00.000Z')}`);
    expect(ids(since.transactions)).toContain(record.id);
  });
});
