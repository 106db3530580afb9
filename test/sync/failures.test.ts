import { describe, expect, it, onTestFinished } from 'vitest';
import type { Context } from '../../jobs/context.ts';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { capturingLogger, listRequests, simulator, syncFixtures, tempDir, testConfig, testContext, type SyncFixture } from '../helpers.ts';

const fixtures = syncFixtures();

const TRANSACTIONS_PATH = '/api/public/v1/transactions';

async function setup(transactions = 1_000): Promise<SyncFixture> {
  return fixtures.start({ size: { transactions } });
}

/** Injects `fault` once the run has committed `pages` pages. */
/**
 * `fault` on every request for the page at `offset` (onwards of page `offset / 100 + 1`), injected
 * before the run: the page a read-ahead fetches early fails as surely as one fetched late.
 */
function atOffset(sim: RunningSimulator, offset: number, fault: Parameters<RunningSimulator['faults']['inject']>[0]): void {
  sim.faults.inject({ ...fault, match: { ...fault.match, query: { offset: String(offset) } } });
}

async function rowCount(ctx: Context): Promise<number> {
  return ((await ctx.connection.get('SELECT COUNT(*) AS n FROM transactions')) as { n: number }).n;
}

describe('failures mid-run', () => {
  it('a malformed JSON page stops the run with a message naming the path and offset; the mirror holds only checkpointed pages', async () => {
    const { sim, context: ctx } = await setup();
    atOffset(sim, 200, { match: { path: TRANSACTIONS_PATH }, kind: 'malformed-json', times: 100 });
    const result = await ctx.engine.run('transactions', 'backfill');
    expect(result.status).toBe('failed');
    expect(result.error?.message).toMatch(/GET \/transactions/);
    expect(result.error?.message).toMatch(/offset=200/);
    expect(await rowCount(ctx)).toBe(200);
    expect((await ctx.store.readSyncState('transactions')).run?.offset).toBe(200);
    expect((await ctx.store.readSyncState('transactions')).lastError).toMatch(/transactions/);
    sim.faults.clear();
    const resumed = await ctx.engine.run('transactions', 'backfill');
    expect(resumed).toMatchObject({ status: 'succeeded', resumed: true, pages: 8 });
    expect(await rowCount(ctx)).toBe(1_000);
  });

  it('a page whose items mostly fail validation stops the run naming the item and the field; nothing of that page is stored', async () => {
    const { sim, context: ctx } = await setup();
    atOffset(sim, 300, { match: { path: TRANSACTIONS_PATH }, kind: 'invalid-item', count: 51, times: 100 });
    const result = await ctx.engine.run('transactions', 'backfill');
    expect(result.status).toBe('failed');
    expect(result.error?.message).toMatch(/51 of 100 items fail the schema, the page is refused as a whole; first: item 0 field status/);
    expect(result.error?.message).toMatch(/offset=300/);
    expect(await rowCount(ctx)).toBe(300);
    expect((await ctx.connection.get('SELECT COUNT(*) AS n FROM rejected_records'))).toEqual({ n: 0 });
  });

  it('a burst of 500s and a connection reset mid-body are retried and the run completes', async () => {
    const { sim, context: ctx } = await setup();
    const result = await ctx.engine.run('transactions', 'backfill', {
      onProgress: (progress) => {
        if (progress.pages === 2) sim.faults.inject({ match: { path: TRANSACTIONS_PATH }, kind: 'status', status: 500, times: 3 });
        if (progress.pages === 5) sim.faults.inject({ match: { path: TRANSACTIONS_PATH }, kind: 'reset-mid-body', times: 2 });
      },
    });
    expect(result.status).toBe('succeeded');
    expect(await rowCount(ctx)).toBe(1_000);
    const statuses = listRequests(sim, '/transactions').map((r) => r.status);
    expect(statuses.filter((s) => s === 500)).toHaveLength(3);
    expect((await ctx.connection.get('SELECT COUNT(DISTINCT record_id) AS n, COUNT(*) AS total FROM changes'))).toEqual({ n: 1_000, total: 1_000 });
  });

  it('deals answering 404 mark the stream unsupported instead of failing', async () => {
    const { sim, context: ctx } = await setup(10);
    sim.faults.inject({ match: { path: '/api/public/v1/deals' }, kind: 'status', status: 404, body: { message: 'Not found' }, times: 100 });
    const result = await ctx.engine.run('deals', 'backfill');
    expect(result.status).toBe('unsupported');
    expect((await ctx.store.readSyncState('deals')).supported).toBe(false);
    const requests = listRequests(sim, '/deals').length;
    expect((await ctx.engine.run('deals', 'sync')).status).toBe('unsupported');
    expect(listRequests(sim, '/deals')).toHaveLength(requests);
  });
});

