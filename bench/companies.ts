/**
 * Benchmark: many companies in one deployment. One simulator (in this process)
 * with 20 extra companies, each with its own limit per 1 s window (spec §8 scaled down: the limit is
 * per company); one child process runs `bizops-sync backfill --all` over a configuration of 20
 * connections, as a user would. 3 runs of each of two settings:
 *   - cpu-bound: 10,000 transactions per company at 60 requests per 1 s each (the figure);
 *   - limit-bound: 2,000 per company at 2 per 1 s, where the limit, not the machine, sets the pace:
 *     whether each company's budget is used to its own limit.
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
 * Environment: BENCH_COMPANIES (20), BENCH_COMPANIES_RECORDS (10000) and BENCH_COMPANIES_LIMIT (60)
 * of the cpu-bound setting.
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
const WINDOW_MS = 1000;
const RUNS = 3;

/** One setting measured: records per company and the limit per company per 1 s window. */
interface Scenario {
  label: string;
  records: number;
  limit: number;
}

/** Requests a complete scan of `records` needs (one per page of 100), and the time the limit needs for them, ms. */
function bounds(scenario: Scenario): { minimum: number; boundMs: number } {
  const minimum = Math.max(1, Math.ceil(scenario.records / 100));
  return { minimum, boundMs: Math.max(1, Math.ceil(minimum / scenario.limit) - 1) * WINDOW_MS };
}

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
async function once(scenario: Scenario): Promise<Run> {
  const { minimum, boundMs } = bounds(scenario);
  const simulator = await startSimulator({
    companies: COMPANIES,
    extraCompanySizes: { transactions: scenario.records, deals: 0, onboardings: 0, customers: 0 },
    size: { transactions: 0, deals: 0, onboardings: 0, customers: 0 },
    rateLimit: { limit: scenario.limit, windowMs: WINDOW_MS },
  });
  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-companies-'));
  try {
    const connections = Object.fromEntries(simulator.companies.map((company) => [`company-${company.k}`, { tokens: { default: company.token }, companyId: company.id }]));
    writeFileSync(
      join(dir, 'config.json'),
      JSON.stringify({ baseUrl: simulator.url, dbPath: join(dir, '{connection}.db'), rateLimit: { perMinute: scenario.limit, windowMs: WINDOW_MS }, sync: { streams: ['transactions'] }, connections }),
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
        requestsOverMinimum: counts[company.key]!.requests / minimum,
        wallOverBound: (Math.max(...times) - Math.min(...times)) / boundMs,
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

/** The figures of `RUNS` runs of `scenario`, keyed with its label. */
async function measure(scenario: Scenario): Promise<Record<string, number | string>> {
  const { minimum, boundMs } = bounds(scenario);
  const runs = await repeat(RUNS, () => once(scenario));
  const key = (name: string) => `${scenario.label}: ${name}`;
  const figures: Record<string, number | string> = {
    [key('companies x records, limit')]: `${COMPANIES} x ${scenario.records}, ${scenario.limit} per ${WINDOW_MS} ms each (minimum ${minimum} requests, rate bound ${boundMs} ms)`,
  };
  runs.forEach((result, index) => {
    figures[key(`run ${index + 1} requests / minimum`)] = spread(result.companies.map((company) => company.requestsOverMinimum));
    figures[key(`run ${index + 1} wall / rate bound`)] = spread(result.companies.map((company) => company.wallOverBound), 2);
  });
  figures[key('requests / minimum, median company')] = spread(runs.map((result) => median(result.companies.map((company) => company.requestsOverMinimum))));
  figures[key('wall / rate bound, median company')] = spread(runs.map((result) => median(result.companies.map((company) => company.wallOverBound))), 2);
  figures[key('wall / rate bound, slowest company')] = spread(runs.map((result) => Math.max(...result.companies.map((company) => company.wallOverBound))), 2);
  figures[key('process wall, s')] = spread(runs.map((result) => result.processWallMs / 1000), 1);
  figures[key('records per second, all companies')] = spread(runs.map((result) => (COMPANIES * scenario.records) / (result.processWallMs / 1000)), 0);
  figures[key('peak RSS of the process, MB')] = spread(runs.map((result) => result.peakRssMb), 0);
  figures[key('429 answers (all runs)')] = runs.reduce((sum, result) => sum + result.companies.reduce((inner, company) => inner + company.rateLimited, 0), 0);
  return figures;
}

export async function run(): Promise<Record<string, number | string>> {
  const scenarios: Scenario[] = [
    { label: 'cpu-bound', records: Number(process.env.BENCH_COMPANIES_RECORDS ?? 10_000), limit: Number(process.env.BENCH_COMPANIES_LIMIT ?? 60) },
    { label: 'limit-bound', records: 2_000, limit: 2 },
  ];
  const figures: Record<string, number | string> = {};
  for (const scenario of scenarios) Object.assign(figures, await measure(scenario));
  figures.machine = machineLoad();
  return figures;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(JSON.stringify(await run(), null, 2));
