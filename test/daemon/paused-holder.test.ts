/**
 * Two daemons on one PostgreSQL mirror, the holder paused (SIGSTOP, as a VM pause would) inside a
 * page transaction (docs/operations.md "Running two daemons (replicas)"): the server ends the paused
 * session after `idle_in_transaction_session_timeout` (a third of the lease), which frees the mirror's
 * transaction lock, so the replica takes the stream over once the lease lapses and finishes the
 * backfill from the checkpoint. Woken, the old holder sends no request for the stream it lost and
 * writes nothing. Runs on a PostgreSQL server of its own (test/postgres-server.ts).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { openMirrorConnection } from '../../src/mirror/open.ts';
import type { SqlConnection } from '../../src/mirror/sql/executor.ts';
import { expectMirrorEqualsGroundTruth, simulator, waitFor } from '../helpers.ts';
import { startPostgresServer, type TestPostgresServer } from '../postgres-server.ts';
import { cliEnv, spawnDaemon, terminate, type DaemonProcess } from './helpers.ts';

let server: TestPostgresServer | undefined;
let sim: RunningSimulator | undefined;
const daemons: DaemonProcess[] = [];
const connections: SqlConnection[] = [];

afterEach(async () => {
  for (const daemon of daemons.splice(0)) {
    if (daemon.child.exitCode === null && daemon.child.signalCode === null) {
      daemon.child.kill('SIGCONT');
      daemon.child.kill('SIGKILL');
    }
  }
  for (const connection of connections.splice(0)) await connection.close();
  await server?.stop();
  await sim?.close();
  server = sim = undefined;
});

const TRANSACTIONS = 5_000;

/** A simulator, a PostgreSQL server, and the first daemon holding the transactions stream; `startReplica` starts the second. */
async function twoDaemons() {
  server = await startPostgresServer();
  sim = await simulator({ size: { transactions: TRANSACTIONS, deals: 5, onboardings: 2 }, latencyMs: 25 });
  const base = {
    BIZOPS_BASE_URL: sim.url,
    BIZOPS_DB: server.mirrorUrl(),
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
  const db = await openMirrorConnection(server.mirrorUrl(), { readonly: true });
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
  it('inside a page transaction: the server ends its session, the replica takes the stream over once the lease lapses and finishes the backfill; woken, the old holder writes nothing', async () => {
    const { sim, server, db, holder, startReplica, created, replicaFinished, wake } = await twoDaemons();
    // The sessions open before the replica starts are the holder's (and this test's, which takes no lock):
    // the replica's own writing transactions take the same mirror-wide lock and must not be mistaken for the holder's.
    const before = (await server.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE application_name = 'bizops-sync'")).map((row) => row.pid);
    const replica = await startReplica();
    // Pause the holder while it is inside a transaction (it holds the mirror's transaction lock).
    const inTransaction = async () =>
      (
        await server.query<{ n: number }>(
          `SELECT COUNT(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = 'bizops-sync' AND a.pid IN (${before.join(', ') || 'NULL'})`,
        )
      )[0]!.n > 0;
    await waitFor(
      async () => {
        holder.child.kill('SIGSTOP');
        // Paused, the holder commits nothing: the count read now is the one it stays at.
        if ((await created()) >= TRANSACTIONS) throw new Error('the backfill ended before the holder was caught inside a transaction');
        if (await inTransaction()) return true;
        holder.child.kill('SIGCONT');
        return false;
      },
      'the holder to be paused inside a transaction',
      60_000,
      5,
    );
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

  it('while a page request is in flight: woken after the replica took the stream, it checks its lease before the next request leaves and sends nothing more for the stream', async () => {
    const { sim, db, holder, startReplica, created, replicaFinished, wake } = await twoDaemons();
    // The holder's page at offset 2000 is held at the simulator until the test opens the gate.
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    sim.faults.inject({ kind: 'hold', until: gate, match: { method: 'GET', path: '/transactions', query: { offset: '2000' } } });
    await waitFor(() => sim.requests.some((request) => request.tokenName === 'admin' && new URLSearchParams(request.query).get('offset') === '2000'), 'the holder to ask for the page at offset 2000', 30_000);
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
