/**
 * Operational events (docs/operations.md "Operational events"): a stream's condition is kept in the
 * mirror and each change of it appends one `stream.*` event to the changelog, once per transition
 * and not once per run: `stream.failing` after `sync.failingAfterRuns` failed runs in a row,
 * `stream.recovered` at the next success, `stream.unsupported` when its list answers 404 (the
 * others answering), `stream.stale` when no run succeeded for its threshold. Against the simulator
 * over HTTP; every event also passes its JSON Schema (syncFixtures validates the changelog).
 */
import { describe, expect, it } from 'vitest';
import { readStatus } from '../../jobs/status.ts';
import { scheduleIntervalMs, StaleStreamWatch } from '../../src/daemon/stale-streams.ts';
import type { AppendedChange } from '../../src/mirror/mirror-store.ts';
import type { SqlExecutor } from '../../src/mirror/sql/executor.ts';
import { syncFixtures } from '../helpers.ts';

const fixtures = syncFixtures();
const NO_RETRIES = { clientRetry: { maxRetries: 0, maxRateLimitRetries: 0 } };
const TRANSACTIONS_500 = { match: { path: '/transactions' }, kind: 'status', status: 500, body: { message: 'down' }, times: 1000 } as const;
const DEALS_404 = { match: { path: '/deals' }, kind: 'status', status: 404, body: { message: 'Not found' }, times: 1000 } as const;

/** The `stream.*` events of the mirror, in seq order. */
async function conditionEvents(executor: Pick<SqlExecutor, 'all'>): Promise<{ type: string; stream: string; record: Record<string, unknown> }[]> {
  const rows = await executor.all<{ type: string; stream: string; data: string }>(
    `SELECT type, stream, data FROM changes WHERE type IN ('stream.failing', 'stream.stale', 'stream.recovered', 'stream.unsupported') ORDER BY seq`,
  );
  return rows.map((row) => ({ type: row.type, stream: row.stream, record: (JSON.parse(row.data) as { record: Record<string, unknown> }).record }));
}

