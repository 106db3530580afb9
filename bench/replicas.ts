/**
 * Benchmark: failover of two daemons on one mirror (issue 11 point 3, docs/operations.md "Running
 * two daemons (replicas)"). Each figure is min / median / max of 3 runs.
 *
 * Two `bizops-sync daemon` processes on one mirror (a SQLite file; `BENCH_REPLICAS_DB` a PostgreSQL
 * URL puts it in a fresh schema of that database instead) and one Redis, against the simulator, with
 * `sync.leaseSeconds` 2. The first holds every lease (three streams, the webhooks); it is killed
 * with SIGKILL, and the time until the second holds every lease (its /readyz, polled every 20 ms)
 * is divided by the lease length. The bound: the dead daemon renewed at most a third of a lease
 * before it died, so its leases expire within one lease, and the survivor's next round comes within
 * a third more. Goal <= 1.34.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startSimulator } from '@bizops-sync/simulator';
import { machineLoad, repeat, spread } from './runs.ts';

const BIN = fileURLToPath(new URL('../bin/bizops-sync.js', import.meta.url));
const LEASE_SECONDS = 2;
const LEASES = 4;

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
  try {
    const body = (await (await fetch(`${url}/readyz`)).json()) as { leases?: string[] };
    return body.leases?.length ?? 0;
  } catch {
    return 0;
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

export async function run(): Promise<Record<string, number | string>> {
  const loadAtStart = machineLoad();
  const runs = await repeat(3, () => failoverMs());
  return {
    mirror: process.env.BENCH_REPLICAS_DB ? 'PostgreSQL' : 'SQLite file',
    leaseSeconds: LEASE_SECONDS,
    'takeover time / lease length': spread(runs.map((ms) => ms / (LEASE_SECONDS * 1000))),
    'takeover seconds': spread(runs.map((ms) => ms / 1000), 2),
    goal: '<= 1.34 (one lease, plus one round of a third)',
    machine: `${loadAtStart} at start, ${machineLoad()} at end`,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await run(), null, 2));
}
