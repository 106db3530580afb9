/**
 * A one-off run beside a running daemon (docs/operations.md "A one-off run beside the daemon
 * (--wait)"), on a SQLite file and on a PostgreSQL schema, against the simulator: a range backfill
 * `--wait` (a real CLI process) records a request for the stream's lease, the in-process daemon
 * yields the stream, the backfill runs and exits 0, and the daemon syncs the stream again after it.
 * A request whose waiter died (left to expire) holds the daemon off the stream (partitioned, here)
 * only until it expires: `status` and /readyz show the stream yielded meanwhile. Waited on
 * conditions, never on time.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { startDaemon, type RunningDaemon } from '../../jobs/daemon.ts';
import type { FinishedRun } from '../../src/console/recent-runs.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { leaseRequestName, Leases } from '../../src/mirror/leases.ts';
import { readMirrorReport } from '../../src/status/mirror-status.ts';
import { runCli, simulator, statusOutput, testConfig, waitFor } from '../helpers.ts';
import { BACKENDS, removeTestMirrors } from '../sql-backends.ts';
import { cliEnv } from './helpers.ts';

let sim: RunningSimulator | undefined;
let daemon: RunningDaemon | undefined;

afterEach(async () => {
  await daemon?.stop();
  await sim?.close();
  await removeTestMirrors();
  daemon = sim = undefined;
});

describe.each(BACKENDS)('a one-off run --wait beside the daemon on $name', (backend) => {
  it('the daemon yields a stream a range backfill --wait waits for, then syncs it again; a dead waiter holds it off only until its request expires', async () => {
    sim = await simulator({ size: { transactions: 10, deals: 20, onboardings: 2 } });
    const location = await backend.location();
    const prefix = `test:${randomUUID()}:`;
    const config = testConfig(sim, location, { http: { port: 0 }, sync: { schedule: '*/1 * * * * *', leaseSeconds: 3 } });
    daemon = await startDaemon(config, { logger: silentLogger, processMetrics: false, redisKeys: { budgetPrefix: `${prefix}rate`, queuePrefix: prefix, queueName: 'writes' } });
    const connection = daemon.connections[0]!;
    const keeper = connection.leases;
    /** The daemon's newest finished run of `stream` now. */
    const newest = (stream: string): FinishedRun | undefined => connection.runs.of(stream)[0];
    /** Resolves once the daemon finished a succeeded run of `stream` newer than `mark`. */
    const syncedAfter = (stream: string, mark: FinishedRun | undefined, what: string) =>
      waitFor(() => {
        const runs = connection.runs.of(stream);
        const since = mark ? runs.slice(0, runs.indexOf(mark) === -1 ? runs.length : runs.indexOf(mark)) : runs;
        return since.some((run) => run.status === 'succeeded');
      }, what, 60_000);
    await syncedAfter('deals', undefined, 'the daemon to have run deals');
    expect(keeper.holds('stream:deals')).toBe(true);

    // A range backfill --wait: without the daemon yielding, it would wait for ever (the daemon renews every second).
    const deals = (sim.world.groundTruth('deals') as { id: string; createdAt: string }[]).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    const after = deals[9]!.createdAt;
    const inRange = deals.filter((deal) => deal.createdAt > after);
    const fenceBefore = (await new Leases(daemon.context.connection).state('stream:deals'))!.fence;
    const env = cliEnv({ BIZOPS_BASE_URL: sim.url, BIZOPS_TOKEN: String(sim.tokens.admin), BIZOPS_DB: location, BIZOPS_CONFIG: '', BIZOPS_LOG_LEVEL: 'warn', BIZOPS_LEASE_SECONDS: '3', BIZOPS_RATE_LIMIT_PER_MIN: '100000', ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}) });
    const ran = await runCli(['backfill', '--stream', 'deals', '--created-after', after, '--wait'], env);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toMatch(new RegExp(`^deals: succeeded \\(backfill, complete scan, created after ${after.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\), 1 page, ${inRange.length} records`));
    const mirrored = await daemon.context.connection.all<{ id: string }>('SELECT id FROM deals');
    expect(mirrored.map((row) => row.id)).toEqual(expect.arrayContaining(inRange.map((deal) => deal.id)));
    // Its request is gone; the daemon takes the stream back (a new fence each time it changed hands) and syncs it.
    const mark = newest('deals');
    await waitFor(() => keeper.holds('stream:deals'), 'the daemon to take deals back', 30_000);
    await syncedAfter('deals', mark, 'the daemon to sync deals after the backfill');
    const report = await readMirrorReport(daemon.context.connection);
    expect(report.waiting).toEqual([]);
    expect(report.leases.find((lease) => lease.name === 'stream:deals')!.fence).toBeGreaterThanOrEqual(fenceBefore + 2);

    // A waiter that died: its request (holder and expiry in the mirror) is left to lapse. The daemon
    // yields the partitioned stream, shows it, and takes it back once the request expired.
    const stream = 'qa_corrective_actions';
    await syncedAfter(stream, undefined, `the daemon to have run ${stream}`);
    const dead = await new Leases(daemon.context.connection, 600).acquire(leaseRequestName(`stream:${stream}`), 'dead-host:1:00000000');
    expect(dead?.taken).toBe(true);
    await waitFor(() => !keeper.holds(`stream:${stream}`), `the daemon to yield ${stream}`, 30_000);
    expect(keeper.yielded()).toEqual([{ lease: `stream:${stream}`, waiter: 'dead-host:1:00000000' }]);
    const ready = (await (await fetch(`${daemon.url}/readyz`)).json()) as { yielded?: unknown };
    expect(ready.yielded).toEqual([{ lease: `stream:${stream}`, waiter: 'dead-host:1:00000000' }]);
    // What `bizops-sync status` prints (its job and text, in this process).
    expect(await statusOutput(location)).toContain(`yielded to a waiting one-off run (--wait): ${stream} (waiter dead-host:1:00000000`);
    const yieldedMark = newest(stream);
    // The request expires (as if its 600 s had passed): the daemon takes the stream back and syncs it.
    await daemon.context.connection.run("UPDATE leases SET expires_at = '2000-01-01T00:00:00.000Z' WHERE name = ?", [leaseRequestName(`stream:${stream}`)]);
    await waitFor(() => keeper.holds(`stream:${stream}`), `the daemon to take ${stream} back`, 30_000);
    await syncedAfter(stream, yieldedMark, `the daemon to sync ${stream} again`);
    expect(keeper.yielded()).toEqual([]);
  });
});
