/**
 * The scheduler and reconciliation, in process: the real sync engine (createContext) against the
 * simulator over HTTP, a real SQLite file, real node-cron ticks on a 1-second schedule.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Context } from '../../jobs/context.ts';
import { StreamScheduler } from '../../src/daemon/scheduler.ts';
import type { RunningSimulator } from '@bizops-sync/simulator';
import type { StreamName } from '../../src/streams/definitions.ts';
import type { RunResult } from '../../src/sync/sync-engine.ts';
import { simulator, tempDir, testConfig, testContext, type TempDir, waitFor } from '../helpers.ts';

let sim: RunningSimulator | undefined;
let dir: TempDir | undefined;
let context: Context | undefined;
let scheduler: StreamScheduler | undefined;

afterEach(async () => {
  await scheduler?.stop();
  await context?.close();
  await sim?.close();
  dir?.remove();
  sim = dir = context = scheduler = undefined;
});

/** Never within a test's lifetime. */
const NEVER = '0 0 1 1 *';

async function dealRow(ctx: Context, id: string): Promise<{ deleted_at: string | null } | undefined> {
  return (await ctx.connection.get('SELECT deleted_at FROM deals WHERE id = ?', [id])) as { deleted_at: string | null } | undefined;
}

async function deletedEvents(ctx: Context, id: string): Promise<number> {
  return ((await ctx.connection.get("SELECT COUNT(*) AS n FROM changes WHERE type = 'deal.deleted' AND record_id = ?", [id])) as { n: number }).n;
}

