/**
 * Benchmark: the record clock (docs/sync.md "Record clock"), against the simulator in this process.
 *
 * - `3 h behind, no Date`: records stamped 3 h behind the server, which sends no `Date` header
 *   (the cursor is this host's clock). After a backfill, 4 rounds of: 10 transactions and 3 deals
 *   changed upstream, then a sync of every stream. Prints the changes missed after each sync (goal
 *   0; before the probe: 52, the 40 transactions and 12 deals changed), the lag measured over the true
 *   lag, and the requests of each sync over its minimum (one page per stream and the probe: 4).
 * - `backwards updatedAt`: 3,000 deals; one deal's `updatedAt` served 694 days back by one complete
 *   scan, then a quiet sync of every stream. Prints its requests over the minimum (4; before: 32
 *   requests, every deal listed, since the 694 days were kept as the lag).
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
import { STREAM_NAMES, STREAMS } from '../src/streams/definitions.ts';
import { repeat, spread } from './runs.ts';

const HOUR_MS = 3_600_000;
/** A quiet sync: one page per stream, and one probe of the deals before the transactions' run. */
const QUIET_MINIMUM = STREAM_NAMES.length + 1;

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
  for (const stream of STREAM_NAMES) {
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
      ratios.push((await syncAll(simulator, context, 'sync')) / QUIET_MINIMUM);
      missed = (await differing(simulator, context, 'transactions')) + (await differing(simulator, context, 'deals'));
    }
    const lag = await new RecordClockStore(context.store.executor).largest();
    return { missed, lagRatio: lag / (3 * 3600), ratios };
  });
}

async function backwardsTrial(): Promise<number> {
  return withWorld({ size: { transactions: 100, deals: 3_000, onboardings: 40 } }, async (simulator, context) => {
    await syncAll(simulator, context, 'backfill');
    const deal = simulator.world.deals[0]!;
    simulator.faults.inject({ kind: 'backwards-updated-at', id: deal.id, updatedAt: new Date(Date.parse(deal.updatedAt) - 694 * 24 * HOUR_MS).toISOString(), times: 1 });
    const reconcile = await context.engine.run('deals', 'reconcile');
    if (reconcile.status !== 'succeeded') throw new Error(`reconcile ended ${reconcile.status}`);
    return (await syncAll(simulator, context, 'sync')) / QUIET_MINIMUM;
  });
}

/** Runs the benchmark; figures keyed by what they measure. */
export async function run(): Promise<Record<string, number | string>> {
  const lag = await repeat(3, lagTrial);
  const backwards = await repeat(3, backwardsTrial);
  return {
    'ranges are': 'min / median / max of 3 runs',
    '3 h behind, no Date: changes missed after 4 syncs (goal 0)': spread(lag.map((t) => t.missed), 0),
    '3 h behind, no Date: lag measured / true lag': spread(lag.map((t) => t.lagRatio)),
    [`3 h behind, no Date: requests per sync / minimum (${QUIET_MINIMUM})`]: spread(lag.flatMap((t) => t.ratios)),
    [`backwards updatedAt: quiet sync requests / minimum (${QUIET_MINIMUM})`]: spread(backwards),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await run(), null, 2));
