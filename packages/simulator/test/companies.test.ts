import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_SIZES, extraCompanyToken, startSimulator, STREAM_NAMES, type RunningSimulator } from '../src/index.ts';
import { api, pageAll } from './helpers.ts';

let simulator: RunningSimulator | undefined;
let second: RunningSimulator | undefined;
afterEach(async () => {
  await simulator?.close();
  await second?.close();
  simulator = second = undefined;
});

const SIZES = { transactions: 30, deals: 12, onboardings: 6, customers: 9 };

/** Calls `/__admin{path}` (no auth) and parses its JSON answer. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
async function admin(target: RunningSimulator, path: string, init: { method?: string; body?: unknown } = {}): Promise<{ status: number; body: any }> {
  const response = await fetch(`${target.url}/__admin${path}`, {
    method: init.method ?? 'GET',
    headers: { 'Content-Type': 'application/json' },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  return { status: response.status, body: await response.json() };
}

describe('extra companies (the companies option)', () => {
  it('gives each company its own token, company id and data, and sizes as asked', async () => {
    simulator = await startSimulator({ companies: 3, extraCompanySizes: SIZES, rateLimit: false });
    expect(simulator.companies.map((company) => [company.k, company.key, company.token])).toEqual([
      [1, 'C1', 'sim-company-1-token'],
      [2, 'C2', 'sim-company-2-token'],
      [3, 'C3', 'sim-company-3-token'],
    ]);
    expect(extraCompanyToken(2)).toBe('sim-company-2-token');

    const companyIds = new Set<string>();
    const seenTransactionIds = new Set(simulator.world.transactions.map((record) => record.id));
    for (const record of simulator.world.companies.B.transactions) seenTransactionIds.add(record.id);
    for (const company of simulator.companies) {
      const me = await api(simulator, '/test-token', { token: company.token });
      expect(me.status).toBe(200);
      expect(me.body.content.companyId).toBe(company.id);
      expect(me.body.content.scopes).toContain('transactions:write');
      companyIds.add(company.id);

      const transactions = await pageAll(simulator, '/transactions', 'transactions', 100, company.token);
      const deals = await pageAll(simulator, '/deals', 'deals', 100, company.token);
      const onboardings = await pageAll(simulator, '/employee-onboardings', 'onboardings', 100, company.token);
      const customers = await pageAll(simulator, '/customers', 'customers', 100, company.token);
      expect([transactions.length, deals.length, onboardings.length, customers.length]).toEqual([30, 12, 6, 9]);
      // Exactly company k's records: its ground truth, none of A's, B's or another extra company's.
      expect(transactions.map((record) => record.id)).toEqual(company.world.groundTruth('transactions').map((record) => record.id));
      for (const record of transactions) {
        expect(seenTransactionIds.has(String(record.id))).toBe(false);
        seenTransactionIds.add(String(record.id));
      }
    }
    expect(companyIds.size).toBe(3);
    expect(companyIds.has(simulator.world.data.id)).toBe(false);
    expect(companyIds.has(simulator.world.companies.B.data.id)).toBe(false);
  });

  it("keeps a company's writes and record ids to itself", async () => {
    simulator = await startSimulator({ companies: 2, extraCompanySizes: SIZES, rateLimit: false });
    const [one, two] = [simulator.company(1), simulator.company(2)];
    const created = await api(simulator, '/transactions', { method: 'POST', token: two.token, body: { type: 'INCOME', amount: 4200, description: 'Company 2 sale' } });
    expect(created.status).toBe(200);
    expect(two.world.transactions.some((record) => record.description === 'Company 2 sale')).toBe(true);
    expect(one.world.transactions.some((record) => record.description === 'Company 2 sale')).toBe(false);
    expect(simulator.world.transactions.some((record) => record.description === 'Company 2 sale')).toBe(false);
    // Company 2 cannot reach company 1's deal: like a missing one.
    const dealOfOne = one.world.deals[0]?.id;
    const close = await api(simulator, `/deals/${dealOfOne}/close`, { method: 'POST', token: two.token, body: { status: 'LOST' } });
    expect(close.status).toBe(404);
    expect(one.world.deals[0]?.status).not.toBe('LOST');
  });

  it("gives each company its own rate budget: exhausting company 1 does not 429 company 2, A or B", async () => {
    simulator = await startSimulator({ companies: 3, extraCompanySizes: SIZES, rateLimit: { limit: 3, windowMs: 60_000 } });
    const one = simulator.company(1).token;
    const two = simulator.company(2).token;
    const statusesOfOne: number[] = [];
    for (let index = 0; index < 5; index += 1) statusesOfOne.push((await api(simulator, '/deals?limit=1', { token: one })).status);
    expect(statusesOfOne).toEqual([200, 200, 200, 429, 429]);
    const statusesOfTwo: number[] = [];
    for (let index = 0; index < 3; index += 1) {
      const response = await api(simulator, '/deals?limit=1', { token: two });
      statusesOfTwo.push(response.status);
      expect(response.headers.get('x-ratelimit-remaining')).toBe(String(2 - index));
    }
    expect(statusesOfTwo).toEqual([200, 200, 200]);
    expect((await api(simulator, '/deals?limit=1')).status).toBe(200);
    expect((await api(simulator, '/deals?limit=1', { token: simulator.tokens.otherCompany })).status).toBe(200);
    expect((await api(simulator, '/deals?limit=1', { token: 'sim-company-4-token' })).status).toBe(401);

    const counts = simulator.requestCounts();
    expect(Object.keys(counts).sort()).toEqual(['A', 'B', 'C1', 'C2', 'C3']);
    expect(counts.C1).toEqual({ requests: 5, rateLimited: 2, counted: 3, byStatus: { 200: 3, 429: 2 } });
    expect(counts.C2).toEqual({ requests: 3, rateLimited: 0, counted: 3, byStatus: { 200: 3 } });
    expect(counts.C3).toEqual({ requests: 0, rateLimited: 0, counted: 0, byStatus: {} });
    expect(counts.A).toMatchObject({ requests: 1, rateLimited: 0 });
    // The same counts over HTTP, for a simulator in another process.
    const overHttp = await admin(simulator, '/request-counts');
    expect(overHttp.status).toBe(200);
    expect(overHttp.body.companies).toEqual(JSON.parse(JSON.stringify(counts)));
  });

  it("reaches each company's ground truth, world methods and churn through /__admin ?company=C<k>", async () => {
    simulator = await startSimulator({ companies: 2, extraCompanySizes: SIZES, rateLimit: false });
    const two = simulator.company(2);
    const state = await admin(simulator, '/state');
    expect(state.body.companyTokens).toEqual({ C1: 'sim-company-1-token', C2: 'sim-company-2-token' });
    expect(state.body.companyIds.C2).toBe(two.id);
    expect(state.body.companies.C2.streams.transactions).toBe(30);
    expect(state.body.companies.A.streams.transactions).toBe(500);

    const truth = await admin(simulator, '/ground-truth/deals?company=C2');
    expect(truth.body.records).toEqual(two.world.groundTruth('deals'));
    const created = await admin(simulator, '/world/createTransaction?company=C2', { method: 'POST', body: [{ type: 'INCOME', amount: 100, description: 'Through admin' }] });
    expect(created.status).toBe(200);
    expect(two.world.transactions.some((record) => record.id === created.body.result.id)).toBe(true);
    expect(simulator.company(1).world.transactions).toHaveLength(30);
    const churn = await admin(simulator, '/churn?company=C2', { method: 'POST', body: { count: 5 } });
    expect(churn.body.changes).toHaveLength(5);
    expect(simulator.company(1).world.snapshot()).toEqual((await admin(simulator, '/state')).body.companies.C1);
    expect(simulator.company(1).world.transactions).toHaveLength(30);

    const unknown = await admin(simulator, '/ground-truth/deals?company=C3');
    expect(unknown.status).toBe(404);
    expect(unknown.body.message).toContain('company must be one of A, B, C1, C2, got "C3"');
  });

  it('is deterministic, defaults to company B sizes, and leaves companies A and B as they are', async () => {
    simulator = await startSimulator({ seed: 5, companies: 2, extraCompanySizes: { transactions: 17 }, rateLimit: false, anchor: Date.UTC(2026, 0, 1) });
    second = await startSimulator({ seed: 5, rateLimit: false, anchor: Date.UTC(2026, 0, 1) });
    // Only transactions given: the other streams keep company B's sizes (a tenth of A's defaults, at least 5).
    const companyB = Object.fromEntries(STREAM_NAMES.map((stream) => [stream, Math.max(5, Math.floor(DEFAULT_SIZES[stream] / 10))]));
    expect(simulator.company(1).world.snapshot().streams).toEqual({ ...companyB, transactions: 17 });
    expect(companyB).toMatchObject({ deals: 20, onboardings: 5, customers: 10 });
    for (const stream of STREAM_NAMES) {
      expect(simulator.world.groundTruth(stream)).toEqual(second.world.groundTruth(stream));
      expect(simulator.world.companies.B.groundTruth(stream)).toEqual(second.world.companies.B.groundTruth(stream));
    }
    await second.close();
    second = await startSimulator({ seed: 5, companies: 1, extraCompanySizes: { transactions: 17 }, rateLimit: false, anchor: Date.UTC(2026, 0, 1) });
    expect(second.company(1).world.groundTruth('transactions')).toEqual(simulator.company(1).world.groundTruth('transactions'));
    expect(second.company(1).id).toBe(simulator.company(1).id);
  });

  it('refuses bad options and unknown company numbers with one line naming them', async () => {
    await expect(startSimulator({ companies: -1 })).rejects.toThrow('companies must be a non-negative integer, got -1');
    await expect(startSimulator({ companies: 1, extraCompanySizes: { deals: 1.5 } })).rejects.toThrow('extraCompanySizes.deals must be a non-negative integer, got 1.5');
    simulator = await startSimulator({ companies: 2, extraCompanySizes: SIZES, rateLimit: false });
    expect(() => simulator?.company(3)).toThrow('company k must be an integer from 1 to 2, got 3');
    expect(() => simulator?.company(0)).toThrow(RangeError);
  });
});
