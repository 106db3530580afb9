/**
 * Benchmark: failover of two daemons on one mirror (docs/operations.md "Running
 * two daemons (replicas)"). Each figure is min / median / max of 3 runs.
 *
 * Two `bizops-sync daemon` processes on one mirror (a SQLite file; `BENCH_REPLICAS_DB` a PostgreSQL
 * URL puts it in a fresh schema of that database instead) and one Redis, against the simulator, with
 * `sync.leaseSeconds` 2. The first holds every lease (one per registered stream, the webhooks'); it is killed
 * with SIGKILL, and the time until the second holds every lease (its /readyz, polled every 20 ms)
 * is divided by the lease length. The bound: the dead daemon renewed at most a third of a lease
 * before it died, so its leases expire within one lease, and the survivor's next round comes within
 * a third more. Goal <= 1.34.
 *
 * On PostgreSQL a second figure: the holder PAUSED (SIGSTOP, as a VM pause) while inside a page
 * transaction of a backfill (it holds the schema's transaction lock, seen in pg_locks), and the time
 * until the second daemon holds `stream:transactions`, over the lease length. The server ends the
 * paused session after `idle_in_transaction_session_timeout` (a third of the lease), freeing the
 * lock. `BENCH_REPLICAS_IDLE_TIMEOUT=0` turns that limit off (the URL's `options`), for the figure
 * without it: the pause then lasts at most `PAUSE_LIMIT_LEASES` leases and a replica that took
 * nothing by then counts as that many.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startSimulator } from '@bizops-sync/simulator';
import { STREAM_NAMES } from '../src/streams/definitions.ts';
import { machineLoad, repeat, spread } from './runs.ts';

const BIN = fileURLToPath(new URL('../bin/bizops-sync.js', import.meta.url));
const LEASE_SECONDS = 2;
/** Every lease a daemon takes: one per registered stream, and the webhooks'. */
const LEASES = STREAM_NAMES.length + 1;
/** The longest pause of the paused-holder figure, in leases. */
const PAUSE_LIMIT_LEASES = 5;
/** The key the mirror's writing transactions lock (src/mirror/sql/postgres.ts ADVISORY_LOCK_CLASS.transaction). */
const TRANSACTION_LOCK_CLASS = 0x62697a74;

interface Daemon {
  child: ChildProcess;
  url: Promise<string>;
}

function startDaemon(env: NodeJS.ProcessEnv): Daemon {
  const child = spawn(process.execPath, [BIN, 'daemon'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let pending = '';
  const url = new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      pending += String(chunk);
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        try {
          const entry = JSON.parse(line) as { component?: string; url?: unknown };
          if (entry.component === 'http' && typeof entry.url === 'string') resolve(entry.url);
        } catch {
          // not a log line
        }
      }
    });
    child.on('exit', (code) => reject(new Error(`the daemon exited (code ${code}) before listening`)));
  });
  return { child, url };
}

async function leasesHeld(url: string): Promise<number> {
  return (await leaseNames(url)).length;
}

async function leaseNames(url: string): Promise<string[]> {
  try {
    const body = (await (await fetch(`${url}/readyz`)).json()) as { leases?: string[] };
    return body.leases ?? [];
  } catch {
    return [];
  }
}

async function until(probe: () => Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await probe())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** One failover: ms from the SIGKILL until the survivor holds every lease. */
async function failoverMs(): Promise<number> {
  const simulator = await startSimulator({ rateLimit: false, size: { transactions: 100, deals: 20, onboardings: 5 } });
  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-replicas-'));
  const postgres = process.env.BENCH_REPLICAS_DB;
  const schema = `bench_replicas_${randomBytes(4).toString('hex')}`;
  let location = join(dir, 'mirror.db');
  if (postgres) {
    const url = new URL(postgres);
    url.searchParams.set('schema', schema);
    location = url.toString();
  }
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    BIZOPS_LOG_FORMAT: 'json',
    BIZOPS_BASE_URL: simulator.url,
    BIZOPS_TOKEN: String(simulator.tokens.admin),
    BIZOPS_DB: location,
    BIZOPS_HTTP_PORT: '0',
    BIZOPS_RATE_LIMIT_PER_MIN: '100000',
    BIZOPS_LEASE_SECONDS: String(LEASE_SECONDS),
    BIZOPS_WEBHOOK_URL: 'http://127.0.0.1:9/hooks',
    BIZOPS_WEBHOOK_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
  };
  const daemons: Daemon[] = [];
  try {
    const first = startDaemon(env);
    daemons.push(first);
    const firstUrl = await first.url;
    await until(async () => (await leasesHeld(firstUrl)) === LEASES, 'the first daemon to hold every lease');
    const second = startDaemon(env);
    daemons.push(second);
    const secondUrl = await second.url;
    const killedAt = performance.now();
    first.child.kill('SIGKILL');
    await until(async () => (await leasesHeld(secondUrl)) === LEASES, 'the second daemon to take every lease');
    return performance.now() - killedAt;
  } finally {
    for (const daemon of daemons) if (daemon.child.exitCode === null && daemon.child.signalCode === null) daemon.child.kill('SIGKILL');
    await simulator.close();
    rmSync(dir, { recursive: true, force: true });
    if (postgres) {
      const client = new pg.Client({ connectionString: postgres });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => client.end());
    }
  }
}

