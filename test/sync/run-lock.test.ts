/**
 * The run lock in `sync_state` (docs/sync.md "Resumable"): one process runs a stream at a time. A
 * live holder makes a run `busy`; a holder that died on this host, or whose lock expired, is taken
 * over; a run whose lock another process took over meanwhile stops without writing its next page.
 */
import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import type { SqlExecutor } from '../../src/mirror/sql/executor.ts';
import { capturingLogger, listRequests, syncFixtures } from '../helpers.ts';

const fixtures = syncFixtures();

async function rowCount(executor: SqlExecutor, table: string): Promise<number> {
  return (await executor.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`))!.n;
}

/** The pid of a process that has exited (so no process of this host has it, for now). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

const FUTURE = new Date(Date.now() + 3_600_000).toISOString();

describe('the run lock', () => {
  it('busy: a live process of this host holds the stream, so the run sends nothing and leaves its lock alone', async () => {
    const { sim, context } = await fixtures.start({ size: { deals: 20 } });
    const holder = `${hostname()}:${process.ppid}`; // the test runner's parent: alive for the whole test
    expect(await context.store.acquireRunLock('deals', holder, FUTURE)).toBe(true);
    const result = await context.engine.run('deals', 'backfill');
    expect(result).toMatchObject({ status: 'busy', pages: 0 });
    expect(listRequests(sim, '/deals')).toHaveLength(0);
    expect(await context.store.runLockHolder('deals')).toEqual({ owner: holder, expiresAt: FUTURE });
    expect(await rowCount(context.connection, 'deals')).toBe(0);
  });

  it('busy too when the holder is on another host and its lock has not expired', async () => {
    const { sim, context } = await fixtures.start({ size: { deals: 20 } });
    await context.store.acquireRunLock('deals', 'other-host.example:4242', FUTURE);
    expect((await context.engine.run('deals', 'sync')).status).toBe('busy');
    expect(listRequests(sim, '/deals')).toHaveLength(0);
  });

  it('takeover: the lock of a process of this host that died is taken at once, and the run completes and releases it', async () => {
    const { logger, lines } = capturingLogger();
    const { context } = await fixtures.start({ size: { deals: 20 } }, {}, { logger });
    const dead = `${hostname()}:${deadPid()}`;
    await context.store.acquireRunLock('deals', dead, FUTURE);
    const result = await context.engine.run('deals', 'backfill');
    expect(result).toMatchObject({ status: 'succeeded', records: 20 });
    expect(lines.some((line) => line.includes('taking over the run lock of a process that died') && line.includes(dead))).toBe(true);
    expect(await context.store.runLockHolder('deals')).toBeUndefined();
  });

  it('takeover: an expired lock of another host is free', async () => {
    const { context } = await fixtures.start({ size: { deals: 20 } });
    await context.store.acquireRunLock('deals', 'other-host.example:4242', new Date(Date.now() - 1000).toISOString());
    expect((await context.engine.run('deals', 'backfill')).status).toBe('succeeded');
  });

  it('lost: when another process takes the lock mid-run, the run stops before writing its next page; the checkpoint stays as that process found it', async () => {
    const { sim, context } = await fixtures.start({ size: { transactions: 350 } });
    const thief = 'other-host.example:4242';
    let stolen: Promise<unknown> | undefined;
    const result = await context.engine.run('transactions', 'backfill', {
      onProgress: (progress) => {
        // Our lock expired while we waited; another process took the stream over.
        // Sent here (onProgress is not awaited), awaited below: on PostgreSQL it lands while the
        // engine waits for the next page over HTTP, before that page's transaction checks the lock.
        if (progress.pages === 1) stolen = context.connection.run('UPDATE sync_state SET lock_owner = ?, lock_expires_at = ? WHERE stream = ?', [thief, FUTURE, 'transactions']);
      },
    });
    await stolen;
    expect(result.status).toBe('failed');
    expect(result.error?.message).toBe("transactions: another process took over this stream's run lock; stopping without writing");
    // Page 2 was fetched but not written (and page 3 read ahead while page 2 would commit, then
    // dropped): only page 1's records and checkpoint stand.
    expect(listRequests(sim, '/transactions')).toHaveLength(3);
    expect(await rowCount(context.connection, 'transactions')).toBe(100);
    expect((await context.store.readSyncState('transactions')).run).toMatchObject({ offset: 100, pages: 1 });
    // The lock stays the other process's: ours was never released over it.
    expect((await context.store.runLockHolder('transactions'))?.owner).toBe(thief);
  });
});
