/**
 * Benchmark: backfills against a server returning ties in an unstable order.
 *
 * The simulator (in this process) creates transactions in bursts sharing one createdAt and answers
 * every list request with the `unstable-order` fault: records tying on createdAt come back in a new
 * order per request, so the records at a page boundary differ between requests. The worker
 * backfills through the scaled rate limit bench/backfill.ts uses (60 requests per 1 s), then runs a
 * reconciliation (a second complete scan, the one that could tombstone). Two scenarios:
 *
 * - `short ties`: 100,000 records in bursts of 1 to 15 (mean 8), the case.
 * - `long ties`: 10,000 records in bursts of 1 to 299 (mean 150): runs longer than a page, which
 *   no single answer can hold (docs/sync.md "Unstable order among ties").
 *
 * Prints, as min / median / max of 3 runs: requests used / minimum (ceil(N/100) per scan), tie
 * re-reads, false deletions (goal 0), how many runs left the mirror equal to the simulator's truth
 * after 2 runs (goal 3 of 3), and how many first scans were complete.
 *
 * Run alone: `node bench/unstable-ties.ts` (prints JSON). `BENCH_TIES_N` overrides 100000 (the
 * short-ties scenario), `BENCH_TIES_RUNS` the 3 runs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimulator } from '@bizops-sync/simulator';
import { openContext } from '../jobs/context.ts';
import { configSchema } from '../src/config/schema.ts';
import { silentLogger } from '../src/logging/logger.ts';
import { repeat, spread } from './runs.ts';

const PAGE = 100;
const LIMIT = 60;
const WINDOW_MS = 1000;

interface Trial {
  backfillRatio: number;
  reconcileRatio: number;
  reReads: number;
  repeatedIds: number;
  deletions: number;
  equal: boolean;
  firstComplete: boolean;
}

/** One backfill + reconciliation of `n` records created in bursts of mean `burst`. */
async function trial(n: number, burst: number): Promise<Trial> {
  const simulator = await startSimulator({
    size: { transactions: n, deals: 0, onboardings: 0 },
    createdInBursts: burst,
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
    const deletions = ((await context.connection.get("SELECT COUNT(*) AS n FROM changes WHERE type = 'transaction.deleted'")) as { n: number }).n;
    const truth = simulator.world.groundTruth('transactions') as { id: string }[];
    const rows = (await context.connection.all('SELECT id, raw FROM transactions WHERE deleted_at IS NULL')) as { id: string; raw: string }[];
    const mirrored = new Map(rows.map((row) => [row.id, row.raw]));
    return {
      backfillRatio: backfill.pages / minimum,
      reconcileRatio: reconcile.pages / minimum,
      reReads: backfill.scan?.reReads ?? 0,
      repeatedIds: backfill.scan?.repeatedIds ?? 0,
      deletions,
      equal: rows.length === truth.length && truth.every((record) => mirrored.get(record.id) === JSON.stringify(record)),
      firstComplete: backfill.scan?.outcome === 'complete',
    };
  } finally {
    await context.close();
    await simulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs the benchmark; figures keyed by what they measure. */
export async function run(): Promise<Record<string, number | string>> {
  const runs = Number(process.env.BENCH_TIES_RUNS ?? 3);
  const scenarios = [
    { name: 'short ties', n: Number(process.env.BENCH_TIES_N ?? 100_000), burst: 8 },
    { name: 'long ties', n: 10_000, burst: 150 },
  ];
  const figures: Record<string, number | string> = { 'ranges are': `min / median / max of ${runs} runs` };
  for (const { name, n, burst } of scenarios) {
    const trials = await repeat(runs, () => trial(n, burst));
    figures[`${name}: records, burst sizes`] = `${n}, 1 to ${2 * burst - 1}`;
    figures[`${name}: backfill requests / minimum`] = spread(trials.map((t) => t.backfillRatio));
    figures[`${name}: reconcile requests / minimum`] = spread(trials.map((t) => t.reconcileRatio));
    figures[`${name}: backfill ids listed twice`] = spread(trials.map((t) => t.repeatedIds), 0);
    figures[`${name}: backfill tie re-reads`] = spread(trials.map((t) => t.reReads), 0);
    figures[`${name}: first scans complete`] = `${trials.filter((t) => t.firstComplete).length} of ${runs}`;
    figures[`${name}: false deletions (goal 0)`] = trials.reduce((sum, t) => sum + t.deletions, 0);
    figures[`${name}: mirror equals truth after 2 runs`] = `${trials.filter((t) => t.equal).length} of ${runs} (goal: all)`;
  }
  return figures;
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await run(), null, 2));
