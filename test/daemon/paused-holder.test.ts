/**
 * Two daemons on one SQLite file, the holder paused (SIGSTOP) inside a write transaction: the file
 * stays write-locked for the whole pause, so the replica takes no lease, but it never waits on the
 * lock with its event loop blocked (its busy timeout here is a minute, which would block this very
 * process): `/healthz` and `/metrics` answer, `/readyz` names the locked file, and
 * `bizops_mirror_file_locked_total` counts the writes given up. Woken, the holder goes on and the
 * replica is ready, standing by.
 *
 * Two daemons on one PostgreSQL mirror, the holder paused (SIGSTOP, as a VM pause would) inside a
 * page transaction (docs/operations.md "Running two daemons (replicas)"): the server ends the paused
 * session after `idle_in_transaction_session_timeout` (a third of the lease), which frees the mirror's
 * transaction lock, so the replica takes the stream over once the lease lapses and finishes the
 * backfill from the checkpoint. Woken, the old holder sends no request for the stream it lost and
 * writes nothing. Runs on a PostgreSQL server of its own (test/postgres-server.ts).
 */
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { openMirrorConnection } from '../../src/mirror/open.ts';
import type { SqlConnection } from '../../src/mirror/sql/executor.ts';
import { startDaemon, type RunningDaemon } from '../../jobs/daemon.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { expectMirrorEqualsGroundTruth, simulator, tempDir, testConfig, waitFor, type TempDir } from '../helpers.ts';
import { startPostgresServer, type TestPostgresServer } from '../postgres-server.ts';
import { cliEnv, parsePrometheusText, spawnDaemon, terminate, type DaemonProcess } from './helpers.ts';

let server: TestPostgresServer | undefined;
let sim: RunningSimulator | undefined;
const daemons: DaemonProcess[] = [];
const connections: SqlConnection[] = [];
let replicaInProcess: RunningDaemon | undefined;
let probe: Database.Database | undefined;
let dir: TempDir | undefined;

afterEach(async () => {
  if (probe?.inTransaction) probe.exec('ROLLBACK');
  probe?.close();
  probe = undefined;
  for (const daemon of daemons.splice(0)) {
    if (daemon.child.exitCode === null && daemon.child.signalCode === null) {
      daemon.child.kill('SIGCONT');
      daemon.child.kill('SIGKILL');
    }
  }
  await replicaInProcess?.stop();
  replicaInProcess = undefined;
  for (const connection of connections.splice(0)) await connection.close();
  await sim?.close();
  dir?.remove();
  sim = dir = undefined;
});

afterAll(async () => {
  await server?.stop();
  server = undefined;
});

const TRANSACTIONS = 2_000;

/**
 * A simulator, a PostgreSQL server (one for the file, each test on a schema of its own), and the first
 * daemon holding the transactions stream on the mirror in `schema`; `startReplica` starts the second.
 */
