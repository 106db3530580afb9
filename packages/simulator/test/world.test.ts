import { afterEach, describe, expect, it } from 'vitest';
import { SIMULATED_STREAMS, startSimulator, STREAM_NAMES, type RunningSimulator } from '../src/index.ts';
import { api } from './helpers.ts';

const started: RunningSimulator[] = [];
async function start(options: Parameters<typeof startSimulator>[0]): Promise<RunningSimulator> {
  const simulator = await startSimulator(options);
  started.push(simulator);
  return simulator;
}
afterEach(async () => {
  await Promise.all(started.splice(0).map((simulator) => simulator.close()));
});

const ANCHOR = Date.parse('2026-06-01T00:00:00.000Z');

describe('world', () => {
  it('is deterministic from the seed and differs between seeds', async () => {
    const one = await start({ seed: 42, anchor: ANCHOR, rateLimit: false });
    const two = await start({ seed: 42, anchor: ANCHOR, rateLimit: false });
    const three = await start({ seed: 43, anchor: ANCHOR, rateLimit: false });
    for (const stream of STREAM_NAMES) {
      expect(one.world.groundTruth(stream)).toEqual(two.world.groundTruth(stream));
    }
    expect(one.world.transactions.map((record) => record.updatedAt)).toEqual(two.world.transactions.map((record) => record.updatedAt));
    expect(one.world.groundTruth('transactions')).not.toEqual(three.world.groundTruth('transactions'));
    const page = async (simulator: RunningSimulator) => (await api(simulator, '/deals?limit=5')).body.content.deals;
    expect(await page(one)).toEqual(await page(two));
  });

  it('keeps realistic records: prefixed ids, ms timestamps in the past, signed cents, sorted arrays', async () => {
    const simulator = await start({ seed: 1, rateLimit: false });
    const { world } = simulator;
    expect(world.transactions).toHaveLength(500);
    expect(world.deals).toHaveLength(200);
    expect(world.onboardings).toHaveLength(40);
    expect(world.customers).toHaveLength(100);
    for (const record of world.transactions) {
      expect(record.id).toMatch(/^txn_[0-9a-z]{20}$/);
      expect(record.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      expect(record.updatedAt >= record.createdAt).toBe(true);
      expect(Date.parse(record.createdAt)).toBeLessThanOrEqual(Date.now());
      expect(Number.isInteger(record.amount)).toBe(true);
      expect(['EXPENSE', 'DEDUCTION', 'TAX_PAYMENT'].includes(record.type) ? record.amount < 0 : record.amount > 0).toBe(true);
    }
    const keys = world.transactions.map((record) => `${record.createdAt}|${record.id}`);
    expect(keys).toEqual([...keys].sort());
    expect(world.deals.every((deal) => deal.id.startsWith('deal_'))).toBe(true);
    expect(world.onboardings.every((onboarding) => onboarding.id.startsWith('onb_'))).toBe(true);
  });

  it('churn changes records and sets updatedAt to the clock', async () => {
    let now = Date.parse('2027-01-01T00:00:00.000Z');
    const simulator = await start({ seed: 9, rateLimit: false, clock: () => now, anchor: ANCHOR });
    now += 1000;
    const changes = simulator.world.churnTick(40);
    expect(changes).toHaveLength(40);
    const stamp = new Date(now).toISOString();
    for (const change of changes) {
      const records =
        change.stream === 'onboardings'
          ? [...simulator.world.onboardings, ...simulator.world.completedOnboardings]
          : (simulator.world.streamRecords(change.stream) as { id: string; updatedAt: string }[]);
      expect(records.find((record) => record.id === change.id)?.updatedAt, `${change.stream} ${change.kind}`).toBe(stamp);
    }
    // Every stream with a churn rule changed.
    expect(new Set(changes.map((change) => change.stream))).toEqual(new Set(SIMULATED_STREAMS.filter((stream) => stream.churn).map((stream) => stream.name)));
    const changed = await api(simulator, `/transactions?updatedAfter=2027-01-01T00:00:00.500Z&limit=100`);
    expect(changed.body.content.pagination.total).toBe(new Set(changes.filter((change) => change.stream === 'transactions').map((change) => change.id)).size);
  });

  it('churns on a timer when enabled', async () => {
    const simulator = await start({ seed: 2, rateLimit: false, churn: { intervalMs: 20, perTick: 3 } });
    const since = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 150));
    const total = (body: { content: { pagination: { total: number } } }) => body.content.pagination.total;
    const counts = await Promise.all(
      SIMULATED_STREAMS.flatMap((stream) =>
        simulator.world.partitionQueries(stream.name).map(async (partition) => total((await api(simulator, `${stream.path}?${new URLSearchParams({ ...partition, updatedAfter: since })}`)).body)),
      ),
    );
    expect(counts.reduce((sum, count) => sum + count, 0)).toBeGreaterThan(0);
  });

  it('serves the admin surface: state, ground truth, world methods, churn and the request log', async () => {
    const simulator = await start({ seed: 4, rateLimit: false });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- admin answers are arbitrary JSON
    const admin = async (path: string, init?: RequestInit): Promise<any> => (await fetch(`${simulator.url}/__admin${path}`, init)).json();
    const state = await admin('/state');
    expect(state.counts.streams.transactions).toBe(500);
    expect(state.tokenNames).toContain('otherCompany');
    expect((await admin('/ground-truth/deals')).records).toEqual(simulator.world.groundTruth('deals'));
    const before = Date.now();
    await api(simulator, '/deals?limit=1');
    const created = await admin('/world/createTransaction', { method: 'POST', body: JSON.stringify([{ type: 'REFUND', amount: 700 }]) });
    expect(created.result).toMatchObject({ type: 'REFUND', amount: 700 });
    expect(simulator.world.transactions.some((record) => record.id === created.result.id)).toBe(true);
    const removed = await admin('/world/deleteRecord', { method: 'POST', body: JSON.stringify(['transactions', created.result.id]) });
    expect(removed.result).toBe(true);
    const churn = await admin('/churn', { method: 'POST', body: JSON.stringify({ count: 5 }) });
    expect(churn.changes).toHaveLength(5);
    const log = await admin(`/requests?since=${before}`);
    expect(log.requests).toEqual([expect.objectContaining({ method: 'GET', path: '/api/public/v1/deals', query: 'limit=1', status: 200, company: 'A', tokenName: 'admin' })]);
    expect((await fetch(`${simulator.url}/__admin/world/constructor`, { method: 'POST', body: '[]' })).status).toBe(404);
  });

  it('closes with a keep-alive socket open and an answer still being sent', async () => {
    const simulator = await startSimulator({ rateLimit: false });
    await api(simulator, '/deals?limit=1'); // leaves an idle keep-alive socket
    // An answer that would take about 20 minutes (a byte a second): a close that waited for its
    // connections would never resolve within the test's hang guard.
    simulator.faults.inject({ kind: 'trickle-body', chunkBytes: 1, intervalMs: 1000, match: { path: '/deals' } });
    const pending = api(simulator, '/deals?limit=5').then(
      () => 'answered',
      () => 'cut off',
    );
    while (simulator.requests.at(-1)?.bodyWrites === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
    await simulator.close();
    expect(await pending).toBe('cut off');
  });
});
