/**
 * The sync on a PostgreSQL mirror whose server misbehaves (docs/sync.md "When the database goes
 * away"): its backends terminated mid-backfill (a failover, a pooler restart, an administrator), and
 * the server restarted mid-backfill; and a write worker whose mirror goes away as it starts
 * (docs/writes.md "The sweeper"). Each test starts a PostgreSQL server of its own on a free port
 * (test/postgres-server.ts) and does that to it; nothing waits on time, only on states.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { openMirrorConnection } from '../../src/mirror/open.ts';
import type { SqlConnection } from '../../src/mirror/sql/executor.ts';
import { STREAMS } from '../../src/streams/definitions.ts';
import { LocalRateBudget } from '../../src/client/local-rate-budget.ts';
import { startWriteWorker, WriteIntake, type WriteWorkerHandle } from '../../src/writes/queue/index.ts';
import type { Context } from '../../jobs/context.ts';
import { capturingLogger, expectMirrorEqualsGroundTruth, listRequests, runCli, simulator, testConfig, testContext, tempDir, waitFor, type TempDir } from '../helpers.ts';
import { startPostgresServer, type TestPostgresServer } from '../postgres-server.ts';
import { cliEnv, spawnDaemon, terminate, type DaemonProcess } from '../daemon/helpers.ts';
import { deleteKeys, REDIS_URL } from '../writes/support.ts';

const LIST = { path: '/transactions', method: 'GET' };

let server: TestPostgresServer | undefined;
let sim: RunningSimulator | undefined;
let dir: TempDir | undefined;
const contexts: Context[] = [];
const connections: SqlConnection[] = [];
const daemons: DaemonProcess[] = [];

afterEach(async () => {
  for (const daemon of daemons.splice(0)) if (daemon.child.exitCode === null && daemon.child.signalCode === null) daemon.child.kill('SIGKILL');
  for (const context of contexts.splice(0)) await context.close();
  for (const connection of connections.splice(0)) await connection.close();
  await server?.stop();
  await sim?.close();
  dir?.remove();
  server = sim = dir = undefined;
});

/** A simulator, a PostgreSQL server of the test's own, and a context on a mirror there. */
async function setUp(transactions: number, overrides: Record<string, unknown> = {}) {
  server = await startPostgresServer();
  sim = await simulator({ size: { transactions, deals: 0, onboardings: 0 } });
  dir = tempDir();
  const { logger, lines } = capturingLogger();
  const config = { ...testConfig(sim, dir.file('unused.db')), dbPath: server.mirrorUrl() };
  const context = await testContext({ ...config, sync: { ...config.sync, ...overrides } }, { logger });
  contexts.push(context);
  return { server, sim, context, lines };
}

async function countChanges(context: Context, type: string): Promise<number> {
  return Number((await context.connection.get<{ n: number }>('SELECT COUNT(*) AS n FROM changes WHERE type = ?', [type]))!.n);
}

describe('PostgreSQL backends terminated mid-backfill', () => {
  it('every page commit whose connection was ended is tried again: the backfill completes, the mirror equals the truth, each record is created once, nothing crashes', async () => {
    const { server, sim, context, lines } = await setUp(1_000);
    let terminated = 0;
    const pending: Promise<void>[] = [];
    // After every committed page the test ends every bizops-sync backend: the next page's commit,
    // the renewal timer or an idle pooled connection meets a dead connection.
    const result = await context.engine.run('transactions', 'backfill', {
      onProgress: () => {
        pending.push(server.terminateBackends().then((count) => void (terminated += count)));
      },
    });
    await Promise.all(pending);
    expect(result.status).toBe('succeeded');
    // How many backends each round ends depends on what was open at that moment (a faster commit
    // leaves fewer): counted only as some, and the run's own log line shows it met a dead connection.
    expect(terminated).toBeGreaterThan(0);
    expect(lines.some((line) => line.includes("the mirror's database is unavailable; waiting for it"))).toBe(true);
    expect(result.scan).toMatchObject({ outcome: 'complete', total: 1_000, distinctIds: 1_000 });
    await expectMirrorEqualsGroundTruth(context, sim, 'transactions');
    expect(await countChanges(context, 'transaction.created')).toBe(1_000);
    // The run held its lease to the end, and gave it back.
    expect((await context.connection.get<{ holder: string | null }>("SELECT holder FROM leases WHERE name = 'stream:transactions'"))!.holder).toBeNull();
  });
});

