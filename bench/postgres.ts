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
 * Beside it, the CPU time of each backfill: this process's (the engine, and the simulator serving
 * both alike) plus, for PostgreSQL, that of the server's backends serving its connections (read from
 * /proc: the server must run on this machine); PostgreSQL's sum over SQLite's. Goal <= 1.4.
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
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
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

/**
 * CPU time (user + system, ms, since each started) of the PostgreSQL server's backends serving this
 * process's open connections: this process's TCP sockets to port `serverPort` (/proc/self/fd and
 * /proc/net/tcp*), their backends by `client_port` in `pg_stat_activity`, each backend's
 * /proc/PID/stat. The server must run on this machine. A backend whose connection the pool closed
 * before this call is not counted.
 */
async function ownBackendsCpuMs(serverUrl: string, serverPort: number): Promise<number> {
  const inodes = new Set<string>();
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`));
      if (match) inodes.add(match[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const ports: number[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10 || !inodes.has(fields[9]!)) continue;
      if (Number.parseInt(fields[2]!.split(':')[1]!, 16) === serverPort) ports.push(Number.parseInt(fields[1]!.split(':')[1]!, 16));
    }
  }
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    const rows = (await client.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE client_port = ANY($1::int[]) AND pid <> pg_backend_pid()', [ports])).rows;
    let ticks = 0;
    for (const { pid } of rows) {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        ticks += Number(fields[11]) + Number(fields[12]);
      } catch {
        // ended meanwhile
      }
    }
    return ticks * 10;
  } finally {
    await client.end();
  }
}

/** Backfills the simulator's transactions into the mirror at `location`; records per second of the run, and its CPU time (ms) in this process and in the PostgreSQL server's backends (0 for SQLite). */
async function backfillRate(simulator: RunningSimulator, location: string, serverUrl: string): Promise<{ rate: number; workerMs: number; serverMs: number }> {
  const cpuBefore = process.cpuUsage();
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
    const used = process.cpuUsage(cpuBefore);
    const serverMs = location.startsWith('postgres') ? await ownBackendsCpuMs(serverUrl, Number(new URL(serverUrl).port || 5432)) : 0;
    return { rate: result.records / seconds, workerMs: (used.user + used.system) / 1000, serverMs };
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
  let backfills: { sqlite: { rate: number; workerMs: number; serverMs: number }; postgres: { rate: number; workerMs: number; serverMs: number } }[];
  let commits: { sqlite: number; postgres: number }[];
  try {
    backfills = await repeat(RUNS, async () => ({
      sqlite: await backfillRate(simulator, join(dir, `mirror-${timeOrderedUuid()}.db`), serverUrl),
      postgres: await inFreshSchema(serverUrl, (location) => backfillRate(simulator, location, serverUrl)),
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
  const rates = backfills.map((r) => ({ sqlite: r.sqlite.rate, postgres: r.postgres.rate }));
  const cpu = (run: { workerMs: number; serverMs: number }) => run.workerMs + run.serverMs;
  return {
    records: n,
    'backfill CPU (worker + database server): PostgreSQL / SQLite (goal <= 1.4)': spread(backfills.map((r) => cpu(r.postgres) / cpu(r.sqlite))),
    'backfill CPU, s: PostgreSQL worker + server; SQLite': `${spread(backfills.map((r) => r.postgres.workerMs / 1000), 2)} + ${spread(backfills.map((r) => r.postgres.serverMs / 1000), 2)}; ${spread(backfills.map((r) => r.sqlite.workerMs / 1000), 2)}`,
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
