/** The faults and the clock option that make a page untrustworthy: no Date header, a trickled body, one invalid list item, a records' clock behind the Date header. */
import { request } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../src/index.ts';
import { api } from './helpers.ts';

let simulator: RunningSimulator;
beforeAll(async () => {
  simulator = await startSimulator({ rateLimit: false, size: { deals: 20, transactions: 20 } });
});
afterAll(async () => {
  await simulator.close();
});
beforeEach(() => simulator.faults.clear());

/** One GET with node:http, recording when each body chunk arrived. */
function getChunks(path: string): Promise<{ status: number; headers: Record<string, unknown>; chunks: Buffer[] }> {
  return new Promise((resolve, reject) => {
    const req = request(`${simulator.url}/api/public/v1${path}`, { headers: { Authorization: `Bearer ${simulator.tokens.admin}` } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, chunks }));
      response.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('page trust faults', () => {
  it('no-date-header: the answer carries no Date header, then the next one does again', async () => {
    simulator.faults.inject({ kind: 'no-date-header', match: { path: '/deals' } });
    const stripped = await api(simulator, '/deals?limit=1');
    expect(stripped.status).toBe(200);
    expect(stripped.headers.get('date')).toBeNull();
    expect((await api(simulator, '/deals?limit=1')).headers.get('date')).toEqual(expect.any(String));
  });

  it('trickle-body: the whole, valid body is sent in writes of at most chunkBytes', async () => {
    simulator.faults.inject({ kind: 'trickle-body', chunkBytes: 40, intervalMs: 5, match: { path: '/deals' } });
    const response = await getChunks('/deals?limit=2');
    expect(response.status).toBe(200);
    const text = Buffer.concat(response.chunks).toString('utf8');
    expect(JSON.parse(text).content.deals).toHaveLength(2);
    // Counted where they are made: a busy reader may find several writes in one read (TCP keeps no
    // boundaries), so the chunks received say nothing certain.
    expect(simulator.requests.at(-1)!.bodyWrites).toBe(Math.ceil(Buffer.byteLength(text) / 40));
  });

  it('invalid-item: the item at index gets the bad value, keeps its id, and the other items are untouched', async () => {
    simulator.faults.inject({ kind: 'invalid-item', index: 1, field: 'status', value: 7, times: 2, match: { path: '/deals' } });
    const response = await api(simulator, '/deals?limit=3');
    const deals = response.body.content.deals as Record<string, unknown>[];
    expect(deals[1]).toMatchObject({ id: expect.stringMatching(/^deal_/), status: 7 });
    expect(deals[0]!.status).toEqual(expect.any(String));
    expect(deals[2]!.status).toEqual(expect.any(String));
    expect(typeof simulator.world.deals.find((deal) => deal.id === deals[1]!.id)!.status).toBe('string');
    expect((await api(simulator, '/deals?limit=3')).body.content.deals[1].status).toBe(7);
    expect(typeof (await api(simulator, '/deals?limit=3')).body.content.deals[1].status).toBe('string');
  });
});

describe('recordClockLagMs', () => {
  it('stamps createdAt/updatedAt that much behind the Date header', async () => {
    const now = Date.UTC(2026, 5, 1, 12, 0, 0);
    const lagged = await startSimulator({ rateLimit: false, size: { deals: 5 }, clock: () => now, recordClockLagMs: 45_000 });
    try {
      const created = await api(lagged, '/transactions', { method: 'POST', body: { type: 'INCOME', amount: 1000, description: 'lag probe' } });
      expect(created.status).toBeLessThan(300);
      const dateMs = Date.parse(created.headers.get('date')!);
      expect(dateMs).toBe(now);
      expect(Date.parse(created.body.content.transaction.createdAt)).toBe(now - 45_000);
    } finally {
      await lagged.close();
    }
  });
});
