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