describe('rate limit', () => {
  it.each([
    ['seconds', () => '2'],
    ['an HTTP date', () => new Date(Date.now() + 3000).toUTCString()],
  ])('a 429 whose Retry-After is %s: nothing is sent until it passes, then the run succeeds', async (_label, retryAfter) => {
    const { sim, context: ctx } = await setup(300);
    const value = retryAfter();
    const waitUntil = /^\d+$/.test(value) ? Date.now() + Number(value) * 1000 : Date.parse(value);
    sim.faults.inject({ match: { path: TRANSACTIONS_PATH }, kind: 'rate-limit', retryAfter: value, times: 1 });
    const result = await ctx.engine.run('transactions', 'backfill');
    expect(result.status).toBe('succeeded');
    const requests = listRequests(sim, '/transactions');
    const limited = requests.findIndex((r) => r.status === 429);
    expect(limited).toBe(0);
    const next = requests[limited + 1]!;
    // Date headers have second resolution; allow for that rounding but nothing earlier.
    expect(next.at).toBeGreaterThanOrEqual(waitUntil - 1000);
    expect(requests.slice(1).every((r) => r.status === 200)).toBe(true);
  });

  it('a backfill alone against the simulator\'s limit gets zero 429s', async () => {
    // 17 pages: three windows of the limit.
    const { sim, context } = await fixtures.start({ size: { transactions: 1_700 }, rateLimit: { limit: 8, windowMs: 1000 } }, { rateLimit: { perMinute: 8, windowMs: 1000 } });
    const result = await context.engine.run('transactions', 'backfill');
    expect(result.status).toBe('succeeded');
    const requests = listRequests(sim, '/transactions');
    expect(requests).toHaveLength(17);
    expect(requests.filter((r) => r.status === 429)).toEqual([]);
  });
});

describe('secrets', () => {
  it('the bearer token appears in no log line, even at trace level and on failures', async () => {
    const sim = await simulator({ size: { transactions: 250 } });
    const dir = tempDir();
    onTestFinished(async () => {
      await sim.close();
      dir.remove();
    });
    const token = String(sim.tokens.admin);
    // No literal-secret scrubbing here: only what the code itself redacts protects the token.
    const { logger, lines } = capturingLogger();
    const context = await testContext(testConfig(sim, dir.file('mirror.db')), { logger });
    onTestFinished(() => context.close());
    atOffset(sim, 100, { match: { path: TRANSACTIONS_PATH }, kind: 'status', status: 503, times: 2 });
    await context.engine.run('transactions', 'backfill');
    sim.faults.inject({ match: { path: TRANSACTIONS_PATH }, kind: 'malformed-json', times: 100 });
    const failed = await context.engine.run('transactions', 'backfill');
    expect(failed.status).toBe('failed');
    expect(lines.length).toBeGreaterThan(5);
    const raw = new RegExp(token.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    for (const line of lines) expect(line).not.toMatch(raw);
    expect(failed.error?.message).not.toMatch(raw);
    expect(lines.join('')).toMatch(/transactions/);
  });
});

describe('a server that pages forever', () => {
  it('stops with a message instead of following hasMore past the total', async () => {
    const { sim, context } = await fixtures.start({ size: { transactions: 150 } });
    sim.faults.inject({
      match: { path: TRANSACTIONS_PATH },
      kind: 'status',
      status: 200,
      times: 1000,
      body: { message: 'ok', content: { transactions: [], pagination: { total: 150, limit: 100, offset: 0, hasMore: true } } },
    });
    const result = await context.engine.run('transactions', 'backfill');
    expect(result.status).toBe('failed');
    expect(result.error?.message).toMatch(/hasMore with no items at an offset past its total \(150\)/);
  });
});