describe('PostgreSQL restarted mid-backfill', () => {
  it('the run waits for the database (sync.databaseWaitSeconds), then goes on from its checkpoint: complete, every record once', async () => {
    const { server, sim, context, lines } = await setUp(500);
    // Page 4 is held at the simulator until the server is down: its commit then finds no database.
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    sim.faults.inject({ kind: 'hold', until: gate, match: { ...LIST, query: { offset: '300' } } });
    const running = context.engine.run('transactions', 'backfill');
    await waitFor(() => listRequests(sim, '/transactions').some((request) => new URLSearchParams(request.query).get('offset') === '300'), 'the page at offset 300 to be asked for');
    await server.shutdown();
    open();
    await waitFor(() => lines.some((line) => line.includes("the mirror's database is unavailable; waiting for it")), 'the run to wait for the database', 30_000);
    await server.start();
    const result = await running;
    expect(result.status).toBe('succeeded');
    expect(result.scan).toMatchObject({ outcome: 'complete', total: 500, distinctIds: 500 });
    await expectMirrorEqualsGroundTruth(context, sim, 'transactions');
    expect(await countChanges(context, 'transaction.created')).toBe(500);
    expect((await context.store.countRecords(STREAMS.transactions)).live).toBe(500);
  });

  it('a database away longer than the wait: `bizops-sync backfill` fails with one line (exit 1); once it is back, the next backfill resumes the checkpoint', async () => {
    server = await startPostgresServer();
    sim = await simulator({ size: { transactions: 600, deals: 0, onboardings: 0 } });
    const env = cliEnv({
      BIZOPS_BASE_URL: sim.url,
      BIZOPS_TOKEN: String(sim.tokens.admin),
      BIZOPS_DB: server.mirrorUrl(),
      BIZOPS_RATE_LIMIT_PER_MIN: '100000',
      BIZOPS_DATABASE_WAIT_SECONDS: '1',
      BIZOPS_LEASE_SECONDS: '2',
      BIZOPS_LOG_LEVEL: 'warn',
    });
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    sim.faults.inject({ kind: 'hold', until: gate, match: { ...LIST, query: { offset: '300' } } });
    const running = runCli(['backfill', '--stream', 'transactions', '--no-progress'], env);
    await waitFor(() => listRequests(sim!, '/transactions').some((request) => new URLSearchParams(request.query).get('offset') === '300'), 'the page at offset 300 to be asked for', 30_000);
    await server.shutdown();
    open();
    const failed = await running;
    expect(failed.code).toBe(1);
    expect(failed.stderr).not.toMatch(/Unhandled|Uncaught|\n\s+at /);
    expect(failed.stdout).toMatch(/^transactions: failed \(backfill, complete scan\), \d+ pages, \d+ records, \d+ changes; error: (cannot connect to|lost the connection to) the PostgreSQL mirror at postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres\?schema=bizops: .+$/m);

    await server.start();
    // The failed run could not give its lease back (no database): the next is busy until it lapses.
    const resumed = await waitFor(async () => {
      const next = await runCli(['backfill', '--stream', 'transactions', '--no-progress'], env);
      return /^transactions: busy/m.test(next.stdout) ? undefined : next;
    }, 'a backfill that is not busy', 30_000);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toMatch(/^transactions: succeeded \(backfill, complete scan, resumed\)/m);
    const db = await openMirrorConnection(server.mirrorUrl(), { readonly: true });
    connections.push(db);
    expect(Number((await db.get<{ n: number }>("SELECT COUNT(*) AS n FROM changes WHERE type = 'transaction.created'"))!.n)).toBe(600);
    await expectMirrorEqualsGroundTruth({ connection: db }, sim, 'transactions');
  });
});

