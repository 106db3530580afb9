/**
 * Benchmark: the record clock (docs/sync.md "Record clock"), against the simulator in this process.
 *
 * - `3 h behind, no Date`: records stamped 3 h behind the server, which sends no `Date` header
 *   (the cursor is this host's clock). After a backfill, 4 rounds of: 10 transactions and 3 deals
 *   changed upstream, then a sync of every stream (as `bizops-sync sync`: the streams that measure
 *   the clock first). Prints the changes missed after the 4 syncs (goal 0; before the record clock:
 *   52, the 40 transactions and 12 deals changed), the lag measured over the true lag, and the
 *   requests of each sync over its minimum (a page per list and the transactions' own probe).
 * - `only transactions change`: the same clock, but only transactions change (5 created and 5
 *   voided per round; no deal moves, so no stream's pages show the lag). Prints the records missed
 *   after each of the 4 syncs (goal: 0 from the second) and the lag bound over the true lag.
 * - `backwards updatedAt`: 3,000 deals; one deal's `updatedAt` served 694 days back by one complete
 *   scan, then a quiet sync of every stream. Prints its requests over the minimum (before the
 *   plausibility rule: every deal listed, since the 694 days were kept as the lag).
 *
 * Each figure is min / median / max of 3 runs. Run alone: `node bench/record-clock.ts` (prints JSON).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimulator, type RunningSimulator, type SimulatorOptions } from '@bizops-sync/simulator';
import { openContext, type Context } from '../jobs/context.ts';
import { RecordClockStore } from '../src/mirror/record-clock-store.ts';
import { configSchema } from '../src/config/schema.ts';
import { silentLogger } from '../src/logging/logger.ts';
import { STREAM_LIST, STREAM_NAMES, streamByName, STREAMS } from '../src/streams/definitions.ts';
import { measuringFirst } from '../src/sync/record-clock-lags.ts';
import { RecordClockProbe } from '../src/sync/record-clock-probe.ts';
import { repeat, spread } from './runs.ts';

const HOUR_MS = 3_600_000;

/** A quiet sync's requests: one page per list (per partition of a partitioned stream), and the own probe of each stream that has one. */
function quietMinimum(simulator: RunningSimulator): number {
  return STREAM_LIST.reduce((sum, stream) => sum + simulator.world.partitionQueries(stream.name).length + (RecordClockProbe.probes(stream) ? 1 : 0), 0);
}