describe('stream conditions', () => {
  it('failing once after N failed runs in a row (not per run), recovered once at the next success', async () => {
    const { sim, context } = await fixtures.start({ size: { transactions: 5 } }, { sync: { failingAfterRuns: 2 } }, NO_RETRIES);
    const heard: AppendedChange[] = [];
    context.onChanges((changes) => heard.push(...changes));
    expect((await context.engine.run('transactions', 'backfill')).status).toBe('succeeded');
    sim.faults.inject(TRANSACTIONS_500);
    expect((await context.engine.run('transactions', 'sync')).status).toBe('failed');
    expect(await conditionEvents(context.connection)).toEqual([]);
    expect((await context.engine.run('transactions', 'sync')).status).toBe('failed');
    for (let run = 0; run < 3; run += 1) expect((await context.engine.run('transactions', 'sync')).status).toBe('failed');
    const failing = await conditionEvents(context.connection);
    expect(failing).toHaveLength(1);
    expect(failing[0]).toMatchObject({ type: 'stream.failing', stream: 'transactions', record: { stream: 'transactions', condition: 'failing', previous: 'ok', failedRuns: 2 } });
    expect(failing[0]!.record.lastError).toMatch(/500|down/);
    expect(await context.conditions.read('transactions')).toMatchObject({ condition: 'failing', failedRuns: 5 });
    // status says so.
    expect((await readStatus(context.config.dbPath)).streams.find((stream) => stream.stream === 'transactions')!.condition).toMatchObject({ condition: 'failing', failedRuns: 5 });
    // Handed to the process's listeners (the webhook dispatcher, metrics) like any change.
    expect(heard.filter((change) => change.type === 'stream.failing')).toHaveLength(1);

    sim.faults.clear();
    expect((await context.engine.run('transactions', 'sync')).status).toBe('succeeded');
    expect((await context.engine.run('transactions', 'sync')).status).toBe('succeeded');
    const after = await conditionEvents(context.connection);
    expect(after.map((event) => event.type)).toEqual(['stream.failing', 'stream.recovered']);
    expect(after[1]!.record).toMatchObject({ condition: 'ok', previous: 'failing', failedRuns: 0, lastError: null });
    expect(await context.conditions.read('transactions')).toMatchObject({ condition: 'ok', failedRuns: 0 });
  });

  it('fewer failures than the threshold, then a success: no event at all', async () => {
    const { sim, context } = await fixtures.start({ size: { transactions: 5 } }, { sync: { failingAfterRuns: 3 } }, NO_RETRIES);
    expect((await context.engine.run('transactions', 'backfill')).status).toBe('succeeded');
    sim.faults.inject(TRANSACTIONS_500);
    for (let run = 0; run < 2; run += 1) expect((await context.engine.run('transactions', 'sync')).status).toBe('failed');
    sim.faults.clear();
    expect((await context.engine.run('transactions', 'sync')).status).toBe('succeeded');
    expect(await conditionEvents(context.connection)).toEqual([]);
    expect(await context.conditions.read('transactions')).toMatchObject({ condition: 'ok', failedRuns: 0 });
  });

  it('unsupported once when its list answers 404 (however many syncs skip it), recovered when it answers again', async () => {
    const { sim, context } = await fixtures.start({ size: { deals: 4, transactions: 3 } }, { sync: { unsupportedProbeSeconds: 0 } });
    sim.faults.inject(DEALS_404);
    for (let run = 0; run < 3; run += 1) expect((await context.engine.run('deals', 'sync')).status).toBe('unsupported');
    expect((await conditionEvents(context.connection)).map((event) => event.type)).toEqual(['stream.unsupported']);
    sim.faults.clear();
    expect((await context.engine.run('deals', 'sync')).status).toBe('succeeded');
    const events = await conditionEvents(context.connection);
    expect(events.map((event) => event.type)).toEqual(['stream.unsupported', 'stream.recovered']);
    expect(events[1]!.record).toMatchObject({ stream: 'deals', condition: 'ok', previous: 'unsupported' });
  });

  it('stale once when no run succeeded for its threshold (however often checked), recovered at the next success', async () => {
    const { context } = await fixtures.start({ size: { transactions: 3 } });
    expect((await context.engine.run('transactions', 'backfill')).status).toBe('succeeded');
    const lastSuccess = Date.parse((await context.store.readSyncState('transactions')).lastSuccessAt!);
    const watchStart = new Date(lastSuccess);
    // Within the threshold: nothing.
    expect(await context.conditions.checkStale('transactions', 60_000, watchStart, new Date(lastSuccess + 59_000))).toBeUndefined();
    // Past it: one event, and checking again says nothing more.
    expect((await context.conditions.checkStale('transactions', 60_000, watchStart, new Date(lastSuccess + 61_000)))?.type).toBe('stream.stale');
    expect(await context.conditions.checkStale('transactions', 60_000, watchStart, new Date(lastSuccess + 600_000))).toBeUndefined();
    expect((await context.engine.run('transactions', 'sync')).status).toBe('succeeded');
    const events = await conditionEvents(context.connection);
    expect(events.map((event) => event.type)).toEqual(['stream.stale', 'stream.recovered']);
    expect(events[0]!.record).toMatchObject({ stream: 'transactions', condition: 'stale', previous: 'ok', lastError: null });
    expect(events[1]!.record).toMatchObject({ condition: 'ok', previous: 'stale' });
  });

  it('a stream that never succeeded counts from the start of the watch', async () => {
    const { context } = await fixtures.start({ size: { transactions: 3 } });
    const start = new Date('2026-01-01T00:00:00.000Z');
    expect(await context.conditions.checkStale('transactions', 10_000, start, new Date(start.getTime() + 9_000))).toBeUndefined();
    expect((await context.conditions.checkStale('transactions', 10_000, start, new Date(start.getTime() + 10_000)))?.type).toBe('stream.stale');
  });
});

describe('a stream\'s stale threshold', () => {
  it('staleAfterSchedules intervals of its schedule, at least staleMinimumSeconds, plus the rest adaptive polling gives it now', async () => {
    const { context } = await fixtures.start({ size: { transactions: 1 } });
    let factor = 1;
    const watch = new StaleStreamWatch({
      conditions: context.conditions,
      streams: [
        { stream: 'deals', schedule: '*/30 * * * * *' },
        { stream: 'transactions', schedule: '*/1 * * * * *' },
      ],
      staleAfterSchedules: 10,
      staleMinimumSeconds: 300,
      pollFactor: () => factor,
    });
    expect(watch.thresholdSeconds('deals')).toBe(300);
    expect(watch.thresholdSeconds('transactions')).toBe(300);
    // A quiet deals stream polled every 16th tick: its last success is up to 15 intervals older by plan.
    factor = 16;
    expect(watch.thresholdSeconds('deals')).toBe(300 + 15 * 30);
    expect(watch.thresholdSeconds('onboardings')).toBeUndefined();
  });
});

describe('a schedule interval', () => {
  it.each([
    ['*/30 * * * * *', 30_000],
    ['*/1 * * * * *', 1_000],
    ['0 17 */6 * * *', 6 * 3_600_000],
    ['0 */5 * * * *', 300_000],
  ])('%s: %d ms (the longest gap between its next ticks)', (expression, ms) => {
    expect(scheduleIntervalMs(expression)).toBe(ms);
  });
});
