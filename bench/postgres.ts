/**
 * Benchmark: PostgreSQL ingest over SQLite ingest in one run. Each figure is
 * min / median / max of `BENCH_POSTGRES_RUNS` (default 3) rounds.
 *
 * The same simulated backfill of `BENCH_POSTGRES_N` (default 100,000) transactions, rate limit off,
 * through the sync engine in this process (HTTP to the simulator, zod validation, change detection,
 * the page commit of src/sync/sync-engine.ts: run lock, record clock, records, changelog, quarantine,
 * checkpoint), once into a fresh SQLite file and once into a fresh PostgreSQL schema per round,
 * SQLite first in even rounds and PostgreSQL first in odd ones, so that load from other processes
 * and the state of the process (its heap, what is compiled) fall on both alike. An uncounted
 * warm-up backfill of 5,000 records into each comes first. The figure is PostgreSQL records/s over
 * SQLite records/s, plus the records/s of each. The simulator serves both alike (its world is built
 * once), so its share of the time dilutes the ratio the same way for both.
 *
 * Beside it, the CPU time of each backfill from opening the mirror to the end of the run: this
 * process's (the engine, and the simulator serving both alike) plus, for PostgreSQL, that of every
 * server backend that served one of its connections during the run (`BackendCpu`: read from /proc,
 * so the server must run on this machine; sampled while the run lasts, so that a connection the pool
 * closed meanwhile still counts); PostgreSQL's sum over SQLite's. Goal <= 1.4. The sampling runs in
 * this process: its CPU counts on PostgreSQL's side.
 *
 * Second figure, the commit path alone (no HTTP, no simulator): the same records, pre-fetched and
 * parsed by zod per page, each page applied (`MirrorStore.applyRecords`) and checkpointed
 * (`saveRun`) in one transaction, into each back end; PostgreSQL records/s over SQLite records/s.
 * This is where PostgreSQL's round trip per statement shows undiluted.
 *
 * Environment: `BENCH_POSTGRES_N`, `BENCH_POSTGRES_RUNS`; `BENCH_POSTGRES_URL` (default
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
import { MirrorStore } from '../src/mirror/mirror-store.ts';
import { timeOrderedUuid } from '../src/mirror/time-ordered-uuid.ts';
import { transactionsStream } from '../src/streams/definitions.ts';
import { SyncEngine } from '../src/sync/sync-engine.ts';
import { commitRate, jsonPages } from './commit-rate.ts';
import { machineLoad, repeat, spread } from './runs.ts';

/** Counted rounds (`BENCH_POSTGRES_RUNS` overrides). */
const RUNS = 3;

/** Records of the uncounted warm-up backfill into each back end. */
const WARM_UP_RECORDS = 5_000;

/** Both backfills' figures of one run: records per second, CPU time (ms) in this process and in the PostgreSQL server's backends (0 for SQLite). */
interface BackfillFigures {
  rate: number;
  workerMs: number;
  serverMs: number;
}

/** How often `BackendCpu` samples the backends while a backfill runs, ms. */
const SAMPLE_EVERY_MS = 500;

/**
 * The CPU time (user + system, ms) of the PostgreSQL server's backends serving this process's
 * connections during one backfill, every backend counted once however short-lived: this process's
 * TCP sockets to port `serverPort` (/proc/self/fd, /proc/net/tcp*) name the backends (their
 * `client_port` in `pg_stat_activity`, asked only when a new socket appears), and each backend's
 * /proc/PID/stat gives its CPU since it started. Sampled every `SAMPLE_EVERY_MS` and at `stop()`,
 * keeping each backend's last reading, so that a connection the pool closed during the run (idle past
 * its timeout) still counts up to its last sample. The sampling connection's own backend is not
 * counted. The server must run on this machine.
 */
class BackendCpu {
  readonly #client: pg.Client;
  readonly #serverPort: number;
  /** Backend pid by client port (the ports of this process's sockets already asked about). */
  readonly #pids = new Map<number, number | undefined>();
  /** Each backend's last reading, ms, by pid. */
  readonly #cpuMs = new Map<number, number>();
  #timer: NodeJS.Timeout | undefined;
  #sampling: Promise<void> = Promise.resolve();

  private constructor(client: pg.Client, serverPort: number) {
    this.#client = client;
    this.#serverPort = serverPort;
  }

