/**
 * The stream lease (src/mirror/leases.ts; docs/sync.md "Resumable"): one process runs a stream at
 * a time. A live holder makes a run `busy`; a holder that stopped renewing (died) loses the stream
 * once its lease expires, by the database's clock, and the run that takes it over gets the next
 * fence; a run whose lease another process took over meanwhile stops without writing its next page.
 */
import { describe, expect, it } from 'vitest';
import { LeaseLostError, Leases } from '../../src/mirror/leases.ts';
import type { SqlExecutor } from '../../src/mirror/sql/executor.ts';
import { capturingLogger, listRequests, syncFixtures, waitFor } from '../helpers.ts';

const fixtures = syncFixtures();

async function rowCount(executor: SqlExecutor, table: string): Promise<number> {
  return (await executor.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`))!.n;
}

const OTHER = 'other-host.example:4242:0badf00d';

describe('the stream lease', () => {
  it('busy: another process holds the stream, so the run sends nothing and leaves the lease alone', async () => {
    const { sim, context } = await fixtures.start({ size: { deals: 20 } });
    const leases = new Leases(context.store.executor, 3600);
    await leases.acquire('stream:deals', OTHER);
    const result = await context.engine.run('deals', 'backfill');
    expect(result).toMatchObject({ status: 'busy', pages: 0, heldBy: { holder: OTHER, expiresAt: (await leases.state('stream:deals'))!.expiresAt } });
    expect(listRequests(sim, '/deals')).toHaveLength(0);
    expect(await leases.state('stream:deals')).toMatchObject({ holder: OTHER, fence: 1, free: false });
    expect(await rowCount(context.connection, 'deals')).toBe(0);
    expect((await context.engine.run('deals', 'sync')).status).toBe('busy');
  });

  it('takeover: a holder that stopped renewing loses the stream once its lease expires; the run gets the next fence, completes and releases it', async () => {
    const { logger, lines } = capturingLogger();
    const { context } = await fixtures.start({ size: { deals: 20 } }, {}, { logger });
    // A process that took the stream with a short lease and died: nobody renews it.
    await new Leases(context.store.executor, 0.3).acquire('stream:deals', OTHER);
    const result = await waitFor(async () => {
      const attempt = await context.engine.run('deals', 'backfill');
      return attempt.status === 'busy' ? undefined : attempt;
    }, 'the dead holder\'s lease to expire');
    expect(result).toMatchObject({ status: 'succeeded', records: 20 });
    expect(lines.some((line) => line.includes("took over the stream's lease") && line.includes(OTHER))).toBe(true);
    expect(await new Leases(context.store.executor).state('stream:deals')).toMatchObject({ holder: null, fence: 2, free: true });
  });

  it('lost: when another process takes the lease over mid-run, the run stops before writing its next page; the checkpoint stays as that process found it', async () => {
    const { sim, context } = await fixtures.start({ size: { transactions: 350 } });
    const leases = new Leases(context.connection, 3600);
    let stolen: Promise<unknown> | undefined;
    // Page 2's answer is held at the simulator until the takeover below has committed.
    let takenOver: () => void = () => undefined;
    sim.faults.inject({ kind: 'hold', until: new Promise<void>((resolve) => (takenOver = resolve)), match: { method: 'GET', path: '/transactions', query: { offset: '100' } } });
    const result = await context.engine.run('transactions', 'backfill', {
      onProgress: (progress) => {
        // Our lease expired while we waited; another process took the stream over, while the
        // engine waits for page 2 over HTTP, before that page's transaction confirms the fence.
        if (progress.pages === 1) {
          // One statement: what a takeover of the expired lease writes (the next fence, its holder).
          stolen = context.connection
            .run("UPDATE leases SET holder = ?, fence = fence + 1, expires_at = '2999-01-01T00:00:00.000Z' WHERE name = ?", [OTHER, 'stream:transactions'])
            .finally(() => takenOver());
        }
      },
    });
    await stolen;
    expect(result.status).toBe('failed');
    expect(result.error).toBeInstanceOf(LeaseLostError);
    expect(result.error?.message).toBe("transactions: another process took over this stream's lease (fence 1 is no longer current); stopping without writing");
    // Page 2 was fetched but not written (and page 3 read ahead while page 2 would commit, then
    // dropped): only page 1's records and checkpoint stand.
    expect(listRequests(sim, '/transactions')).toHaveLength(3);
    expect(await rowCount(context.connection, 'transactions')).toBe(100);
    const state = await context.store.readSyncState('transactions');
    expect(state.run).toMatchObject({ offset: 100, pages: 1 });
    // Nothing of the stopped run is written: the stream's state is the other process's now.
    expect(state.lastError).toBeNull();
    // The lease stays the other process's: ours was never released over it.
    expect(await leases.state('stream:transactions')).toMatchObject({ holder: OTHER, fence: 2 });
  });

  it('one run per stream per engine: a second run of a stream this engine is running is busy', async () => {
    const { sim, context } = await fixtures.start({ size: { deals: 20 } });
    // The first run's page is held at the server (far longer than any test), so the first run is
    // surely running when the second starts: no race between the two, whatever the machine's load.
    sim.faults.inject({ match: { path: '/deals' }, kind: 'latency', ms: 600_000, times: 1 });
    const stop = new AbortController();
    const first = context.engine.run('deals', 'backfill', { signal: stop.signal });
    await waitFor(() => listRequests(sim, '/deals').length === 1, 'the first run to ask for its page');
    const second = await context.engine.run('deals', 'backfill');
    expect(second.status).toBe('busy');
    expect(listRequests(sim, '/deals')).toHaveLength(1);
    // Stopped, the first run gives the stream back: the next run takes it and completes.
    stop.abort(new Error('test: stop the held run'));
    expect((await first).status).toBe('interrupted');
    expect(await context.engine.run('deals', 'backfill')).toMatchObject({ status: 'succeeded', records: 20 });
  });
});
