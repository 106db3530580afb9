import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIMULATED_STREAMS, startSimulator, type RunningSimulator } from '../src/index.ts';
import { api, pageAll } from './helpers.ts';

let simulator: RunningSimulator;

beforeAll(async () => {
  simulator = await startSimulator({ seed: 7, rateLimit: false, size: { transactions: 450, deals: 120, onboardings: 30, customers: 60 } });
});
afterAll(async () => {
  await simulator.close();
});

describe('pagination (spec §1)', () => {
  it('visits every transaction exactly once, in the ground-truth order, with total and hasMore', async () => {
    const first = await api(simulator, '/transactions?limit=100');
    expect(first.status).toBe(200);
    expect(first.body.message).toEqual(expect.any(String));
    expect(first.body.content.pagination).toEqual({ total: 450, limit: 100, offset: 0, hasMore: true });
    const last = await api(simulator, '/transactions?limit=100&offset=400');
    expect(last.body.content.transactions).toHaveLength(50);
    expect(last.body.content.pagination.hasMore).toBe(false);
    const beyond = await api(simulator, '/transactions?limit=100&offset=1000');
    expect(beyond.body.content.transactions).toEqual([]);
    expect(beyond.body.content.pagination).toEqual({ total: 450, limit: 100, offset: 1000, hasMore: false });

    const all = await pageAll(simulator, '/transactions', 'transactions', 37);
    expect(all).toEqual(simulator.world.groundTruth('transactions'));
    expect(new Set(all.map((item) => item.id)).size).toBe(450);
    expect(Object.keys(all[0] ?? {}).sort()).toEqual(['amount', 'date', 'description', 'id', 'status', 'type']);
  });

  it('defaults to limit 20 and rejects out-of-range limit, negative offset, unknown sortBy and bad sortOrder with 400', async () => {
    const page = await api(simulator, '/deals');
    expect(page.body.content.deals).toHaveLength(20);
    expect(page.body.content.pagination.limit).toBe(20);
    for (const [query, name] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=abc', 'limit'],
      ['offset=-1', 'offset'],
      ['sortBy=color', 'sortBy'],
      ['sortOrder=up', 'sortOrder'],
      ['createdAfter=yesterday', 'createdAfter'],
      ['updatedAfter=2026-13-45T00:00:00Z', 'updatedAfter'],
    ]) {
      const response = await api(simulator, `/deals?${query}`);
      expect(response.status, query).toBe(400);
      expect(response.body.message, query).toContain(name);
    }
  });

  it('lists deals, onboardings and customers under their own keys and matches the ground truth', async () => {
    expect(await pageAll(simulator, '/deals', 'deals')).toEqual(simulator.world.groundTruth('deals'));
    const onboardings = await pageAll(simulator, '/employee-onboardings', 'onboardings');
    expect(onboardings).toEqual(simulator.world.groundTruth('onboardings'));
    expect(onboardings[0]).toEqual({ id: expect.stringMatching(/^onb_/), onboardingStep: expect.any(Number), user: { fullname: expect.any(String) } });
    const customers = await pageAll(simulator, '/customers', 'customers');
    expect(customers).toHaveLength(60);
    expect(customers[0]).toMatchObject({ id: expect.stringMatching(/^cus_/), firstName: expect.any(String), lastName: expect.any(String) });
  });

  it('serves every declared list from its ground truth, partition by partition, and applies the list faults to each', async () => {
    for (const stream of SIMULATED_STREAMS) {
      const partitions = simulator.world.partitionQueries(stream.name);
      const listed: Record<string, unknown>[] = [];
      for (const partition of partitions) {
        const path = `${stream.path}?${new URLSearchParams(partition)}`;
        const items = await pageAll(simulator, path, stream.itemsKey, 30);
        expect(items, path).toEqual(simulator.world.groundTruth(stream.name, partition));
        listed.push(...items);
        // The list faults match any list path: a truncated list says hasMore false at atOffset, an endless one never does.
        simulator.faults.inject({ kind: 'truncate-list', atOffset: 1, match: { path: stream.path } });
        expect((await api(simulator, `${path}${path.endsWith('?') ? '' : '&'}limit=2`)).body.content.pagination, path).toMatchObject({ hasMore: false });
        simulator.faults.inject({ kind: 'endless-list', mode: 'repeat', match: { path: stream.path } });
        expect((await api(simulator, `${path}${path.endsWith('?') ? '' : '&'}offset=100000`)).body.content.pagination, path).toMatchObject({ hasMore: true });
      }
      expect(listed.length, stream.name).toBe(simulator.world.streamRecords(stream.name).length);
      expect(listed.length, stream.name).toBeGreaterThan(0);
    }
  });

  it('answers 400 naming the parameter a partitioned list requires', async () => {
    for (const stream of SIMULATED_STREAMS.filter((candidate) => candidate.partitions)) {
      const missing = await api(simulator, stream.path);
      expect(missing.status, stream.path).toBe(400);
      expect(missing.body.message, stream.path).toContain(stream.partitions!.parameter);
    }
  });

  it('drops completed onboardings from the list', async () => {
    const target = simulator.world.onboardings[3];
    if (!target) throw new Error('no onboarding');
    simulator.world.completeOnboarding(target.id);
    const onboardings = await pageAll(simulator, '/employee-onboardings', 'onboardings');
    expect(onboardings.map((item) => item.id)).not.toContain(target.id);
    expect(simulator.world.completedOnboardings.map((record) => record.id)).toContain(target.id);
  });
});

