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
 * Two scenarios with records leaving the list while each scan pages (onboardings completing), 5
 * syncs each (docs/sync.md "Offset drift"):
 *
 * - `drop at every page`: 350 onboardings, no ties, one completes after every committed page.
 * - `long ties and completions`: 300 onboardings in bursts of 1 to 119, a new order per request,
 *   one completing per scan after the scan listed it.
 *
 * For those: requests / minimum per scan, scans over twice their minimum (goal 0), scans complete, completions recorded within two syncs,
 * completions invented (goal 0), scans that failed.
 *
 * Run alone: `node bench/unstable-ties.ts` (prints JSON). `BENCH_TIES_N` overrides 100000 (the
 * short-ties scenario), `BENCH_TIES_RUNS` the 3 runs, `BENCH_TIES_ONLY=churn` runs only the two
 * scenarios with completions.
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

interface ChurnTrial {
  /** Requests / minimum of each scan. */
  ratios: number[];
  complete: number;
  failed: number;
  /** Completions that happened at least two syncs before the end. */
  due: number;
  /** Of those, recorded (onboarding.completed) within two syncs. */
  recordedInTime: number;
  invented: number;
  /** Scans marked complete that had not listed a record still in the list (goal 0: such a scan counts a false miss). */
  unsound: number;
}

/** Five syncs of onboardings while some complete during each scan (module comment). */
async function churnTrial(kind: 'every-page' | 'long-ties', seed: number): Promise<ChurnTrial> {
  const anchor = Date.UTC(2026, 0, 1);
  const simulator = await startSimulator({
    size: { transactions: 0, deals: 0, onboardings: kind === 'every-page' ? 350 : 300 },
    seed,
    anchor,
    rateLimit: false,
    ...(kind === 'long-ties' ? { createdInBursts: 60 } : {}),
  });
  if (kind === 'every-page') {
    (simulator.world.streamRecords('onboardings') as { createdAt: string }[]).forEach((record, index) => (record.createdAt = new Date(anchor - 10_000_000 + index * 1000).toISOString()));
    simulator.world.touch('onboardings');
  } else {
    simulator.faults.inject({ kind: 'unstable-order', seed: 5 + seed, times: Number.MAX_SAFE_INTEGER, match: { path: '/employee-onboardings' } });
  }
  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-churn-'));
  const config = configSchema.parse({ baseUrl: simulator.url, tokens: { default: String(simulator.tokens.admin) }, dbPath: join(dir, 'mirror.db'), rateLimit: { perMinute: 100_000, windowMs: 60_000 } });
  const context = await openContext(config, { logger: silentLogger, rateBudget: 'local' });
  const completed = new Map<string, number>();
  const recordedAt = new Map<string, number>();
  const out: ChurnTrial = { ratios: [], complete: 0, failed: 0, due: 0, recordedInTime: 0, invented: 0, unsound: 0 };
  let step = 0;
  const complete = (sync: number, first: boolean) => {
    const list = simulator.world.streamRecords('onboardings') as { id: string }[];
    const victim = first ? list[0]! : list[(step++ * 37) % list.length]!;
    simulator.world.completeOnboarding(victim.id);
    completed.set(victim.id, sync);
  };
  try {
    const syncs = 5;
    for (let sync = 1; sync <= syncs; sync += 1) {
      const minimum = Math.ceil(simulator.world.streamRecords('onboardings').length / PAGE);
      const result = await context.engine.run('onboardings', 'sync', {
        onProgress: (progress) => {
          if (kind === 'every-page') complete(sync, false);
          else if (progress.pages === 2) complete(sync, true);
        },
      });
      out.ratios.push(result.pages / minimum);
      if (result.status !== 'succeeded') out.failed += 1;
      else if (result.scan?.outcome === 'complete') {
        out.complete += 1;
        const scanNumber = (await context.store.readSyncState('onboardings')).scanNumber;
        const seen = new Set((await context.connection.all<{ id: string }>('SELECT id FROM onboardings WHERE last_seen_scan = ?', [scanNumber])).map((row) => row.id));
        if ((simulator.world.groundTruth('onboardings') as { id: string }[]).some((record) => !seen.has(record.id))) out.unsound += 1;
      }
      for (const row of await context.connection.all<{ record_id: string }>("SELECT record_id FROM changes WHERE type = 'onboarding.completed'")) {
        if (!recordedAt.has(row.record_id)) recordedAt.set(row.record_id, sync);
      }
    }
    const truth = new Set((simulator.world.groundTruth('onboardings') as { id: string }[]).map((record) => record.id));
    out.invented = [...recordedAt.keys()].filter((id) => truth.has(id)).length;
    for (const [id, during] of completed) {
      if (during + 2 > syncs) continue;
      out.due += 1;
      if ((recordedAt.get(id) ?? Infinity) <= during + 2) out.recordedInTime += 1;
    }
    return out;
  } finally {
    await context.close();
    await simulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs the benchmark; figures keyed by what they measure. */
export async function run(): Promise<Record<string, number | string>> {
  const runs = Number(process.env.BENCH_TIES_RUNS ?? 3);
  const scenarios = process.env.BENCH_TIES_ONLY === 'churn' ? [] : [
    { name: 'short ties', n: Number(process.env.BENCH_TIES_N ?? 100_000), burst: 8 },
    { name: 'long ties', n: 10_000, burst: 150 },
  ];
  const figures: Record<string, number | string> = { 'ranges are': `min / median / max of ${runs} runs` };
  for (const kind of ['every-page', 'long-ties'] as const) {
    const name = kind === 'every-page' ? 'drop at every page' : 'long ties and completions';
    const trials = await repeat(runs, (index) => churnTrial(kind, index + 1));
    const ratios = trials.flatMap((trial) => trial.ratios);
    figures[`${name}: requests / minimum per scan`] = spread(ratios);
    figures[`${name}: scans over twice their minimum requests (goal 0)`] = `${ratios.filter((ratio) => ratio > 2).length} of ${ratios.length}`;
    figures[`${name}: scans complete`] = `${trials.reduce((sum, t) => sum + t.complete, 0)} of ${ratios.length}`;
    figures[`${name}: scans failed`] = trials.reduce((sum, t) => sum + t.failed, 0);
    figures[`${name}: completions recorded within 2 syncs`] = `${trials.reduce((sum, t) => sum + t.recordedInTime, 0)} of ${trials.reduce((sum, t) => sum + t.due, 0)}`;
    figures[`${name}: completions invented (goal 0)`] = trials.reduce((sum, t) => sum + t.invented, 0);
    figures[`${name}: complete scans that missed a listed record (goal 0)`] = trials.reduce((sum, t) => sum + t.unsound, 0);
  }
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
