/**
 * Exit codes as the README says (0 ok, 1 a run failed, 2 bad usage or configuration, 75 a stream
 * skipped because another process runs it, 130 Ctrl-C), for every command that runs until stopped;
 * commander's own errors as one `bizops-sync:` line; `--db` on backfill, sync and write; `status`
 * and `changes` on a read-only mount of the mirror. Real processes, a real simulator; every wait is
 * on a condition (a log line, a file, the process's exit).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { Redis } from 'ioredis';
import { Leases } from '../../src/mirror/leases.ts';
import { openMirror } from '../../src/mirror/database.ts';
import { sqliteConnection } from '../../src/mirror/sql/sqlite.ts';
import { BIN, runCli, simulator, tempDir, type TempDir, waitFor } from '../helpers.ts';
import { cliEnv, spawnDaemon, terminate } from '../daemon/helpers.ts';
import { REDIS_URL, requireRedis } from '../writes/support.ts';

let dir: TempDir | undefined;
let sim: RunningSimulator | undefined;
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await sim?.close();
  sim = undefined;
  if (dir) chmodSync(dir.path, 0o755);
  dir?.remove();
  dir = undefined;
});

/** A simulator and the environment of a CLI child pointed at it, its mirror in a temp dir. */
async function setUp(extra: Record<string, string> = {}): Promise<NodeJS.ProcessEnv> {
  sim = await simulator({ size: { transactions: 30, deals: 10, onboardings: 3, customers: 5 } });
  dir = tempDir();
  return cliEnv({ BIZOPS_BASE_URL: sim.url, BIZOPS_TOKEN: String(sim.tokens.admin), BIZOPS_DB: dir.file('mirror.db'), BIZOPS_CONFIG: '', REDIS_URL, ...extra });
}

/** A CLI child whose JSON log lines (stderr) and stdout are collected. */
function spawnCli(args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += String(chunk)));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += String(chunk)));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, exited, stdout: () => stdout, stderr: () => stderr };
}