async function twoDaemons(schema: string) {
  server ??= await startPostgresServer();
  sim = await simulator({ size: { transactions: TRANSACTIONS, deals: 5, onboardings: 2 }, latencyMs: 25 });
  const base = {
    BIZOPS_BASE_URL: sim.url,
    BIZOPS_DB: server.mirrorUrl(schema),
    BIZOPS_HTTP_PORT: '0',
    BIZOPS_SCHEDULE: '*/1 * * * * *',
    BIZOPS_READINESS_CACHE_SECONDS: '1',
    BIZOPS_RATE_LIMIT_PER_MIN: '100000',
    BIZOPS_LEASE_SECONDS: '3',
  };
  // Two tokens of one company, so the simulator's log tells the daemons' requests apart.
  const holder = spawnDaemon(cliEnv({ ...base, BIZOPS_TOKEN: String(sim.tokens.admin) }));
  daemons.push(holder);
  await holder.url;
  const db = await openMirrorConnection(server.mirrorUrl(schema), { readonly: true });
  connections.push(db);
  const holderOf = async (name: string) => (await db.get<{ holder: string | null }>('SELECT holder FROM leases WHERE name = ?', [name]))?.holder ?? null;
  await waitFor(async () => (await holderOf('stream:transactions')) !== null, 'the first daemon to take the transactions stream', 30_000);
  const first = (await holderOf('stream:transactions'))!;
  const startReplica = async () => {
    const replica = spawnDaemon(cliEnv({ ...base, BIZOPS_TOKEN: String(sim!.tokens.readOnly) }));
    daemons.push(replica);
    await replica.url;
    return replica;
  };
  const created = async () => Number((await db.get<{ n: number }>("SELECT COUNT(*) AS n FROM changes WHERE type = 'transaction.created'"))!.n);
  /** The replica took the stream over and finished the backfill. */
  const replicaFinished = async (replica: DaemonProcess) => {
    await waitFor(async () => {
      const now = await holderOf('stream:transactions');
      return now !== null && now !== first;
    }, 'the replica to take the transactions stream over', 30_000);
    await waitFor(async () => (await created()) === TRANSACTIONS && (await db.get<{ run: string | null }>("SELECT run FROM sync_state WHERE stream = 'transactions'"))?.run === null, 'the replica to finish the backfill', 60_000);
    expect(replica.logs.some((line) => line.msg === 'lease taken over: its holder stopped renewing it' && line.lease === 'stream:transactions' && line.previousHolder === first)).toBe(true);
  };
  /** Wakes the holder and waits until it noticed it lost the stream: what it sent meanwhile for it. */
  const wake = async () => {
    const wokeAt = Date.now();
    holder.child.kill('SIGCONT');
    await waitFor(
      // The run's own end (not only the lease keeper's round): its next commit or request found the fence gone.
      () => holder.logs.some((line) => typeof line.msg === 'string' && /took over this stream's lease \(fence \d+ is no longer current\)/.test(line.msg) && line.stream === 'transactions'),
      'the woken holder\'s run to notice it lost the stream',
      30_000,
    );
    expect(await holderOf('stream:transactions')).not.toBe(first);
    return sim!.requests.filter((request) => request.tokenName === 'admin' && request.path.endsWith('/transactions') && request.at >= wokeAt);
  };
  return { sim, server, db, holder, first, startReplica, created, replicaFinished, wake };
}

describe('the holder of a PostgreSQL mirror paused (SIGSTOP)', () => {
  it('inside a page transaction: the server ends its session, the replica takes the stream over once the lease lapses and finishes the backfill; woken, the old holder writes nothing', { timeout: 120_000 }, async () => {
    const { sim, server, db, holder, startReplica, created, replicaFinished, wake } = await twoDaemons('bizops');
    // The holder's page at offset 1500 waits at the simulator until the changes table is locked below,
    // so the backfill cannot end before the holder is caught, however slowly the machine runs.
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    sim.faults.inject({ kind: 'hold', until: gate, match: { method: 'GET', path: '/transactions', query: { offset: '1500' } } });
    const replica = await startReplica();
    // Pause the holder while it is inside a transaction (it holds the mirror's transaction lock): this
    // test's own session locks the changes table, so the holder's next page transaction waits on its
    // INSERT into changes while holding that lock; it is paused there, then the table is let go.
    const blocker = new pg.Client({ connectionString: server.url, application_name: 'bizops-test-blocker' });
    blocker.on('error', () => {});
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE bizops.changes IN SHARE ROW EXCLUSIVE MODE');
    open();
    const inTransaction = async () =>
      (
        await server.query<{ n: number }>(
          // A session holding the mirror's transaction lock and waiting on the locked table: only a page
          // transaction appends to changes, and only the holder runs the transactions backfill.
          `SELECT COUNT(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = 'bizops-sync' AND a.wait_event_type = 'Lock'`,
        )
      )[0]!.n > 0;
    await waitFor(inTransaction, 'the holder to wait inside a page transaction', 60_000);
    holder.child.kill('SIGSTOP');
    await blocker.query('COMMIT');
    await blocker.end();
    expect(await created()).toBeLessThan(TRANSACTIONS);

    // While it stays paused, the replica takes the stream over and finishes the backfill.
    await replicaFinished(replica);
    expect(holder.child.signalCode).toBeNull();

    const seqBefore = Number((await db.get<{ seq: number }>('SELECT MAX(seq) AS seq FROM changes'))!.seq);
    expect(await wake()).toEqual([]);
    // Every record once: the woken holder's commit was fenced off.
    expect(await created()).toBe(TRANSACTIONS);
    expect(await db.all("SELECT type, record_id FROM changes WHERE seq > ? AND stream = 'transactions'", [seqBefore])).toEqual([]);
    await expectMirrorEqualsGroundTruth({ connection: db }, sim, 'transactions');
    expect(holder.child.exitCode).toBeNull();
    expect((await terminate(holder)).code).toBe(0);
    expect((await terminate(replica)).code).toBe(0);
  });

  it('while a page request is in flight: woken after the replica took the stream, it checks its lease before the next request leaves and sends nothing more for the stream', { timeout: 120_000 }, async () => {
    const { sim, db, holder, startReplica, created, replicaFinished, wake } = await twoDaemons('bizops_in_flight');
    // The holder's page at offset 1000 is held at the simulator until the test opens the gate.
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    sim.faults.inject({ kind: 'hold', until: gate, match: { method: 'GET', path: '/transactions', query: { offset: '1000' } } });
    await waitFor(() => sim.requests.some((request) => request.tokenName === 'admin' && new URLSearchParams(request.query).get('offset') === '1000'), 'the holder to ask for the page at offset 1000', 30_000);
    holder.child.kill('SIGSTOP');
    const replica = await startReplica();
    await replicaFinished(replica);

    // Woken, its page comes back: without the check its read-ahead would send the next request at once.
    const sent = wake();
    open();
    expect(await sent).toEqual([]);
    expect(await created()).toBe(TRANSACTIONS);
    await expectMirrorEqualsGroundTruth({ connection: db }, sim, 'transactions');
    expect((await terminate(holder)).code).toBe(0);
    expect((await terminate(replica)).code).toBe(0);
  });
});

/** The state letter of process `pid` (`/proc/<pid>/stat`): `T` once a SIGSTOP has stopped it. */
function processState(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]!;
}

