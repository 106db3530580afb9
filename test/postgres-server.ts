/**
 * A PostgreSQL server of a test's own, for tests that must terminate its connections, restart it or
 * stop it (the shared test server on 5432 is never touched that way: other test files use it at the
 * same time). `startPostgresServer()` copies a fresh cluster into a temp dir and starts `postgres` on
 * a free port, as the `postgres` user when this process is root (`runuser`; the server refuses to run
 * as root); `stop()` shuts it down and removes the dir. The cluster is made by initdb once per test
 * process (a template no server runs on, removed when the process exits): a copy is a fresh cluster,
 * in a tenth of initdb's time.
 *
 * Binaries: /usr/lib/postgresql/15/bin, or BIZOPS_TEST_POSTGRES_BIN. Failing to start throws, naming
 * the step and its output; nothing is skipped.
 */
import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './free-port.ts';

const run = promisify(execFile);
const BIN = process.env.BIZOPS_TEST_POSTGRES_BIN || '/usr/lib/postgresql/15/bin';
const AS_ROOT = process.getuid?.() === 0;
/** util-linux's runuser lives in an sbin directory, which a minimal PATH (e.g. a CI runner's) may lack. */
const RUNUSER = ['/usr/sbin/runuser', '/sbin/runuser', '/usr/bin/runuser'].find((path) => existsSync(path)) ?? 'runuser';

/** A running PostgreSQL server of one test. */
export interface TestPostgresServer {
  port: number;
  /** `postgres://postgres@127.0.0.1:<port>/postgres`. */
  url: string;
  /** The URL of a mirror in schema `schema` on this server. */
  mirrorUrl(schema?: string): string;
  /**
   * Ends the backends of every connection named `bizops-sync` (application_name) with
   * `pg_terminate_backend`, as a failover or an administrator would.
   * @returns how many were ended
   */
  terminateBackends(): Promise<number>;
  /** Stops the server (fast shutdown: connections are ended) and leaves it stopped. */
  shutdown(): Promise<void>;
  /** Starts it again on the same port and data after `shutdown`. */
  start(): Promise<void>;
  /** Stops it for good and removes its data. Safe to call twice. */
  stop(): Promise<void>;
  /** Runs one statement as the superuser on a connection of its own. */
  query<Row extends pg.QueryResultRow = pg.QueryResultRow>(sql: string, parameters?: unknown[]): Promise<Row[]>;
}

let template: Promise<string> | undefined;

/**
 * The data dir of a fresh cluster made by initdb (trust authentication, UTF8, superuser `postgres`),
 * once per process; copies of it are the servers' data dirs. Removed when the process exits.
 * @throws Error naming initdb and its output when it fails (the next call tries again)
 */
function clusterTemplate(): Promise<string> {
  template ??= (async () => {
    removeTemplatesOfEndedProcesses();
    const dir = await ownedTempDir(`${TEMPLATE_PREFIX}${process.pid}-`);
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    const data = join(dir, 'data');
    await pgBinary('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
    return data;
  })();
  template.catch(() => (template = undefined));
  return template;
}

/** A template's temp dir: this prefix, then the pid of the process that made it. */
const TEMPLATE_PREFIX = 'bizops-pg-template-';

/**
 * Removes the templates whose process has ended without running its exit handler (a test worker the
 * runner ended from outside), each a cluster of about 40 MB left in the temp dir. Those of running
 * processes, this one's or another test run's, stay.
 */
function removeTemplatesOfEndedProcesses(): void {
  for (const name of readdirSync(tmpdir())) {
    const pid = Number(/^bizops-pg-template-(\d+)-/.exec(name)?.[1]);
    if (!Number.isInteger(pid) || pid === process.pid || processRuns(pid)) continue;
    rmSync(join(tmpdir(), name), { recursive: true, force: true });
  }
}

/** Whether process `pid` runs on this machine (signal 0 checks without sending; EPERM: it runs as another user). */
export function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A new temp dir, owned by the postgres user when this process is root. */
async function ownedTempDir(prefix: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (AS_ROOT) chownSync(dir, Number((await run('id', ['-u', 'postgres'])).stdout.trim()), Number((await run('id', ['-g', 'postgres'])).stdout.trim()));
  return dir;
}

/** Runs a PostgreSQL binary, as the postgres user when root. */
async function pgBinary(name: string, args: string[]): Promise<void> {
  const [file, argv] = AS_ROOT ? [RUNUSER, ['-u', 'postgres', '--', join(BIN, name), ...args]] : [join(BIN, name), args];
  try {
    await run(file, argv, { timeout: 60_000 });
  } catch (error) {
    const failure = error as Error & { stdout?: string; stderr?: string };
    throw new Error(`${name} ${args.join(' ')} failed: ${failure.message} ${failure.stderr ?? ''}`, { cause: error });
  }
}

/**
 * Starts a fresh PostgreSQL server on a free port (a copy of the process's initdb cluster in a temp
 * dir, trust authentication, fsync off: a test's data need not survive a power cut).
 * @throws Error naming the step (initdb, cp, pg_ctl) and its output, with the server log
 */
export async function startPostgresServer(): Promise<TestPostgresServer> {
  const cluster = await clusterTemplate();
  const dir = await ownedTempDir('bizops-pg-');
  const data = join(dir, 'data');
  const log = join(dir, 'server.log');
  // -a keeps the owner (postgres) and the data dir's mode (0700), which the server checks.
  await run('cp', ['-a', cluster, data]);
  let port = await freePort();
  const url = () => `postgres://postgres@127.0.0.1:${port}/postgres`;
  let running = false;
  let removed = false;
  const start = async () => {
    const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=60`;
    try {
      await pgBinary('pg_ctl', ['-D', data, '-o', options, '-l', log, '-w', '-t', '60', 'start']);
    } catch (error) {
      let output = '';
      try {
        output = readFileSync(log, 'utf8').slice(-2000);
      } catch {
        // no log yet
      }
      throw new Error(`${(error as Error).message}\nserver log:\n${output}`, { cause: error });
    }
    running = true;
  };
  const shutdown = async () => {
    if (!running) return;
    running = false;
    await pgBinary('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '60', 'stop']);
  };
  const query = async <Row extends pg.QueryResultRow>(sql: string, parameters?: unknown[]): Promise<Row[]> => {
    const client = new pg.Client({ connectionString: url(), application_name: 'bizops-test-admin' });
    client.on('error', () => {});
    await client.connect();
    try {
      return (await client.query<Row>(sql, parameters)).rows;
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  try {
    await start();
  } catch (error) {
    // Another process took the port between the probe and the start: once more on another.
    port = await freePort();
    try {
      await start();
    } catch {
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
  }
  return {
    get port() {
      return port;
    },
    get url() {
      return url();
    },
    mirrorUrl: (schema = 'bizops') => `${url()}?schema=${schema}`,
    async terminateBackends() {
      const rows = await query<{ ended: boolean }>("SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE application_name = 'bizops-sync' AND pid <> pg_backend_pid()");
      return rows.filter((row) => row.ended).length;
    },
    shutdown,
    start,
    async stop() {
      if (removed) return;
      removed = true;
      if (running) {
        running = false;
        await pgBinary('pg_ctl', ['-D', data, '-m', 'immediate', '-w', '-t', '60', 'stop']).catch(() => undefined);
      }
      rmSync(dir, { recursive: true, force: true });
    },
    query,
  };
}
