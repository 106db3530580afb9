/**
 * ApiClient against the API simulator (@bizops-sync/simulator) over real HTTP: the schemas accept its
 * records, the budget paces under its fixed-window rate limit, and its injected faults are handled
 * by the retry policy.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ApiClient } from '../../src/client/client.ts';
import { ConnectionError, InvalidResponseError } from '../../src/client/api-errors.ts';
import { LocalRateBudget } from '../../src/client/local-rate-budget.ts';
import { transactionListItemSchema } from '../../src/client/schemas.ts';
import { STREAM_LIST, type RegisteredStream } from '../../src/streams/definitions.ts';
import { startSimulator, type RunningSimulator, type SimulatorOptions } from '@bizops-sync/simulator';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setUp(simulatorOptions: SimulatorOptions, budgetLimit: number, windowMs = 1000): Promise<{ sim: RunningSimulator; client: ApiClient; budget: LocalRateBudget }> {
  const sim = await startSimulator({ seed: 7, ...simulatorOptions });
  const budget = new LocalRateBudget({ limit: budgetLimit, windowMs });
  const client = new ApiClient({ baseUrl: sim.url, tokens: { default: sim.tokens.admin }, budget, retry: { maxRetries: 3, minTimeoutMs: 10, maxTimeoutMs: 50 } });
  cleanups.push(async () => {
    await client.close();
    await budget.close();
    await sim.close();
  });
  return { sim, client, budget };
}

const transactions = { itemsKey: 'transactions', itemSchema: transactionListItemSchema, priority: 'backfill' as const };

describe('ApiClient against the simulator', () => {
  it('pages through every registered stream with its schema (an invalid item throws), item for item', async () => {
    const { sim, client } = await setUp({ rateLimit: false, size: { transactions: 250, deals: 120, onboardings: 30 } }, 1000);
    for (const stream of STREAM_LIST as readonly RegisteredStream[]) {
      let seen = 0;
      // Each of its lists: one, or one per partition of a list that requires a parameter.
      for (const query of sim.world.partitionQueries(stream.name)) {
        for await (const page of client.paginate(stream.request.path, { itemsKey: stream.request.itemsKey, itemSchema: stream.itemSchema, priority: 'backfill', query })) {
          seen += page.items.length;
        }
      }
      expect(seen, stream.name).toBe(sim.world.groundTruth(stream.name).length);
    }
    expect(sim.world.groundTruth('transactions')).toHaveLength(250);
    expect(sim.requests.every((request) => new URLSearchParams(request.query).get('limit') === '100')).toBe(true);
  });

  it('paces under the server limit: a burst gets no 429', async () => {
    const { sim, client } = await setUp({ rateLimit: { limit: 4, windowMs: 1000 }, size: { transactions: 50 } }, 4);
    const started = Date.now();
    await Promise.all(Array.from({ length: 10 }, () => client.listPage('/transactions', 0, transactions)));
    expect(sim.requests.filter((request) => request.status === 429)).toHaveLength(0);
    expect(sim.requests).toHaveLength(10);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000); // 10 requests at 4 per window need three windows
    expect(client.stats.rateLimited).toBe(0);
  });

  it('recovers when our budget is set above the server limit: learns from the headers and 429s', async () => {
    const { sim, client, budget } = await setUp({ rateLimit: { limit: 3, windowMs: 1000 }, size: { transactions: 50 } }, 50);
    const pages = await Promise.all(Array.from({ length: 8 }, () => client.listPage('/transactions', 0, transactions)));
    expect(pages.every((page) => page.items.length === 50)).toBe(true);
    const limited = sim.requests.filter((request) => request.status === 429).length;
    expect(client.stats.rateLimited).toBe(limited);
    expect(sim.requests.filter((request) => request.status === 200)).toHaveLength(8);
    expect(budget.stats().pauses).toBe(limited);
  });

  it('retries a reset mid-body on a read; never re-sends a request whose response was lost after commit under unsent-only', async () => {
    const { sim, client } = await setUp({ rateLimit: false, size: { transactions: 20 } }, 1000);
    sim.faults.inject({ kind: 'reset-mid-body', match: { path: '/transactions' } });
    const page = await client.listPage('/transactions', 0, transactions);
    expect(page.items).toHaveLength(20);
    expect(sim.requests).toHaveLength(2);

    sim.faults.inject({ kind: 'lose-response-after-commit', match: { path: '/transactions' } });
    const lost = client.request({ method: 'GET', path: '/transactions', contentSchema: z.unknown(), priority: 'write', retry: 'unsent-only' });
    await expect(lost).rejects.toBeInstanceOf(ConnectionError);
    await expect(lost).rejects.toMatchObject({ requestSent: true });
    expect(sim.requests).toHaveLength(3);
  });

  it('names the item and field of an invalid record from the server', async () => {
    const { sim, client } = await setUp({ rateLimit: false, size: { transactions: 20 } }, 1000);
    sim.faults.inject({ kind: 'invalid-record', match: { path: '/transactions' } });
    const page = client.listPage('/transactions', 0, transactions);
    await expect(page).rejects.toBeInstanceOf(InvalidResponseError);
    await expect(page).rejects.toThrow('GET /transactions?limit=100&offset=0: item 0 field id: expected string, received number');
  });
});
