import { describe, expect, it } from 'vitest';
import { Agent, fetch } from 'undici';
import { startSimulator } from '../src/index.ts';

describe('performance', () => {
  it('builds a 100k-transaction world and serves 1000 pages of 100 quickly', async () => {
    const buildStarted = performance.now();
    const simulator = await startSimulator({ size: { transactions: 100_000 }, rateLimit: false });
    const buildMs = performance.now() - buildStarted;
    const dispatcher = new Agent({ connections: 4 });
    try {
      const headers = { Authorization: `Bearer ${simulator.tokens.admin}` };
      const started = performance.now();
      let seen = 0;
      for (let page = 0; page < 1000; page += 1) {
        // Alternate the shapes a sync engine sends: a backfill page, an incremental page.
        const query = page % 2 === 0 ? `sortBy=createdAt&sortOrder=asc` : `updatedAfter=2000-01-01T00:00:00.000Z`;
        const response = await fetch(`${simulator.url}/api/public/v1/transactions?limit=100&offset=${page * 100}&${query}`, { headers, dispatcher });
        const body = (await response.json()) as { content: { transactions: unknown[] } };
        seen += body.content.transactions.length;
      }
      const serveMs = performance.now() - started;
      console.log(`100k world built in ${buildMs.toFixed(0)} ms; 1000 pages served in ${serveMs.toFixed(0)} ms`);
      expect(seen).toBe(100_000);
    } finally {
      await dispatcher.close();
      await simulator.close();
    }
  });
});

describe('many companies', () => {
  it('builds 20 extra companies of 10,000 transactions each, every one reachable with its own token', async () => {
    const buildStarted = performance.now();
    const simulator = await startSimulator({ companies: 20, extraCompanySizes: { transactions: 10_000 }, rateLimit: false });
    const buildMs = performance.now() - buildStarted;
    try {
      console.log(`20 companies x 10k transactions (plus A and B) built in ${buildMs.toFixed(0)} ms`);
      expect(simulator.companies).toHaveLength(20);
      for (const company of simulator.companies) {
        expect(company.world.transactions).toHaveLength(10_000);
        const response = await fetch(`${simulator.url}/api/public/v1/transactions?limit=1`, { headers: { Authorization: `Bearer ${company.token}` } });
        const body = (await response.json()) as { content: { transactions: { id: string }[]; pagination: { total: number } } };
        expect(body.content.pagination.total).toBe(10_000);
        expect(body.content.transactions[0]?.id).toBe(company.world.transactions.at(-1)?.id);
      }
    } finally {
      await simulator.close();
    }
  });
});