describe('the holder of a SQLite mirror paused (SIGSTOP) inside a write transaction', () => {
  it("keeps the file write-locked: the replica takes no lease, but its health, metrics and readiness answer, /readyz names the locked file and the writes given up are counted; woken, the holder goes on and the replica is ready", { timeout: 120_000 }, async () => {
    sim = await simulator({ size: { transactions: TRANSACTIONS, deals: 5, onboardings: 2 }, latencyMs: 25 });
    dir = tempDir();
    const path = dir.file('mirror.db');
    const holder = spawnDaemon(
      cliEnv({
        BIZOPS_BASE_URL: sim.url,
        BIZOPS_DB: path,
        BIZOPS_HTTP_PORT: '0',
        BIZOPS_SCHEDULE: '*/1 * * * * *',
        BIZOPS_RATE_LIMIT_PER_MIN: '100000',
        BIZOPS_LEASE_SECONDS: '3',
        BIZOPS_TOKEN: String(sim.tokens.admin),
        ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
      }),
    );
    daemons.push(holder);
    await holder.url;
    // The test's own handle: it reads, and tries the write lock without waiting.
    probe = new Database(path);
    probe.pragma('busy_timeout = 0');
    const holderOf = (name: string) => (probe!.prepare('SELECT holder FROM leases WHERE name = ?').get(name) as { holder: string | null } | undefined)?.holder ?? null;
    await waitFor(() => holderOf('stream:transactions') !== null, 'the holder to take the transactions stream', 30_000);
    const first = holderOf('stream:transactions');
    const writeLocked = (): boolean => {
      try {
        probe!.exec('BEGIN IMMEDIATE');
      } catch (error) {
        if ((error as { code?: string }).code === 'SQLITE_BUSY') return true;
        throw error;
      }
      probe!.exec('ROLLBACK');
      return false;
    };
    // Stopped (state T, so it can no longer commit), then the lock tried: held means it was caught inside a transaction.
    const pid = holder.child.pid!;
    await waitFor(
      async () => {
        holder.child.kill('SIGSTOP');
        await waitFor(() => processState(pid) === 'T', 'the holder to stop', 10_000, 1);
        if (writeLocked()) return true;
        holder.child.kill('SIGCONT');
        await waitFor(() => processState(pid) !== 'T', 'the holder to run again', 10_000, 1);
        return false;
      },
      'the holder to be paused inside a write transaction',
      60_000,
      5,
    );

    // The replica's lease keeper tries the file every half second (a third of its 1.5 s lease): the
    // rounds counted below, and its readiness once the holder wakes, come twice as fast as at 3 s.
    replicaInProcess = await startDaemon(
      testConfig(sim, path, { http: { port: 0 }, sync: { streams: ['transactions', 'deals', 'onboardings'], schedule: '* * * * * *', leaseSeconds: 1.5 } }),
      {
        logger: silentLogger,
        processMetrics: false,
        // A minute: a daemon that waited on the lock synchronously would block this process for it, again and again.
        sqliteBusyTimeoutMs: 60_000,
        partRetry: { minDelayMs: 20, maxDelayMs: 200 },
        redisKeys: { budgetPrefix: `bizops-test:paused-sqlite:${randomUUID()}:rate`, queuePrefix: `bizops-test:paused-sqlite:${randomUUID()}:`, queueName: 'writes' },
      },
    );
    const url = replicaInProcess.url;
    const lockedTotal = async (): Promise<number> => {
      const { samples } = parsePrometheusText(await (await fetch(`${url}/metrics`)).text());
      return samples.find((sample) => sample.name === 'bizops_mirror_file_locked_total')?.value ?? -1;
    };
    const locked = await waitFor(async () => {
      const response = await fetch(`${url}/readyz`);
      const body = (await response.json()) as { ready: boolean; reason: string; parts: Record<string, { state: string; error?: string }> };
      return response.status === 503 && body.parts.leases?.state === 'retrying' ? body : undefined;
    }, "the replica's lease keeper to find the file locked", 30_000);
    expect(locked.reason).toContain('not every part runs: leases retrying (stream:');
    expect(locked.reason).toContain('the mirror file is locked by another process');
    expect(locked.parts.leases!.error).toMatch(/^(stream:\w+|webhooks): the mirror file is locked by another process/);
    // Round after round the replica finds the file locked, counts it, and answers meanwhile.
    const before = await lockedTotal();
    expect(before).toBeGreaterThanOrEqual(1);
    await waitFor(async () => {
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      return (await lockedTotal()) >= before + 3;
    }, 'the replica to count later rounds on the locked file', 30_000);
    // It took nothing, and the holder stayed paused, holding the lock, all along.
    expect(replicaInProcess.connections[0]!.leases.held()).toEqual([]);
    expect(processState(pid)).toBe('T');
    expect(writeLocked()).toBe(true);
    expect(holderOf('stream:transactions')).toBe(first);

    // Woken, the holder commits and the file is free: the replica is ready again. The pause outlasted
    // the leases, so either daemon may hold each of them now, one holder each.
    holder.child.kill('SIGCONT');
    await waitFor(async () => (await fetch(`${url}/readyz`)).status === 200, 'the replica to be ready once the holder wakes', 30_000);
    const leaseRows = probe.prepare('SELECT name, holder FROM leases').all() as { name: string; holder: string | null }[];
    expect(leaseRows.length).toBeGreaterThanOrEqual(3);
    await replicaInProcess.stop();
    replicaInProcess = undefined;
    expect((await terminate(holder)).code).toBe(0);
  });
});