describe('StreamScheduler', () => {
  it('backfills a stream without a cursor at start, then reconciles on its schedule: a deal deleted upstream is tombstoned (deal.deleted) only after two complete scans miss it', async () => {
    sim = await simulator({ size: { deals: 120 } });
    dir = tempDir();
    const ctx = (context = await testContext(testConfig(sim, dir.file('mirror.db'))));
    const deleted = (sim.world.groundTruth('deals')[7] as { id: string }).id;
    const results: RunResult[] = [];
    // Read as each reconciliation finishes (the queries start in the callback), awaited below.
    const afterReconcile: Promise<{ deletedAt: string | null; events: number }>[] = [];
    const withCursor = (await ctx.store.readSyncState('deals')).cursor !== null;
    scheduler = new StreamScheduler({
      engine: ctx.engine,
      streams: ['deals'],
      schedule: NEVER,
      reconcileSchedule: '*/1 * * * * *',
      hasCursor: () => withCursor,
      onRunFinished: (result) => {
        results.push(result);
        // Deleted upstream right after the backfill saw it, before any reconciliation starts.
        if (result.reason === 'backfill') sim!.world.deleteRecord('deals', deleted);
        if (result.reason === 'reconcile') afterReconcile.push(Promise.all([dealRow(ctx, deleted), deletedEvents(ctx, deleted)]).then(([row, events]) => ({ deletedAt: row?.deleted_at ?? null, events })));
      },
    });
    scheduler.start();
    await waitFor(() => afterReconcile.length >= 2, 'two reconciliations', 30_000);
    expect(results[0]).toMatchObject({ reason: 'backfill', status: 'succeeded', records: 120 });
    expect(results.slice(1, 3).map((result) => [result.reason, result.status, result.mode])).toEqual([
      ['reconcile', 'succeeded', 'complete'],
      ['reconcile', 'succeeded', 'complete'],
    ]);
    // First complete scan missing it: still live, no event. Second: tombstoned, one deal.deleted.
    const [first, second] = await Promise.all(afterReconcile.slice(0, 2));
    expect(first).toEqual({ deletedAt: null, events: 0 });
    expect(second!.deletedAt).not.toBeNull();
    expect(second!.events).toBe(1);
    expect(results[2]!.tombstones).toBe(1);
    // Reconciliation spends the lowest priority of the rate budget.
    expect(ctx.budgets.stats().granted.incremental).toBe(0);
    expect(ctx.budgets.stats().granted.backfill).toBeGreaterThanOrEqual(6);
  });

  it('never runs one stream twice at once: ticks that find it running are skipped; stop() aborts the run in flight at once', async () => {
    // Every response takes 1.3 s, longer than the 1 s between ticks.
    sim = await simulator({ size: { deals: 50, transactions: 20 }, latencyMs: 1_300 });
    dir = tempDir();
    const ctx = (context = await testContext(testConfig(sim, dir.file('mirror.db'))));
    const running = new Map<StreamName, number>();
    let overlaps = 0;
    const skipped: StreamName[] = [];
    const results: RunResult[] = [];
    scheduler = new StreamScheduler({
      engine: ctx.engine,
      streams: ['deals', 'transactions'],
      schedule: '*/1 * * * * *',
      reconcileSchedule: NEVER,
      hasCursor: () => true,
      onRunStarted: (stream) => {
        if ((running.get(stream) ?? 0) > 0) overlaps += 1;
        running.set(stream, (running.get(stream) ?? 0) + 1);
      },
      onRunFinished: (result) => {
        running.set(result.stream, running.get(result.stream)! - 1);
        results.push(result);
      },
      onTickSkipped: (stream) => skipped.push(stream),
    });
    scheduler.start();
    await waitFor(() => results.length >= 2 && skipped.filter((stream) => stream === 'deals').length >= 1, 'a finished run and a skipped tick', 30_000);
    expect(overlaps).toBe(0);
    // Streams run side by side: wait for a tick that starts both, then ask for another deals run.
    await waitFor(() => scheduler!.activeRuns().length === 2, 'both streams running', 20_000, 10);
    expect(scheduler.activeRuns().map((run) => run.stream).sort()).toEqual(['deals', 'transactions']);
    expect(scheduler.trigger('deals', 'sync')).toBe('skipped');

    const finishedBefore = results.length;
    // stop() aborts the runs rather than waiting for them: both end interrupted.
    await scheduler.stop();
    expect(results.slice(finishedBefore).map((result) => result.status)).toEqual(['interrupted', 'interrupted']);
    expect(scheduler.trigger('deals', 'sync')).toBe('stopped');
    expect(overlaps).toBe(0);
  });

  it('a reconciliation due while the stream syncs is queued and runs right after', async () => {
    sim = await simulator({ size: { deals: 30 }, latencyMs: 300 });
    dir = tempDir();
    const ctx = (context = await testContext(testConfig(sim, dir.file('mirror.db'))));
    const reasons: string[] = [];
    scheduler = new StreamScheduler({
      engine: ctx.engine,
      streams: ['deals'],
      schedule: NEVER,
      reconcileSchedule: NEVER,
      hasCursor: () => false,
      onRunStarted: (_stream, reason) => reasons.push(reason),
    });
    scheduler.start();
    expect(scheduler.trigger('deals', 'reconcile')).toBe('queued');
    expect(scheduler.trigger('deals', 'reconcile')).toBe('queued');
    await waitFor(() => reasons.length >= 2 && scheduler!.activeRuns().length === 0, 'the queued reconciliation', 20_000);
    expect(reasons).toEqual(['backfill', 'reconcile']);
  });

  it('refuses an invalid schedule, naming its key', () => {
    const base = { engine: { run: () => Promise.reject(new Error('unused')) }, streams: ['deals'] as StreamName[], hasCursor: () => true };
    expect(() => new StreamScheduler({ ...base, schedule: 'every minute', reconcileSchedule: NEVER })).toThrow(/^sync\.schedule: "every minute" is not a valid cron expression/);
    expect(() => new StreamScheduler({ ...base, schedule: NEVER, reconcileSchedule: '0 0 * * * * *' })).toThrow(/^sync\.reconcileSchedule: /);
    expect(() => new StreamScheduler({ ...base, schedule: NEVER, reconcileSchedule: NEVER, streamSchedules: { deals: '99 * * * *' } })).toThrow(
      /^sync\.streamSchedules\.deals: "99 \* \* \* \*" is not a valid cron expression \(minute/,
    );
  });
});

describe('reconciliation (engine level)', () => {
  it('a reconcile scan that fails on its third page tombstones nothing; its resumed completion counts as the second scan', async () => {
    sim = await simulator({ size: { deals: 250 } });
    dir = tempDir();
    const ctx = (context = await testContext(testConfig(sim, dir.file('mirror.db'))));
    expect((await ctx.engine.run('deals', 'backfill')).status).toBe('succeeded');
    const gone = (sim.world.groundTruth('deals')[10] as { id: string }).id;
    sim.world.deleteRecord('deals', gone);

    const firstMiss = await ctx.engine.run('deals', 'reconcile');
    expect(firstMiss).toMatchObject({ status: 'succeeded', tombstones: 0 });
    expect((await dealRow(ctx, gone))!.deleted_at).toBeNull();

    // The next scan fails on its third page (a 500 from then on, beyond the client's retries).
    const failed = await ctx.engine.run('deals', 'reconcile', {
      onProgress: (progress) => {
        if (progress.pages === 2) sim!.faults.inject({ match: { path: '/deals' }, kind: 'status', status: 500, times: 1000 });
      },
    });
    sim.faults.clear();
    expect(failed.status).toBe('failed');
    expect(failed.pages).toBe(2);
    expect((await dealRow(ctx, gone))!.deleted_at).toBeNull();
    expect(await deletedEvents(ctx, gone)).toBe(0);
    expect(((await ctx.connection.get("SELECT COUNT(*) AS n FROM changes WHERE type = 'deal.deleted'")) as { n: number }).n).toBe(0);

    // Resumed from its checkpoint and completed: the second complete scan that misses it.
    const resumed = await ctx.engine.run('deals', 'reconcile');
    expect(resumed).toMatchObject({ status: 'succeeded', resumed: true, tombstones: 1 });
    expect((await dealRow(ctx, gone))!.deleted_at).not.toBeNull();
    expect(await deletedEvents(ctx, gone)).toBe(1);
  });
});
