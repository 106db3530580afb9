/**
 * Benchmark: many companies in one deployment (issue 11 point 2). One simulator (in this process)
 * with 20 extra companies of 10,000 transactions each, every company limited to 60 requests per
 * 1 s window (spec §8 scaled down: the limit is per company); one child process runs
 * `bizops-sync backfill --all` over a configuration of 20 connections, as a user would. 3 runs.
 *
 * Figures, per company, from the server's request log:
 *   - requests / minimum: the requests the server received for the company over the pages a complete
 *     scan needs (one per 100 records). Goal 1.0.
 *   - wall / rate bound: the company's first to last request over the time its limit itself needs
 *     (the first window's LIMIT requests go at once, each further LIMIT need one more window:
 *     (ceil(minimum / LIMIT) - 1) windows, at least one). With 20 companies of 60 pages a second
 *     each, the deployment would have to take in 120,000 records a second: on a 2-core machine the
 *     worker's CPU, not the limit, sets the wall time, and this ratio says by how much.
 *   - 429 answers: goal 0.
 * Each as min / median / max over the companies, and the median company's over the 3 runs.
 *
 * Environment: BENCH_COMPANIES (20), BENCH_COMPANIES_RECORDS (10000), BENCH_COMPANIES_LIMIT (60).
 * Run alone: `node bench/companies.ts` (prints JSON).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSimulator } from '@bizops-sync/simulator';
import { machineLoad, repeat, runMeasured, spread } from './runs.ts';

const BIN = fileURLToPath(new URL('../bin/bizops-sync.js', import.meta.url));
const COMPANIES = Number(process.env.BENCH_COMPANIES ?? 20);
const RECORDS = Number(process.env.BENCH_COMPANIES_RECORDS ?? 10_000);
const LIMIT = Number(process.env.BENCH_COMPANIES_LIMIT ?? 60);
const WINDOW_MS = 1000;
const RUNS = 3;
const MINIMUM = Math.max(1, Math.ceil(RECORDS / 100));
const BOUND_MS = Math.max(1, Math.ceil(MINIMUM / LIMIT) - 1) * WINDOW_MS;

interface CompanyFigures {
  requestsOverMinimum: number;
  wallOverBound: number;
  rateLimited: number;
}

interface Run {
  companies: CompanyFigures[];
  processWallMs: number;
  peakRssMb: number;
}

/** One run: a fresh simulator and mirror directory, the CLI child, the server's counts per company. */
async function once(): Promise<Run> {
  const simulator = await startSimulator({
    companies: COMPANIES,
    extraCompanySizes: { transactions: RECORDS, deals: 0, onboardings: 0, customers: 0 },
    size: { transactions: 0, deals: 0, onboardings: 0, customers: 0 },
    rateLimit: { limit: LIMIT, windowMs: WINDOW_MS },
  });
  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-companies-'));
  try {
    const connections = Object.fromEntries(simulator.companies.map((company) => [`company-${company.k}`, { tokens: { default: company.token }, companyId: company.id }]));
    writeFileSync(
      join(dir, 'config.json'),
      JSON.stringify({ baseUrl: simulator.url, dbPath: join(dir, '{connection}.db'), rateLimit: { perMinute: LIMIT, windowMs: WINDOW_MS }, sync: { streams: ['transactions'] }, connections }),
    );
    const measured = await runMeasured(BIN, ['backfill', '--all', '--no-progress'], {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      BIZOPS_CONFIG: join(dir, 'config.json'),
      BIZOPS_LOG_LEVEL: 'warn',
      BIZOPS_LOG_FORMAT: 'json',
      ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
    });
    const counts = simulator.requestCounts();
    const companies = simulator.companies.map((company): CompanyFigures => {
      const times = simulator.requests.filter((request) => request.company === company.key).map((request) => request.at);
      return {
        requestsOverMinimum: counts[company.key]!.requests / MINIMUM,
        wallOverBound: (Math.max(...times) - Math.min(...times)) / BOUND_MS,
        rateLimited: counts[company.key]!.rateLimited,
      };
    });
    return { companies, processWallMs: measured.wallMs, peakRssMb: measured.peakRssMb };
  } finally {
    await simulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length % 2 === 1 ? sorted[(sorted.length - 1) / 2]! : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
}

export async function run(): Promise<Record<string, number | string>> {
  const runs = await repeat(RUNS, () => once());
  const figures: Record<string, number | string> = {
    [`companies x records, limit per company`]: `${COMPANIES} x ${RECORDS}, ${LIMIT} per ${WINDOW_MS} ms (minimum ${MINIMUM} requests, rate bound ${BOUND_MS} ms)`,
  };
  runs.forEach((result, index) => {
    figures[`run ${index + 1}: requests / minimum (companies)`] = spread(result.companies.map((company) => company.requestsOverMinimum));
    figures[`run ${index + 1}: wall / rate bound (companies)`] = spread(result.companies.map((company) => company.wallOverBound), 2);
  });
  figures['requests / minimum, median company (3 runs)'] = spread(runs.map((result) => median(result.companies.map((company) => company.requestsOverMinimum))));
  figures['wall / rate bound, median company (3 runs)'] = spread(runs.map((result) => median(result.companies.map((company) => company.wallOverBound))), 2);
  figures['wall / rate bound, slowest company (3 runs)'] = spread(runs.map((result) => Math.max(...result.companies.map((company) => company.wallOverBound))), 2);
  figures['process wall, s (3 runs)'] = spread(runs.map((result) => result.processWallMs / 1000), 1);
  figures['records per second, all companies (3 runs)'] = spread(runs.map((result) => (COMPANIES * RECORDS) / (result.processWallMs / 1000)), 0);
  figures['peak RSS of the process, MB (3 runs)'] = spread(runs.map((result) => result.peakRssMb), 0);
  figures['429 answers (all runs, all companies)'] = runs.reduce((sum, result) => sum + result.companies.reduce((inner, company) => inner + company.rateLimited, 0), 0);
  figures.machine = machineLoad();
  return figures;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(JSON.stringify(await run(), null, 2));
