/**
 * Benchmark: `bizops-sync verify` (docs/sync.md "Verify"). Each figure is min / median / max of 3 runs,
 * in this process (the simulator without a rate limit, the mirror a SQLite file, an in-process
 * rate budget), on a mirror just backfilled from the same simulator:
 *
 * 1. Requests over the stream's minimum pages (ceil(N / 100)) for a verify of N transactions in a
 *    clean list. Goal 1.0: verify reads each page once.
 * 2. The same with ties in a new order on every request (bursts of up to 8 equal createdAt, seeded)
 *    and one record leaving the list after each of the first 10 pages: the drift and tie re-reads a
 *    backfill also pays.
 * 3. Verify's wall time per 10,000 records (s), and over the backfill's of the same N: comparing
 *    every record field by field with the mirror costs no more than writing it.
 *
 * Environment: `BENCH_VERIFY_N` (default 20000). Run alone: `node bench/verify.ts` (prints JSON).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimulator } from '@bizops-sync/simulator';
import { openContext } from '../jobs/context.ts';
import { verifyJob } from '../jobs/verify.ts';
import { configSchema } from '../src/config/schema.ts';
import { silentLogger } from '../src/logging/logger.ts';
import { machineLoad, repeat, spread } from './runs.ts';

const RUNS = 3;

interface VerifyRun {
  requestsOverMinimum: number;
  verifySeconds: number;
  backfillSeconds: number;
  equal: boolean;
}

/** Backfills `n` transactions into a fresh mirror, then verifies them (optionally under list faults). */
async function verifyOnce(n: number, faults: boolean, seed: number): Promise<VerifyRun> {
  const simulator = await startSimulator({ size: { transactions: n, deals: 0, onboardings: 0 }, rateLimit: false, ...(faults ? { createdInBursts: 8, anchor: Date.UTC(2026, 0, 1), seed } : {}) });
  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-verify-'));
  const config = configSchema.parse({
    baseUrl: simulator.url,
    tokens: { default: String(simulator.tokens.admin) },
    dbPath: join(dir, 'mirror.db'),
    rateLimit: { perMinute: 1_000_000, windowMs: 60_000 },
    sync: { streams: ['transactions'] },
  });
  try {
    const context = await openContext(config, { logger: silentLogger, rateBudget: 'local' });
    let backfillSeconds: number;
    try {
      const started = performance.now();
      const backfilled = await context.engine.run('transactions', 'backfill');
      if (backfilled.status !== 'succeeded') throw new Error(`backfill ${backfilled.status}: ${backfilled.error?.message ?? ''}`);
      backfillSeconds = (performance.now() - started) / 1000;
    } finally {
      await context.close();
    }
    const ordered = [...simulator.world.transactions].sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    const lastIndex = new Map(ordered.map((record, index) => [record.createdAt, index]));
    // Records the first page lists whatever the order (their whole tie run is in its positions): they leave after a page each.
    const leaving = ordered.filter((record) => lastIndex.get(record.createdAt)! < 100).slice(0, 10);
    if (faults) simulator.faults.inject({ kind: 'unstable-order', seed, times: 1_000_000, match: { path: '/transactions' } });
    const before = simulator.requests.length;
    const started = performance.now();
    const [result] = await verifyJob(config, ['transactions'], {
      logger: silentLogger,
      rateBudget: 'local',
      onProgress: (progress) => {
        const record = faults ? leaving[progress.pages - 1] : undefined;
        if (record) simulator.world.deleteRecord('transactions', record.id);
      },
    });
    const verifySeconds = (performance.now() - started) / 1000;
    const requests = simulator.requests.slice(before).filter((request) => request.path.endsWith('/transactions')).length;
    return { requestsOverMinimum: requests / Math.ceil(n / 100), verifySeconds, backfillSeconds, equal: result!.status === 'equal' };
  } finally {
    await simulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The figures (module comment). */
export async function run(): Promise<Record<string, string>> {
  const n = Number(process.env.BENCH_VERIFY_N ?? 20_000);
  const clean = await repeat(RUNS, (index) => verifyOnce(n, false, index + 1));
  const faulty = await repeat(RUNS, (index) => verifyOnce(n, true, index + 1));
  return {
    [`verify requests / minimum pages (${n.toLocaleString('en')}, clean list)`]: spread(clean.map((r) => r.requestsOverMinimum)),
    'verify requests / minimum pages (ties + drift)': spread(faulty.map((r) => r.requestsOverMinimum)),
    'verify seconds per 10,000 records': spread(clean.map((r) => (r.verifySeconds * 10_000) / n)),
    'verify time / backfill time (same N)': spread(clean.map((r) => r.verifySeconds / r.backfillSeconds)),
    'every verify found the mirror equal': String([...clean, ...faulty].every((r) => r.equal)),
    machine: machineLoad(),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await run(), null, 2));
