/**
 * Benchmark: a 100,000-record backfill against a server returning ties in an unstable order
 * (issue 7 point 2).
 *
 * The simulator (in this process) creates transactions in bursts sharing one createdAt (mean 8 a
 * burst) and answers every list request with the `unstable-order` fault: records tying on createdAt
 * come back in a new order per request, so the records at a page boundary differ between requests.
 * The worker backfills through the scaled rate limit bench/backfill.ts uses (60 requests per 1 s),
 * then runs a reconciliation (a second complete scan, the one that could tombstone).
 *
 * Prints requests used / minimum (ceil(N/100) per scan), false deletions (goal 0), whether the
 * mirror equals the simulator's truth, and the scans' outcomes.
 *
 * Run alone: `node bench/unstable-ties.ts` (prints JSON). `BENCH_TIES_N` overrides 100000.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimulator } from '@bizops-sync/simulator';
import { openContext } from '../jobs/context.ts';
import { configSchema } from '../src/config/schema.ts';
import { silentLogger } from '../src/logging/logger.ts';

const PAGE = 100;
const LIMIT = 60;
const WINDOW_MS = 1000;

/** Runs the benchmark; figures keyed by what they measure. */
export async function run(): Promise<Record<string, number | string>> {
  const n = Number(process.env.BENCH_TIES_N ?? 100_000);
  const simulator = await startSimulator({
    size: { transactions: n, deals: 0, onboardings: 0 },
    createdInBursts: 8,
    rateLimit: { limit: LIMIT, windowMs: WINDOW_MS },
  });
  simulator.faults.inject({ kind: 'unstable-order', times: Number.MAX_SAFE_INTEGER, match: { path: '/transactions' } });
  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-ties-'));
  const config = configSchema.parse({
    baseUrl: simulator.url,
    tokens: { default: String(simulator.tokens.admin) },
    dbPath: join(dir, 'mirror.db'),
    rateLimit: { perMinute: LIMIT, windowMs: WINDOW_MS },
  });
  const context = await openContext(config, { logger: silentLogger, rateBudget: 'local' });
  try {
    const minimum = Math.ceil(n / PAGE);
    const backfill = await context.engine.run('transactions', 'backfill');
    const reconcile = await context.engine.run('transactions', 'reconcile');
    if (backfill.status !== 'succeeded' || reconcile.status !== 'succeeded') {
      throw new Error(`runs ended ${backfill.status} / ${reconcile.status}: ${backfill.error?.message ?? reconcile.error?.message ?? ''}`);
    }
    const deletions = (context.db.prepare("SELECT COUNT(*) AS n FROM changes WHERE type = 'transaction.deleted'").get() as { n: number }).n;
    const truth = simulator.world.groundTruth('transactions') as { id: string }[];
    const rows = context.db.prepare('SELECT id, raw FROM transactions WHERE deleted_at IS NULL').all() as { id: string; raw: string }[];
    const mirrored = new Map(rows.map((row) => [row.id, row.raw]));
    const equal = rows.length === truth.length && truth.every((record) => mirrored.get(record.id) === JSON.stringify(record));
    const tiedIds = new Set<string>();
    const times = new Map<string, number>();
    for (const record of simulator.world.transactions) times.set(record.createdAt, (times.get(record.createdAt) ?? 0) + 1);
    for (const record of simulator.world.transactions) if ((times.get(record.createdAt) ?? 0) > 1) tiedIds.add(record.id);
    return {
      records: n,
      'records sharing a createdAt (ties)': tiedIds.size,
      'backfill: requests / minimum': (backfill.pages / minimum).toFixed(3),
      'backfill: ids listed twice (unstable ties)': backfill.scan?.repeatedIds ?? 0,
      'backfill: tie re-reads': backfill.scan?.reReads ?? 0,
      'backfill: scan': backfill.scan?.outcome ?? '-',
      'reconcile: requests / minimum': (reconcile.pages / minimum).toFixed(3),
      'reconcile: scan': reconcile.scan?.outcome ?? '-',
      'false deletions (goal 0)': deletions,
      'mirror equals truth after 2 runs': equal ? 'yes' : 'NO',
    };
  } finally {
    await context.close();
    await simulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await run(), null, 2));