async function withWorld<T>(options: SimulatorOptions, body: (simulator: RunningSimulator, context: Context) => Promise<T>): Promise<T> {
  const simulator = await startSimulator({ rateLimit: false, ...options });
  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-clock-'));
  const config = configSchema.parse({ baseUrl: simulator.url, tokens: { default: String(simulator.tokens.admin) }, dbPath: join(dir, 'mirror.db') });
  const context = await openContext(config, { logger: silentLogger, rateBudget: 'local' });
  try {
    return await body(simulator, context);
  } finally {
    await context.close();
    await simulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Every stream, one after another (as `bizops-sync sync` runs them); the requests it took. */
async function syncAll(simulator: RunningSimulator, context: Context, reason: 'sync' | 'backfill' | 'reconcile'): Promise<number> {
  const before = simulator.requests.length;
  for (const stream of measuringFirst(STREAM_NAMES, streamByName)) {
    const result = await context.engine.run(stream, reason);
    if (result.status !== 'succeeded') throw new Error(`${stream} ${reason} ended ${result.status}: ${result.error?.message ?? ''}`);
  }
  return simulator.requests.length - before;
}

/** Records of `stream` whose mirrored version is not the server's (missing, or stale). */
async function differing(simulator: RunningSimulator, context: Context, stream: 'transactions' | 'deals'): Promise<number> {
  const rows = await context.connection.all<{ id: string; raw: string }>(`SELECT id, raw FROM ${STREAMS[stream].table} WHERE deleted_at IS NULL`);
  const mirrored = new Map(rows.map((row) => [row.id, row.raw]));
  return (simulator.world.groundTruth(stream) as { id: string }[]).filter((record) => mirrored.get(record.id) !== JSON.stringify(record)).length;
}

async function lagTrial(): Promise<{ missed: number; lagRatio: number; ratios: number[] }> {
  const now = Date.now();
  return withWorld({ size: { transactions: 2_000, deals: 500, onboardings: 40 }, recordClockLagMs: 3 * HOUR_MS, anchor: now - 4 * HOUR_MS }, async (simulator, context) => {
    simulator.faults.inject({ kind: 'no-date-header', times: Number.MAX_SAFE_INTEGER });
    await syncAll(simulator, context, 'backfill');
    const ratios: number[] = [];
    let missed = 0;
    for (let round = 0; round < 4; round++) {
      const open = simulator.world.transactions.filter((t) => t.status !== 'VOIDED').slice(round * 10, round * 10 + 10);
      for (const transaction of open) simulator.world.updateTransaction(transaction.id, { status: 'VOIDED' });
      for (const deal of simulator.world.deals.slice(round * 3, round * 3 + 3)) simulator.world.updateDeal(deal.id, { title: `round ${round}` });
      ratios.push((await syncAll(simulator, context, 'sync')) / quietMinimum(simulator));
      missed = (await differing(simulator, context, 'transactions')) + (await differing(simulator, context, 'deals'));
    }
    const lag = await new RecordClockStore(context.store.executor).largest();
    return { missed, lagRatio: lag / (3 * 3600), ratios };
  });
}

async function transactionsOnlyTrial(): Promise<{ missed: number[]; lagRatio: number }> {
  const now = Date.now();
  return withWorld({ size: { transactions: 2_000, deals: 500, onboardings: 40 }, recordClockLagMs: 3 * HOUR_MS, anchor: now - 4 * HOUR_MS }, async (simulator, context) => {
    simulator.faults.inject({ kind: 'no-date-header', times: Number.MAX_SAFE_INTEGER });
    await syncAll(simulator, context, 'backfill');
    const missed: number[] = [];
    for (let round = 0; round < 4; round++) {
      for (let index = 0; index < 5; index++) simulator.world.createTransaction({ type: 'INCOME', amount: 100 + index });
      const open = simulator.world.transactions.filter((t) => t.status !== 'VOIDED').slice(round * 5, round * 5 + 5);
      for (const transaction of open) simulator.world.updateTransaction(transaction.id, { status: 'VOIDED' });
      await syncAll(simulator, context, 'sync');
      missed.push(await differing(simulator, context, 'transactions'));
    }
    return { missed, lagRatio: (await new RecordClockStore(context.store.executor).largest()) / (3 * 3600) };
  });
}

async function backwardsTrial(): Promise<number> {
  return withWorld({ size: { transactions: 100, deals: 3_000, onboardings: 40 } }, async (simulator, context) => {
    await syncAll(simulator, context, 'backfill');
    const deal = simulator.world.deals[0]!;
    simulator.faults.inject({ kind: 'backwards-updated-at', id: deal.id, updatedAt: new Date(Date.parse(deal.updatedAt) - 694 * 24 * HOUR_MS).toISOString(), times: 1 });
    const reconcile = await context.engine.run('deals', 'reconcile');
    if (reconcile.status !== 'succeeded') throw new Error(`reconcile ended ${reconcile.status}`);
    return (await syncAll(simulator, context, 'sync')) / quietMinimum(simulator);
  });
}

/** Runs the benchmark; figures keyed by what they measure. */
export async function run(): Promise<Record<string, number | string>> {
  const lag = await repeat(3, lagTrial);
  const only = await repeat(3, transactionsOnlyTrial);
  const backwards = await repeat(3, backwardsTrial);
  return {
    'ranges are': 'min / median / max of 3 runs',
    '3 h behind, no Date: changes missed after 4 syncs (goal 0)': spread(lag.map((t) => t.missed), 0),
    '3 h behind, no Date: lag measured / true lag': spread(lag.map((t) => t.lagRatio)),
    '3 h behind, no Date: requests per sync / minimum': spread(lag.flatMap((t) => t.ratios)),
    ...Object.fromEntries([0, 1, 2, 3].map((round) => [`only transactions change: records missed after sync ${round + 1} (goal 0 from the 2nd)`, spread(only.map((t) => t.missed[round]!), 0)])),
    'only transactions change: lag bound / true lag': spread(only.map((t) => t.lagRatio)),
    'backwards updatedAt: quiet sync requests / minimum': spread(backwards),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await run(), null, 2));