/**
 * One pause on PostgreSQL: ms from the SIGSTOP of the holder, caught inside a page transaction of a
 * backfill, until the second daemon holds `stream:transactions` (capped at PAUSE_LIMIT_LEASES leases).
 */
async function pausedTakeoverMs(postgres: string): Promise<number> {
  const simulator = await startSimulator({ rateLimit: false, latencyMs: 10, size: { transactions: 20_000, deals: 5, onboardings: 2 } });
  const schema = `bench_paused_${randomBytes(4).toString('hex')}`;
  const url = new URL(postgres);
  url.searchParams.set('schema', schema);
  if (process.env.BENCH_REPLICAS_IDLE_TIMEOUT !== undefined) url.searchParams.set('options', `-c idle_in_transaction_session_timeout=${process.env.BENCH_REPLICAS_IDLE_TIMEOUT}`);
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    BIZOPS_LOG_FORMAT: 'json',
    BIZOPS_BASE_URL: simulator.url,
    BIZOPS_TOKEN: String(simulator.tokens.admin),
    BIZOPS_DB: url.toString(),
    BIZOPS_HTTP_PORT: '0',
    BIZOPS_SCHEDULE: '*/1 * * * * *',
    BIZOPS_RATE_LIMIT_PER_MIN: '100000',
    BIZOPS_LEASE_SECONDS: String(LEASE_SECONDS),
  };
  const admin = new pg.Client({ connectionString: postgres });
  await admin.connect();
  const daemons: Daemon[] = [];
  try {
    const first = startDaemon(env);
    daemons.push(first);
    const firstUrl = await first.url;
    await until(async () => (await leaseNames(firstUrl)).includes('stream:transactions'), 'the first daemon to hold the transactions stream');
    const second = startDaemon(env);
    daemons.push(second);
    const secondUrl = await second.url;
    // This schema's transaction lock, granted: the holder is inside a writing transaction.
    const inTransaction = async () =>
      (
        await admin.query<{ n: number }>(
          "SELECT COUNT(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid::bigint = $1 AND objid::bigint = (hashtext($2)::bigint & 4294967295)",
          [TRANSACTION_LOCK_CLASS, schema],
        )
      ).rows[0]!.n > 0;
    let pausedAt = 0;
    await until(async () => {
      first.child.kill('SIGSTOP');
      pausedAt = performance.now();
      if (await inTransaction()) return true;
      first.child.kill('SIGCONT');
      return false;
    }, 'the holder to be paused inside a transaction');
    const limitMs = PAUSE_LIMIT_LEASES * LEASE_SECONDS * 1000;
    try {
      await until(async () => (await leaseNames(secondUrl)).includes('stream:transactions'), 'the second daemon to take the stream', limitMs);
    } catch {
      return limitMs;
    }
    return performance.now() - pausedAt;
  } finally {
    for (const daemon of daemons) {
      if (daemon.child.exitCode === null && daemon.child.signalCode === null) {
        daemon.child.kill('SIGCONT');
        daemon.child.kill('SIGKILL');
      }
    }
    await simulator.close();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => admin.end());
  }
}

export async function run(): Promise<Record<string, number | string>> {
  const loadAtStart = machineLoad();
  const runs = await repeat(3, () => failoverMs());
  const postgres = process.env.BENCH_REPLICAS_DB;
  const paused = postgres ? await repeat(3, () => pausedTakeoverMs(postgres)) : [];
  return {
    mirror: postgres ? 'PostgreSQL' : 'SQLite file',
    leaseSeconds: LEASE_SECONDS,
    'takeover time / lease length': spread(runs.map((ms) => ms / (LEASE_SECONDS * 1000))),
    'takeover seconds': spread(runs.map((ms) => ms / 1000), 2),
    ...(postgres
      ? {
          'paused in a transaction: takeover / lease': spread(paused.map((ms) => ms / (LEASE_SECONDS * 1000))),
          'idle_in_transaction_session_timeout': process.env.BENCH_REPLICAS_IDLE_TIMEOUT ?? 'a third of the lease (default)',
          'pause limit (leases)': PAUSE_LIMIT_LEASES,
        }
      : {}),
    goal: '<= 1.34 (one lease, plus one round of a third)',
    machine: `${loadAtStart} at start, ${machineLoad()} at end`,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await run(), null, 2));
}
