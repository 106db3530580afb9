/**
 * Benchmark: the rate budget on a backfill: 100,000 transactions through the CLI in a
 * child process (`bizops-sync backfill --stream transactions`), against the simulator at 60
 * requests per 1 s window (the spec's 60 per minute, time compressed 60 times) with the spec's
 * whole-second `X-RateLimit-Reset` and windows anchored at the simulator's start. Prints wall time
 * over the time the rate limit allows (the first window's 60 go at once; each further 60 needs one
 * more window), min / median / max of 3 runs, and the 429s (goal 0). Goal: wall / bound <= 1.05.
 *
 * Run alone: `node bench/budget.ts` (prints JSON). `BENCH_BUDGET_N` overrides 100000.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSimulator } from '@bizops-sync/simulator';

const BIN = fileURLToPath(new URL('../bin/bizops-sync.js', import.meta.url));
const PAGE = 100;
const LIMIT = 60;
const WINDOW_MS = 1000;
const RUNS = 3;

async function backfillOnce(n: number): Promise<{ wallMs: number; requests: number; rateLimited: number }> {
  const simulator = await startSimulator({ size: { transactions: n, deals: 0, onboardings: 0 }, rateLimit: { limit: LIMIT, windowMs: WINDOW_MS } });
  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-budget-'));
  try {
    const started = performance.now();
    const child = spawn(process.execPath, [BIN, 'backfill', '--stream', 'transactions', '--no-progress'], {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        BIZOPS_BASE_URL: simulator.url,
        BIZOPS_TOKEN: String(simulator.tokens.admin),
        BIZOPS_DB: join(dir, 'mirror.db'),
        BIZOPS_RATE_LIMIT_PER_MIN: String(LIMIT),
        BIZOPS_RATE_WINDOW_MS: String(WINDOW_MS),
        BIZOPS_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    if (code !== 0) throw new Error(`backfill exited with ${String(code)}`);
    const requests = simulator.requests.filter((request) => request.path.endsWith('/transactions'));
    return { wallMs: performance.now() - started, requests: requests.length, rateLimited: requests.filter((request) => request.status === 429).length };
  } finally {
    await simulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(): Promise<Record<string, number | string>> {
  const n = Number(process.env.BENCH_BUDGET_N ?? 100_000);
  const boundMs = (Math.ceil(Math.ceil(n / PAGE) / LIMIT) - 1) * WINDOW_MS;
  const runs = [];
  for (let index = 0; index < RUNS; index++) runs.push(await backfillOnce(n));
  const ratios = runs.map((result) => result.wallMs / boundMs).sort((a, b) => a - b);
  const at = (index: number) => Number(ratios[index]!.toFixed(3));
  return {
    records: n,
    'scaled rate limit': `${LIMIT} per ${WINDOW_MS} ms, whole-second Reset`,
    'rate-limit bound (s)': boundMs / 1000,
    'backfill wall time / rate bound (min/med/max; goal <= 1.05)': `${at(0)} / ${at(1)} / ${at(2)}`,
    '429s (each run)': runs.map((result) => result.rateLimited).join(' / '),
    'requests (each run)': runs.map((result) => result.requests).join(' / '),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await run(), null, 2));
}