describe('exit codes', () => {
  it("commander's errors are one line with the bizops-sync: prefix, exit 2", async () => {
    for (const args of [['sync', '--bogus'], ['synk'], ['enqueue'], ['sync', '--stream']]) {
      const result = spawnSync(process.execPath, [BIN, ...args], { env: cliEnv(), encoding: 'utf8' });
      expect(result.status, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toMatch(/^bizops-sync: [^\n]+; --help shows the usage\n$/);
      expect(result.stderr).not.toMatch(/^error:/m);
    }
    expect(spawnSync(process.execPath, [BIN, 'synk'], { env: cliEnv(), encoding: 'utf8' }).stderr).toBe("bizops-sync: unknown command 'synk' (Did you mean sync?); --help shows the usage\n");
  });

  it('Ctrl-C ends the daemon with 130 and SIGTERM with 0', async () => {
    const env = await setUp({ BIZOPS_HTTP_PORT: '0', BIZOPS_SCHEDULE: '0 0 1 1 *' });
    // One process per signal, both at once: each signal's exit code is asserted on its own process.
    await Promise.all(
      ([['SIGINT', 130], ['SIGTERM', 0]] as const).map(async ([signal, code]) => {
        const daemon = spawnDaemon(env);
        children.push(daemon.child);
        await daemon.url;
        expect((await terminate(daemon, signal)).code, signal).toBe(code);
      }),
    );
  });

  it('Ctrl-C ends changes --follow with 130 and SIGTERM with 0', async () => {
    const env = await setUp();
    expect((await runCli(['backfill', '--stream', 'deals', '--no-progress'], env)).code).toBe(0);
    await Promise.all(
      ([['SIGINT', 130], ['SIGTERM', 0]] as const).map(async ([signal, code]) => {
        const follow = spawnCli(['changes', '--follow'], env);
        await waitFor(() => follow.stdout().split('\n').length > 10, 'changes --follow to print the backlog');
        follow.child.kill(signal);
        expect(await follow.exited, signal).toBe(code);
      }),
    );
  });

  it('Ctrl-C ends a worker with 130 and SIGTERM with 0', async () => {
    await requireRedis();
    const env = await setUp();
    expect((await runCli(['backfill', '--stream', 'deals', '--no-progress'], env)).code).toBe(0);
    await Promise.all(
      ([['SIGINT', 130], ['SIGTERM', 0]] as const).map(async ([signal, code]) => {
        const worker = spawnCli(['worker'], env);
        await waitFor(() => worker.stderr().includes('"msg":"write worker started"'), 'the worker to start', 30_000);
        worker.child.kill(signal);
        expect(await worker.exited, `${signal}: ${worker.stderr()}`).toBe(code);
      }),
    );
  });

  it('Ctrl-C ends simulate and the demo with 130 (SIGTERM with 0), as every command; their hints are npx commands a user can paste', async () => {
    dir = tempDir();
    await Promise.all(
      ([['SIGINT', 130], ['SIGTERM', 0]] as const).map(async ([signal, code]) => {
        const simulate = spawnCli(['simulate', '--port', '0', '--transactions', '5', '--deals', '2', '--onboardings', '1'], cliEnv());
        await waitFor(() => simulate.stdout().includes('try: '), 'the simulator to listen', 30_000);
        simulate.child.kill(signal);
        expect(await simulate.exited, `${signal}: ${simulate.stderr()}`).toBe(code);
        expect(simulate.stdout()).toMatch(/^try: BIZOPS_BASE_URL=http:\/\/127\.0\.0\.1:\d+ BIZOPS_TOKEN=\S+ npx bizops-sync backfill$/m);
      }),
    );
    const db = dir.file('demo.db');
    // Keys other tests' simulators left (cleared at the end of the run): one may have listened on the port the demo's gets.
    const redis = new Redis(REDIS_URL);
    try {
      const keysBefore = new Set(await redis.keys('*127.0.0.1*'));
      const demo = spawnCli(['demo', '--db', db], cliEnv({ REDIS_URL }));
      await waitFor(() => demo.stdout().includes('backfilling...'), 'the demo to start', 30_000);
      demo.child.kill('SIGINT');
      expect(await demo.exited, demo.stderr()).toBe(130);
      expect(demo.stdout()).toMatch(new RegExp(`^stopped: \\d+ changes printed; the mirror stays at ${db} \\(try: npx bizops-sync status --db ${db}\\)$`, 'm'));
      // The demo paces itself in memory: it leaves nothing in Redis.
      const port = /^simulator: http:\/\/127\.0\.0\.1:(\d+) /m.exec(demo.stdout())![1]!;
      expect((await redis.keys(`*127.0.0.1[:_]${port}*`)).filter((key) => !keysBefore.has(key))).toEqual([]);
    } finally {
      redis.disconnect();
    }
  });

  it('a stream another process runs: exit 75 naming the holder; with --wait it waits for the lease, then runs it (exit 0)', async () => {
    const env = await setUp();
    // The mirror, with the deals stream leased by another (live) process.
    const db = openMirror(dir!.file('mirror.db'));
    const leases = new Leases(sqliteConnection(db), 3600);
    const held = (await leases.acquire('stream:deals', 'other-host:4242:cafe'))!.lease;
    try {
      const busy = await runCli(['sync', '--stream', 'deals', '--no-progress'], env);
      expect(busy.code, busy.stderr).toBe(75);
      expect(busy.stdout).toMatch(/^deals: busy \(sync, complete scan\), 0 pages, 0 records, 0 changes; held by other-host:4242:cafe until .*--wait waits for it\)\n$/);

      const waiting = spawnCli(['sync', '--stream', 'deals', '--no-progress', '--wait'], env);
      await waitFor(() => waiting.stderr().includes("waiting for the stream's lease to be free"), 'sync --wait to wait for the lease');
      expect(waiting.child.exitCode).toBeNull();
      await leases.release(held);
      expect(await waiting.exited, waiting.stderr()).toBe(0);
      expect(waiting.stdout()).toMatch(/^deals: succeeded \(sync, complete scan\), 1 page, 10 records, 10 changes\n$/);
    } finally {
      db.close();
    }
  });

  it('--db on backfill, sync and write names the mirror', async () => {
    const env = await setUp();
    const other = dir!.file('other.db');
    expect((await runCli(['backfill', '--stream', 'deals', '--no-progress', '--db', other], env)).code).toBe(0);
    expect(existsSync(other)).toBe(true);
    expect(existsSync(dir!.file('mirror.db'))).toBe(false);
    const sync = await runCli(['sync', '--stream', 'deals', '--no-progress', '--db', other], env);
    expect(sync.code, sync.stderr).toBe(0);
    expect(sync.stdout).toMatch(/^deals: succeeded \(sync, incremental\)/);
    const write = await runCli(['write', 'wr_missing', '--db', other], env);
    expect(write.code).toBe(2);
    expect(write.stderr).toBe(`bizops-sync: no write wr_missing (mirror ${other})\n`);
    expect(existsSync(dir!.file('mirror.db'))).toBe(false);
    const bad = await runCli(['sync', '--db', 'mysql://host/db'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^bizops-sync: configuration error: --db: mysql:\/\/host\/db is neither a file path/);
  });

  it('status and changes work on a read-only mount of the mirror', async () => {
    const env = await setUp();
    expect((await runCli(['backfill', '--stream', 'deals', '--no-progress'], env)).code).toBe(0);
    // No process has the mirror open: no -shm index beside it, which a reader would have to create.
    expect(existsSync(`${dir!.file('mirror.db')}-shm`)).toBe(false);
    const readOnly = (args: string[]) => {
      const command = [process.execPath, BIN, ...args];
      // A read-only mount as in `docker run -v data:/data:ro`: a bind mount remounted read-only in a
      // mount namespace of its own (root; root ignores file modes), else a directory without write permission.
      const result =
        process.getuid?.() === 0
          ? spawnSync('unshare', ['-m', 'sh', '-c', 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" && exec "$@"', dir!.path, ...command], { env, encoding: 'utf8' })
          : (chmodSync(dir!.path, 0o555), spawnSync(command[0]!, command.slice(1), { env, encoding: 'utf8' }));
      return result;
    };
    const status = readOnly(['status']);
    expect(status.stderr).toBe('');
    expect(status.status).toBe(0);
    expect(status.stdout).toMatch(/deals +10 /);
    const changes = readOnly(['changes', '--type', 'deal.created']);
    expect(changes.status, changes.stderr).toBe(0);
    expect(changes.stdout.trim().split('\n')).toHaveLength(10);
  });
});