  /** Starts sampling the backends of this process's connections to the server at `serverUrl`. */
  static async start(serverUrl: string): Promise<BackendCpu> {
    const client = new pg.Client({ connectionString: serverUrl });
    await client.connect();
    const own = (await client.query<{ port: number }>('SELECT client_port AS port FROM pg_stat_activity WHERE pid = pg_backend_pid()')).rows[0]!.port;
    const sampler = new BackendCpu(client, Number(new URL(serverUrl).port || 5432));
    sampler.#pids.set(own, undefined);
    sampler.#timer = setInterval(() => {
      sampler.#sampling = sampler.#sampling.then(() => sampler.#sample());
    }, SAMPLE_EVERY_MS);
    return sampler;
  }

  /** Takes a last sample, stops, closes the sampling connection; the backends' CPU time, ms. */
  async stop(): Promise<number> {
    clearInterval(this.#timer);
    await this.#sampling;
    await this.#sample();
    await this.#client.end();
    let total = 0;
    for (const ms of this.#cpuMs.values()) total += ms;
    return total;
  }

  async #sample(): Promise<void> {
    const ports = this.#ownPorts();
    const unknown = ports.filter((port) => !this.#pids.has(port));
    if (unknown.length > 0) {
      const rows = (await this.#client.query<{ pid: number; port: number }>('SELECT pid, client_port AS port FROM pg_stat_activity WHERE client_port = ANY($1::int[])', [unknown])).rows;
      for (const port of unknown) this.#pids.set(port, rows.find((row) => row.port === port)?.pid);
    }
    for (const port of ports) {
      const pid = this.#pids.get(port);
      if (pid === undefined) continue;
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        this.#cpuMs.set(pid, (Number(fields[11]) + Number(fields[12])) * 10);
      } catch {
        // ended meanwhile: its last reading stands
      }
    }
  }

  /** The local ports of this process's TCP sockets to `serverPort`. */
  #ownPorts(): number[] {
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
        if (Number.parseInt(fields[2]!.split(':')[1]!, 16) === this.#serverPort) ports.push(Number.parseInt(fields[1]!.split(':')[1]!, 16));
      }
    }
    return ports;
  }
}

/**
 * Backfills the simulator's transactions into the mirror at `location`; records per second of the
 * run, and its CPU time (ms) in this process and in the PostgreSQL server's backends (0 for SQLite),
 * from opening the mirror (migrations included) to the end of the run.
 */
async function backfillRate(simulator: RunningSimulator, location: string, serverUrl: string): Promise<BackfillFigures> {
  const backends = location.startsWith('postgres') ? await BackendCpu.start(serverUrl) : undefined;
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
    const serverMs = backends ? await backends.stop() : 0;
    return { rate: result.records / seconds, workerMs: (used.user + used.system) / 1000, serverMs };
  } finally {
    await client.close();
    await connection.close();
  }
}

/** Backfills `simulator` once into each back end, in `order`. */
async function backfillBoth(simulator: RunningSimulator, dir: string, serverUrl: string, order: readonly ('sqlite' | 'postgres')[]): Promise<{ sqlite: BackfillFigures; postgres: BackfillFigures }> {
  const figures: Partial<Record<'sqlite' | 'postgres', BackfillFigures>> = {};
  for (const backend of order) {
    figures[backend] =
      backend === 'sqlite'
        ? await backfillRate(simulator, join(dir, `mirror-${timeOrderedUuid()}.db`), serverUrl)
        : await inFreshSchema(serverUrl, (location) => backfillRate(simulator, location, serverUrl));
  }
  return { sqlite: figures.sqlite!, postgres: figures.postgres! };
}

/** Round `run`'s order: SQLite first in even rounds, PostgreSQL first in odd ones. */
function roundOrder(run: number): ('sqlite' | 'postgres')[] {
  return run % 2 === 0 ? ['sqlite', 'postgres'] : ['postgres', 'sqlite'];
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
  const runs = Number(process.env.BENCH_POSTGRES_RUNS ?? RUNS);
  const serverUrl = process.env.BENCH_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
  const loadAtStart = machineLoad();
  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-postgres-'));
  let backfills: { sqlite: BackfillFigures; postgres: BackfillFigures }[];
  let commits: { sqlite: number; postgres: number }[];
  const simulator = await startSimulator({ size: { transactions: n, deals: 0, onboardings: 0 }, rateLimit: false });
  try {
    // Warm-up, not counted: a small backfill into each back end, so that neither pays for the first
    // compilation of the engine, the simulator and the drivers in its counted runs.
    const warmUp = await startSimulator({ size: { transactions: WARM_UP_RECORDS, deals: 0, onboardings: 0 }, rateLimit: false });
    try {
      await backfillBoth(warmUp, dir, serverUrl, ['sqlite', 'postgres']);
    } finally {
      await warmUp.close();
    }
    backfills = await repeat(runs, (round) => backfillBoth(simulator, dir, serverUrl, roundOrder(round)));
    const pages = jsonPages(simulator.world.groundTruth('transactions'));
    commits = await repeat(runs, async (round) => {
      const rates: Partial<Record<'sqlite' | 'postgres', number>> = {};
      for (const backend of roundOrder(round)) {
        rates[backend] = backend === 'sqlite' ? await commitRate(pages, join(dir, `commit-${timeOrderedUuid()}.db`)) : await inFreshSchema(serverUrl, (location) => commitRate(pages, location));
      }
      return { sqlite: rates.sqlite!, postgres: rates.postgres! };
    });
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
