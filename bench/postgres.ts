/**
 * Benchmark: PostgreSQL ingest over SQLite ingest in one run. Each figure is
 * min / median / max of 3 runs.
 *
 * The same simulated backfill of `BENCH_POSTGRES_N` (default 100,000) transactions, rate limit off,
 * through the sync engine in this process (HTTP to the simulator, zod validation, change detection,
 * the page commit of src/sync/sync-engine.ts: run lock, record clock, records, changelog, quarantine,
 * checkpoint), once into a fresh SQLite file and once into a fresh PostgreSQL schema, alternated so
 * that load from other processes falls on both alike. The figure is PostgreSQL records/s over
 * SQLite records/s, plus the records/s of each. The simulator serves both alike (its world is built
 * once), so its share of the time dilutes the ratio the same way for both.
 *
 *
 * Second figure, the commit path alone (no HTTP, no simulator): the same records, pre-fetched and
 * parsed by zod per page, each page applied (`MirrorStore.applyRecords`) and checkpointed
 * (`saveRun`) in one transaction, into each back end; PostgreSQL records/s over SQLite records/s.
 * This is where PostgreSQL's round trip per statement shows undiluted.
 *
 * Environment: `BENCH_POSTGRES_N`; `BENCH_POSTGRES_URL` (default
 * postgres://postgres@127.0.0.1:5432/postgres; each run gets its own schema, dropped afterwards).
 * Run alone: `node bench/postgres.ts` (prints JSON).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startSimulator, type RunningSimulator } from '@bizops-sync/simulator';
import { ApiClient } from '../src/client/client.ts';
import { LocalRateBudget } from '../src/client/local-rate-budget.ts';
import { openMirrorConnection } from '../src/mirror/open.ts';
import { MirrorStore, timeOrderedUuid } from '../src/mirror/mirror-store.ts';
import { transactionsStream } from '../src/streams/definitions.ts';
import { SyncEngine } from '../src/sync/sync-engine.ts';
import { commitRate, jsonPages } from './commit-rate.ts';
import { machineLoad, repeat, spread } from './runs.ts';

const RUNS = 3;

/** Backfills the simulator's transactions into the mirror at `location`; records per second of the run. */
async function backfillRate(simulator: RunningSimulator, location: string): Promise<number> {
  const connection = await openMirrorConnection(location, { streams: [transactionsStream] });
  const client = new ApiClient({
    baseUrl: simulator.url,
    tokens: { default: String(simulator.tokens.admin) },
    // Far above what one process sends: the worker, not a limit, decides the pace.
    budget: new LocalRateBudget({ limit: 1_000_000, windowMs: 1000 }),
  });
  try {
    const engine = new SyncEngine({ client, store: new MirrorStore(connection) });
    const started = performance.now();
    const result = await engine.run('transactions', 'backfill');
    const seconds = (performance.now() - started) / 1000;
    if (result.status !== 'succeeded') throw new Error(`the backfill into ${connection.location} ended ${result.status}: ${result.error ?? ''}`);
    return result.records / seconds;
  } finally {
    await client.close();
    await connection.close();
  }
}

/** Runs `work` against a fresh schema of the PostgreSQL server at `serverUrl`, dropped afterwards. */
async function inFreshSchema<T>(serverUrl: string, work: (location: string) => Promise<T>): Promise<T> {
  const schema = `bench_${process.pid}_${timeOrderedUuid().replaceAll('-', '').slice(-12)}`;
  const url = new URL(serverUrl);
  url.searchParams.set('schema', schema);
  try {
    return await work(url.toString());
  } finally {
    const client = new pg.Client({ connectionString: serverUrl });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  }
}

export async function run(): Promise<Record<string, number | string>> {
  const n = Number(process.env.BENCH_POSTGRES_N ?? 100_000);
  const serverUrl = process.env.BENCH_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
  const loadAtStart = machineLoad();
  const simulator = await startSimulator({ size: { transactions: n, deals: 0, onboardings: 0 }, rateLimit: false });
  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-postgres-'));
  let rates: { sqlite: number; postgres: number }[];
  let commits: { sqlite: number; postgres: number }[];
  try {
    rates = await repeat(RUNS, async () => ({
      sqlite: await backfillRate(simulator, join(dir, `mirror-${timeOrderedUuid()}.db`)),
      postgres: await inFreshSchema(serverUrl, (location) => backfillRate(simulator, location)),
    }));
    const pages = jsonPages(simulator.world.groundTruth('transactions'));
    commits = await repeat(RUNS, async () => ({
      sqlite: await commitRate(pages, join(dir, `commit-${timeOrderedUuid()}.db`)),
      postgres: await inFreshSchema(serverUrl, (location) => commitRate(pages, location)),
    }));
  } finally {
    await simulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return {
    records: n,
    'PostgreSQL records/s / SQLite records/s': spread(rates.map((r) => r.postgres / r.sqlite)),
    'PostgreSQL records/s': spread(rates.map((r) => r.postgres), 0),
    'SQLite records/s': spread(rates.map((r) => r.sqlite), 0),
    'commit path: PostgreSQL / SQLite records/s': spread(commits.map((r) => r.postgres / r.sqlite)),
    'commit path: PostgreSQL records/s': spread(commits.map((r) => r.postgres), 0),
    'commit path: SQLite records/s': spread(commits.map((r) => r.sqlite), 0),
    machine: `${loadAtStart} at start, ${machineLoad()} at end`,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await run(), null, 2));
}