describe('a daemon on PostgreSQL whose backends are terminated', () => {
  it('stays up, reconnects, and goes on syncing every change once', async () => {
    server = await startPostgresServer();
    sim = await simulator({ size: { transactions: 100, deals: 10, onboardings: 2, customers: 2, qa_corrective_actions: 4 } });
    const env = cliEnv({
      BIZOPS_BASE_URL: sim.url,
      BIZOPS_TOKEN: String(sim.tokens.admin),
      BIZOPS_DB: server.mirrorUrl(),
      BIZOPS_HTTP_PORT: '0',
      BIZOPS_SCHEDULE: '*/1 * * * * *',
      BIZOPS_RATE_LIMIT_PER_MIN: '100000',
      BIZOPS_LEASE_SECONDS: '3',
    });
    const daemon = spawnDaemon(env);
    daemons.push(daemon);
    await daemon.url;
    const db = await openMirrorConnection(server.mirrorUrl(), { readonly: true });
    connections.push(db);
    const created = async (type: string) => Number((await db.get<{ n: number }>('SELECT COUNT(*) AS n FROM changes WHERE type = ?', [type]))!.n);
    await waitFor(async () => (await created('transaction.created')) === 100 && (await created('deal.created')) === 10, 'the backfill', 60_000);
    // End every connection of the daemon, again and again, while changes keep coming.
    const deals = sim.world.groundTruth('deals') as { id: string }[];
    for (let round = 0; round < 5; round += 1) {
      await server.terminateBackends();
      sim.world.updateDeal(deals[round]!.id, { title: `Renamed in round ${round}` });
      await waitFor(async () => (await created('deal.updated')) === round + 1, `the update of round ${round} to be synced`, 60_000);
    }
    expect(daemon.child.exitCode).toBeNull();
    expect(daemon.stderr()).not.toMatch(/Unhandled|uncaughtException|Connection terminated unexpectedly\n\s+at /);
    expect(await created('deal.updated')).toBe(5);
    const stopped = await terminate(daemon);
    expect(stopped.code).toBe(0);
  });
});

describe('PostgreSQL away while a write worker starts', () => {
  it('the start-up sweep cannot read the mirror: the worker starts all the same, with a warning, and sends the write once the database is back', async () => {
    server = await startPostgresServer();
    sim = await simulator({ size: { transactions: 0, deals: 0, onboardings: 0 } });
    const connection = await openMirrorConnection(server.mirrorUrl());
    connections.push(connection);
    const prefix = `test-worker-start-${randomUUID().slice(0, 8)}`;
    const queue = { redis: REDIS_URL, prefix, queueName: 'writes' };
    const intake = new WriteIntake({ connection, queue, tokenNames: ['default'] });
    const budget = new LocalRateBudget({ limit: 1000, windowMs: 1000 });
    const { logger, lines } = capturingLogger();
    let worker: WriteWorkerHandle | undefined;
    try {
      const description = 'sent once the database is back';
      const { id } = await intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 700, description });
      await server.shutdown();
      // Before the fix, this rejected with the lost connection, and `bizops-sync worker` exited 1.
      worker = await startWriteWorker({
        connection,
        queue,
        api: { baseUrl: sim.url, tokens: { default: String(sim.tokens.admin) }, budget, requestDeadlineMs: 2000, retry: { minTimeoutMs: 20, maxTimeoutMs: 100, maxRetries: 3 } },
        sweepIntervalMs: 200,
        retrySchedule: { attempts: 6, backoffMs: 50 },
        logger,
      });
      expect(lines.filter((line) => line.includes('the start-up sweep could not read the mirror'))).toHaveLength(1);
      expect(worker.requeued).toEqual([]);
      await server.start();
      const sent = await waitFor(async () => {
        const write = await intake.getWrite(id);
        return write?.status === 'succeeded' ? write : undefined;
      }, 'the write to be sent once the database is back', 60_000);
      expect(sent.status).toBe('succeeded');
      expect(sim.world.transactions.filter((transaction) => transaction.description === description)).toHaveLength(1);
    } finally {
      await worker?.close();
      await intake.close();
      await deleteKeys(`${prefix}:*`);
    }
  });
});
