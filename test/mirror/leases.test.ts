/**
 * Leases with fencing tokens (src/mirror/leases.ts, migration 7) on both back ends: acquire, renew,
 * expiry by the database's clock, takeover bumping the fence, and a stale fence refused inside a
 * commit (its transaction rolled back).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { confirmLease, confirmLeaseRenewingWhenDue, LeaseLostError, leaseKnownValid, leaseRequestName, Leases, leaseTimeLeftMs, noteLeaseConfirmed } from '../../src/mirror/leases.ts';
import { openMirrorConnection } from '../../src/mirror/open.ts';
import type { SqlConnection } from '../../src/mirror/sql/executor.ts';
import { waitFor } from '../helpers.ts';
import { BACKENDS, removeTestMirrors } from '../sql-backends.ts';

const opened: SqlConnection[] = [];

afterEach(async () => {
  for (const connection of opened.splice(0)) await connection.close();
  await removeTestMirrors();
});

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe.each(BACKENDS)('leases on $name', (backend) => {
  /** Two connections to one migrated mirror: two processes. */
  async function twoConnections(): Promise<[SqlConnection, SqlConnection]> {
    const location = await backend.location();
    const first = await openMirrorConnection(location);
    opened.push(first);
    const second = await openMirrorConnection(location);
    opened.push(second);
    return [first, second];
  }

  /** Moves the lease's expiry into the past, as if its holder stopped renewing it long ago. */
  async function expire(connection: SqlConnection, name: string): Promise<void> {
    await connection.run("UPDATE leases SET expires_at = '2000-01-01T00:00:00.000Z' WHERE name = ?", [name]);
  }

  it('acquire takes a free lease with fence 1; another holder is refused; its holder renews it keeping the fence', async () => {
    const [a, b] = await twoConnections();
    const mine = new Leases(a, 30);
    const theirs = new Leases(b, 30);
    const taken = await mine.acquire('stream:deals', 'host-a:1:aa');
    expect(taken).toEqual({ lease: { name: 'stream:deals', holder: 'host-a:1:aa', fence: 1 }, taken: true });
    expect(await theirs.acquire('stream:deals', 'host-b:2:bb')).toBeUndefined();
    expect(await mine.acquire('stream:deals', 'host-a:1:aa')).toEqual({ lease: { name: 'stream:deals', holder: 'host-a:1:aa', fence: 1 }, taken: false });
    await mine.renew(taken!.lease);
    const state = (await theirs.state('stream:deals'))!;
    expect(state).toMatchObject({ name: 'stream:deals', holder: 'host-a:1:aa', fence: 1, free: false });
    expect(state.expiresAt).toMatch(ISO_MS);
    expect(state.acquiredAt).toMatch(ISO_MS);
    // About 30 s ahead of the database's clock (never judged by a test's clock: only its order).
    expect(state.expiresAt! > state.renewedAt!).toBe(true);
    expect(await theirs.state('webhooks')).toBeUndefined();
  });

  it('a live request of another holder: the lease is neither renewed by acquire nor taken; its holder may still renew; an expired or released request stops counting', async () => {
    const [a, b] = await twoConnections();
    const daemon = new Leases(a, 30);
    const waiter = new Leases(b, 30);
    const held = (await daemon.acquire('stream:deals', 'daemon:1:aa'))!.lease;
    const request = (await waiter.acquire(leaseRequestName('stream:deals'), 'waiter:2:bb'))!.lease;
    expect(request.name).toBe('wait:stream:deals');
    expect(await daemon.requestedByOther('stream:deals', 'daemon:1:aa')).toMatchObject({ holder: 'waiter:2:bb', free: false });
    expect(await waiter.requestedByOther('stream:deals', 'waiter:2:bb')).toBeUndefined();
    // The daemon's next run may not start; the run in progress renews with its fence.
    expect(await daemon.acquire('stream:deals', 'daemon:1:aa')).toBeUndefined();
    await daemon.renew(held);
    expect(await waiter.acquire('stream:deals', 'waiter:2:bb')).toBeUndefined(); // still held
    expect(await daemon.release(held)).toBe(true);
    // Released: the daemon may not take it back while the request lives; the waiter takes it (fence + 1).
    expect(await daemon.acquire('stream:deals', 'daemon:1:aa')).toBeUndefined();
    const taken = (await waiter.acquire('stream:deals', 'waiter:2:bb'))!;
    expect(taken).toMatchObject({ taken: true, lease: { fence: held.fence + 1 } });
    expect(await waiter.release(taken.lease)).toBe(true);
    expect(await waiter.release(request)).toBe(true);
    expect((await daemon.acquire('stream:deals', 'daemon:1:aa'))?.taken).toBe(true);
    // A killed waiter's request lapses: the daemon renews again.
    await waiter.acquire(leaseRequestName('stream:deals'), 'waiter:3:cc');
    expect(await daemon.acquire('stream:deals', 'daemon:1:aa')).toBeUndefined();
    await expire(b, 'wait:stream:deals');
    expect(await daemon.requestedByOther('stream:deals', 'daemon:1:aa')).toBeUndefined();
    expect(await daemon.acquire('stream:deals', 'daemon:1:aa')).toMatchObject({ taken: false });
  });

  it('an expired lease is taken over with the next fence; the old holder then loses it: renew and release refuse', async () => {
    const [a, b] = await twoConnections();
    const mine = new Leases(a, 30);
    const theirs = new Leases(b, 30);
    const old = (await mine.acquire('webhooks', 'host-a:1:aa'))!.lease;
    await expire(b, 'webhooks');
    expect((await theirs.state('webhooks'))!.free).toBe(true);
    const takeover = await theirs.acquire('webhooks', 'host-b:2:bb');
    expect(takeover).toEqual({ lease: { name: 'webhooks', holder: 'host-b:2:bb', fence: 2 }, taken: true, previousHolder: 'host-a:1:aa' });
    await expect(mine.renew(old)).rejects.toBeInstanceOf(LeaseLostError);
    await expect(mine.renew(old)).rejects.toThrow('lease webhooks: lost (fence 1 is no longer current: another process took it over)');
    expect(await mine.release(old)).toBe(false);
    expect(await mine.acquire('webhooks', 'host-a:1:aa')).toBeUndefined();
    expect((await mine.state('webhooks'))!).toMatchObject({ holder: 'host-b:2:bb', fence: 2, free: false });
  });

  it('how long a lease surely lasts by this process\'s clock (leaseTimeLeftMs): a lease length from the last renewal sent; ensureHeld renews a short one, and refuses once another holder took it', async () => {
    const [a, b] = await twoConnections();
    const mine = new Leases(a, 30);
    const theirs = new Leases(b, 30);
    const lease = (await mine.acquire('webhooks', 'host-a:1:aa'))!.lease;
    const left = leaseTimeLeftMs(lease);
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(30_000);
    expect(leaseTimeLeftMs({ name: 'webhooks', holder: 'host-a:1:aa', fence: 7 })).toBe(0);
    // As if this process had been paused past its lease: its clock says nothing is left.
    const later = performance.now() + 30_001;
    expect(leaseTimeLeftMs(lease, later)).toBe(0);
    expect(leaseKnownValid(lease, later)).toBe(false);
    // ensureHeld renews a lease with less than a third left (here: a lease of 30 s renewed as one of 90 s ago).
    const short = new Leases(a, 90);
    await short.ensureHeld(lease);
    expect(leaseTimeLeftMs(lease)).toBeGreaterThan(60_000);
    // Enough left: ensureHeld sends nothing (an expired row would be renewed by a renewal).
    await expire(b, 'webhooks');
    await mine.ensureHeld(lease);
    expect((await theirs.state('webhooks'))!.free).toBe(true);
    // Taken over meanwhile: with little left by our clock, ensureHeld asks, and refuses.
    await theirs.acquire('webhooks', 'host-b:2:bb');
    await expect(short.ensureHeld(lease, 90_000)).rejects.toBeInstanceOf(LeaseLostError);
    expect(leaseTimeLeftMs(lease)).toBe(0);
    // A commit that confirmed a lease counts once noted (the engine notes it after the commit).
    const other = (await theirs.acquire('stream:deals', 'host-b:2:bb'))!.lease;
    const before = leaseTimeLeftMs(other);
    noteLeaseConfirmed(other, performance.now() + 5_000, 30);
    expect(leaseTimeLeftMs(other)).toBeGreaterThan(before);
  });

  it('a lease expires by the database clock when its holder stops renewing it (a short lease, waited on)', async () => {
    const [a, b] = await twoConnections();
    await new Leases(a, 0.2).acquire('stream:transactions', 'host-a:1:aa');
    const theirs = new Leases(b, 0.2);
    const taken = await waitFor(() => theirs.acquire('stream:transactions', 'host-b:2:bb'), 'the unrenewed lease to expire and be taken');
    expect(taken.lease.fence).toBe(2);
  });

  it('a holder whose lease expired but was not taken keeps it: the fence, not the clock, decides', async () => {
    const [a] = await twoConnections();
    const leases = new Leases(a, 30);
    const lease = (await leases.acquire('stream:deals', 'host-a:1:aa'))!.lease;
    await expire(a, 'stream:deals');
    await leases.renew(lease);
    expect(await leases.state('stream:deals')).toMatchObject({ holder: 'host-a:1:aa', fence: 1, free: false });
  });

  it('a page commit renews the lease only when due on SQLite (a SELECT of the fence otherwise), always on PostgreSQL; a stale fence is refused either way', async () => {
    const [a, b] = await twoConnections();
    const mine = new Leases(a, 30);
    const lease = (await mine.acquire('stream:deals', 'host-a:1:aa'))!.lease;
    const stored = async () => (await b.get<{ expires_at: string; renewed_at: string | null }>('SELECT expires_at, renewed_at FROM leases WHERE name = ?', ['stream:deals']))!;
    const writeUnder = (seconds: number, cursor: string) =>
      a.transaction(async (tx) => {
        const renewed = await confirmLeaseRenewingWhenDue(tx, lease, seconds);
        await tx.run('INSERT INTO sync_state (stream, cursor) VALUES (?, ?) ON CONFLICT (stream, partition_value) DO UPDATE SET cursor = excluded.cursor', ['deals', cursor]);
        return renewed;
      });
    // Just acquired: its whole 30 s are known left, more than two thirds.
    const marked = '2099-01-01T00:00:00.000Z';
    await b.run('UPDATE leases SET expires_at = ?, renewed_at = NULL WHERE name = ?', [marked, 'stream:deals']);
    const renewed = await writeUnder(30, '2026-01-01T00:00:00.000Z');
    if (backend.name === 'sqlite') {
      expect(renewed).toBe(false);
      expect(await stored()).toEqual({ expires_at: marked, renewed_at: null });
    } else {
      expect(renewed).toBe(true);
      expect((await stored()).renewed_at).toMatch(ISO_MS);
    }
    // Due: a lease of an hour with 30 s known left is renewed on both back ends.
    await b.run('UPDATE leases SET expires_at = ?, renewed_at = NULL WHERE name = ?', [marked, 'stream:deals']);
    expect(await writeUnder(3600, '2026-02-01T00:00:00.000Z')).toBe(true);
    expect((await stored()).renewed_at).toMatch(ISO_MS);
    // Taken over: the check refuses and the commit rolls back, renewal due or not.
    await expire(b, 'stream:deals');
    await new Leases(b, 30).acquire('stream:deals', 'host-b:2:bb');
    await expect(writeUnder(30, '2026-06-01T00:00:00.000Z')).rejects.toBeInstanceOf(LeaseLostError);
    await expect(writeUnder(3600, '2026-06-01T00:00:00.000Z')).rejects.toBeInstanceOf(LeaseLostError);
    expect(await b.get('SELECT cursor FROM sync_state WHERE stream = ?', ['deals'])).toEqual({ cursor: '2026-02-01T00:00:00.000Z' });
    expect(leaseTimeLeftMs(lease)).toBe(0);
  });

  it('release frees the lease at once for another holder, who gets the next fence', async () => {
    const [a, b] = await twoConnections();
    const lease = (await new Leases(a).acquire('stream:onboardings', 'host-a:1:aa'))!.lease;
    expect(await new Leases(a).release(lease)).toBe(true);
    expect(await new Leases(b).state('stream:onboardings')).toMatchObject({ holder: null, fence: 1, expiresAt: null, free: true });
    expect(await new Leases(b).acquire('stream:onboardings', 'host-b:2:bb')).toEqual({ lease: { name: 'stream:onboardings', holder: 'host-b:2:bb', fence: 2 }, taken: true });
  });

  it('a commit checked with a stale fence is refused and rolled back; with the current fence it commits', async () => {
    const [a, b] = await twoConnections();
    const old = (await new Leases(a).acquire('stream:deals', 'host-a:1:aa'))!.lease;
    const writeUnder = (connection: SqlConnection, lease: typeof old, cursor: string) =>
      connection.transaction(async (tx) => {
        await tx.run('INSERT INTO sync_state (stream) VALUES (?) ON CONFLICT (stream, partition_value) DO NOTHING', ['deals']);
        await tx.run('UPDATE sync_state SET cursor = ? WHERE stream = ?', [cursor, 'deals']);
        await confirmLease(tx, lease, 30);
      });
    await writeUnder(a, old, '2026-01-01T00:00:00.000Z');
    await expire(b, 'stream:deals');
    const current = (await new Leases(b).acquire('stream:deals', 'host-b:2:bb'))!.lease;
    await expect(writeUnder(a, old, '2026-06-01T00:00:00.000Z')).rejects.toBeInstanceOf(LeaseLostError);
    expect(await b.get('SELECT cursor FROM sync_state WHERE stream = ?', ['deals'])).toEqual({ cursor: '2026-01-01T00:00:00.000Z' });
    await writeUnder(b, current, '2026-07-01T00:00:00.000Z');
    expect(await a.get('SELECT cursor FROM sync_state WHERE stream = ?', ['deals'])).toEqual({ cursor: '2026-07-01T00:00:00.000Z' });
    expect((await new Leases(a).list()).map((lease) => [lease.name, lease.holder, lease.fence])).toEqual([['stream:deals', 'host-b:2:bb', 2]]);
  });
});
