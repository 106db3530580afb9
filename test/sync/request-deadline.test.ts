/**
 * A whole-request deadline: a body trickled in small chunks, each pause shorter
 * than undici's between-chunk timeouts, is cut off at `api.requestDeadlineSeconds` and retried like
 * any timeout; and the stream lease never lapses while a page is in flight.
 */
import { describe, expect, it } from 'vitest';
import { RequestDeadlineError } from '../../src/client/api-errors.ts';
import { Leases } from '../../src/mirror/leases.ts';
import { SyncEngine } from '../../src/sync/sync-engine.ts';
import { capturingLogger, listRequests, syncFixtures, waitFor } from '../helpers.ts';

const fixtures = syncFixtures();

/** Scaled down: 50 bytes every 200 ms (a page of deals takes about a minute), a deadline of 1 s. */
const TRICKLE = { kind: 'trickle-body', chunkBytes: 50, intervalMs: 200, match: { path: '/deals' } } as const;

describe('the whole-request deadline', () => {
  it('a trickled page is aborted at the deadline and retried; the run completes with every record', async () => {
    const { logger, lines } = capturingLogger();
    const { sim, context } = await fixtures.start({ size: { deals: 30 } }, { api: { requestDeadlineSeconds: 1 } }, { logger });
    sim.faults.inject({ ...TRICKLE, times: 1 });
    const result = await context.engine.run('deals', 'backfill');
    expect(result).toMatchObject({ status: 'succeeded', records: 30, pages: 1 });
    expect(listRequests(sim, '/deals')).toHaveLength(2);
    expect(context.client.stats.retries).toBe(1);
    expect(lines.some((line) => line.includes('API request failed: retrying') && line.includes('DEADLINE'))).toBe(true);
    expect(((await context.connection.get('SELECT COUNT(*) AS n FROM deals')) as { n: number }).n).toBe(30);
  });

  it('a server that always trickles fails the run with a RequestDeadlineError after the retries, instead of hanging', async () => {
    const { sim, context } = await fixtures.start({ size: { deals: 30 } }, { api: { requestDeadlineSeconds: 0.25 } });
    sim.faults.inject({ ...TRICKLE, times: 100 });
    const result = await context.engine.run('deals', 'backfill');
    expect(result.status).toBe('failed');
    expect(result.error).toBeInstanceOf(RequestDeadlineError);
    expect(result.error?.message).toMatch(/deadline of 250 ms .*GET \/deals/);
    // The first attempt and the 4 retries of the test context's retry policy.
    expect(listRequests(sim, '/deals')).toHaveLength(5);
    expect((await context.store.readSyncState('deals')).lastError).toMatch(/DEADLINE/);
  });

  it('the stream lease is renewed while a page is in flight: another process stays busy past the lease length', async () => {
    const { sim, context } = await fixtures.start({ size: { deals: 30 } });
    const leaseSeconds = 0.3;
    const leases = new Leases(context.store.executor);
    // Another process, whose lease lasts 300 ms unless renewed.
    const slow = new SyncEngine({ client: context.client, store: context.store, leaseHolder: 'other-host.example:4242:abcd', leaseSeconds });
    // The page is held at the simulator until the checks below are done: in flight however slowly the machine runs.
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    sim.faults.inject({ kind: 'hold', until: gate, match: { path: '/deals' } });
    const running = slow.run('deals', 'backfill');
    await waitFor(() => listRequests(sim, '/deals').length === 1, 'the slow page to be in flight');
    // SQLite: the database's clock is this host's.
    const firstExpiry = Date.parse((await leases.state('stream:deals'))!.expiresAt!);
    // Past the time the first lease would have lapsed without renewal, with the page still in flight.
    await waitFor(() => Date.now() > firstExpiry + leaseSeconds * 1000, 'the unrenewed lease to have lapsed');
    expect(sim.requests.filter((r) => r.path.endsWith('/deals') && r.status === 0)).toHaveLength(1);
    expect(await leases.state('stream:deals')).toMatchObject({ holder: 'other-host.example:4242:abcd', fence: 1, free: false });
    expect((await context.engine.run('deals', 'sync')).status).toBe('busy');
    open();
    expect(await running).toMatchObject({ status: 'succeeded', records: 30 });
    // Released at the end of the run, its fence kept.
    expect(await leases.state('stream:deals')).toMatchObject({ holder: null, fence: 1, free: true });
  });
});