describe('filters', () => {
  it('filters transactions by type, status, locationId and legalEntityId', async () => {
    const world = simulator.world;
    const locationId = world.data.locations[0]?.id ?? '';
    const legalEntityId = world.data.legalEntities[1]?.id ?? '';
    const expense = await pageAll(simulator, '/transactions?type=EXPENSE', 'transactions');
    expect(expense.length).toBe(world.transactions.filter((record) => record.type === 'EXPENSE').length);
    expect(expense.every((item) => item.type === 'EXPENSE' && (item.amount as number) < 0)).toBe(true);
    const pending = await api(simulator, '/transactions?status=PENDING&limit=100');
    expect(pending.body.content.pagination.total).toBe(world.transactions.filter((record) => record.status === 'PENDING').length);
    const byLocation = await api(simulator, `/transactions?locationId=${locationId}&legalEntityId=${legalEntityId}&limit=1`);
    expect(byLocation.body.content.pagination.total).toBe(
      world.transactions.filter((record) => record.locationId === locationId && record.legalEntityId === legalEntityId).length,
    );
    expect((await api(simulator, '/transactions?type=GIFT')).status).toBe(400);
    expect((await api(simulator, '/transactions?status=DONE')).status).toBe(400);
  });

  it('applies createdAfter, createdBefore and updatedAfter strictly', async () => {
    const records = simulator.world.transactions;
    const pivot = records[200];
    if (!pivot) throw new Error('no pivot');
    const after = await api(simulator, `/transactions?createdAfter=${pivot.createdAt}&limit=1`);
    expect(after.body.content.pagination.total).toBe(records.filter((record) => record.createdAt > pivot.createdAt).length);
    const before = await api(simulator, `/transactions?createdBefore=${pivot.createdAt}&limit=1`);
    expect(before.body.content.pagination.total).toBe(records.filter((record) => record.createdAt < pivot.createdAt).length);
    const updated = await api(simulator, `/transactions?updatedAfter=${pivot.updatedAt}&limit=1`);
    expect(updated.body.content.pagination.total).toBe(records.filter((record) => record.updatedAt > pivot.updatedAt).length);
    // Same under another sort order (the updatedAt view uses a binary search).
    const updatedSorted = await api(simulator, `/transactions?updatedAfter=${pivot.updatedAt}&sortBy=updatedAt&limit=1`);
    expect(updatedSorted.body.content.pagination.total).toBe(updated.body.content.pagination.total);
  });

  it('searches primary fields case-insensitively', async () => {
    const hits = await pageAll(simulator, '/transactions?search=RENT', 'transactions');
    const expected = simulator.world.transactions.filter(
      (record) => record.description.toLowerCase().includes('rent') || (record.counterpartyName ?? '').toLowerCase().includes('rent'),
    );
    expect(hits.length).toBe(expected.length);
    expect(hits.length).toBeGreaterThan(0);
  });

  it('updatedAfter sees a record changed through the world', async () => {
    const since = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 5));
    const target = simulator.world.transactions[10];
    if (!target) throw new Error('no record');
    simulator.world.updateTransaction(target.id, { status: 'VOIDED' });
    const changed = await api(simulator, `/transactions?updatedAfter=${since}`);
    expect(changed.body.content.transactions.map((item: { id: string }) => item.id)).toEqual([target.id]);
  });
});

describe('sorting', () => {
  it('is stable with id as tie-breaker, in both orders, across page boundaries', async () => {
    const world = simulator.world;
    const tied = world.deals.slice(0, 7).map((record) => record.id);
    world.setUpdatedAt('deals', tied, '2030-01-01T00:00:00.000Z');
    const ascending = await pageAll(simulator, '/deals?sortBy=updatedAt&sortOrder=asc', 'deals', 3);
    const tail = ascending.slice(-7).map((item) => item.id);
    expect(tail).toEqual([...tied].sort());
    const descending = await pageAll(simulator, '/deals?sortBy=updatedAt&sortOrder=desc', 'deals', 3);
    expect(descending.slice(0, 7).map((item) => item.id)).toEqual([...tied].sort().reverse());
    expect(descending.map((item) => item.id)).toEqual(ascending.map((item) => item.id).reverse());

    const byValue = await pageAll(simulator, '/deals?sortBy=value&sortOrder=asc', 'deals', 50);
    for (let index = 1; index < byValue.length; index += 1) {
      const previous = byValue[index - 1] as { value: number; id: string };
      const current = byValue[index] as { value: number; id: string };
      expect(previous.value < current.value || (previous.value === current.value && previous.id < current.id)).toBe(true);
    }
  });

  it('orders createdAt ties by id', async () => {
    const world = simulator.world;
    const when = '2020-06-01T00:00:00.000Z';
    const made = [world.createTransaction({ createdAt: when }), world.createTransaction({ createdAt: when }), world.createTransaction({ createdAt: when })];
    const page = await api(simulator, `/transactions?sortOrder=asc&createdBefore=2020-06-01T00:00:00.001Z&limit=3`);
    expect(page.body.content.transactions.map((item: { id: string }) => item.id)).toEqual(made.map((record) => record.id).sort());
  });
});
