/**
 * The daemon's lease keeper (src/daemon/lease-keeper.ts) on both back ends: two keepers (two
 * daemons) on one mirror; the first takes every lease, the second stands by; a graceful stop hands
 * them over at the next round; a keeper that stops renewing (a killed daemon) loses them once they
 * expire, and a keeper finding its lease taken over drops it (`onLost`). Waits on conditions only.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { LeaseKeeper } from '../../src/daemon/lease-keeper.ts';
import { Leases, type HeldLease } from '../../src/mirror/leases.ts';
import { openMirrorConnection } from '../../src/mirror/open.ts';
import type { SqlConnection } from '../../src/mirror/sql/executor.ts';
import { waitFor } from '../helpers.ts';
import { BACKENDS, removeTestMirrors } from '../sql-backends.ts';

const NAMES = ['stream:deals', 'stream:transactions', 'webhooks'];
const keepers: LeaseKeeper[] = [];
const opened: SqlConnection[] = [];

afterEach(async () => {
  for (const keeper of keepers.splice(0)) await keeper.stop();
  for (const connection of opened.splice(0)) await connection.close();
  await removeTestMirrors();
});

describe.each(BACKENDS)('the lease keeper on $name', (backend) => {
  async function connect(location: string): Promise<SqlConnection> {
    const connection = await openMirrorConnection(location);
    opened.push(connection);
    return connection;
  }

  function keeper(connection: SqlConnection, holder: string, seconds: number, events: string[]): LeaseKeeper {
    const created = new LeaseKeeper({
      leases: new Leases(connection, seconds),
      holder,
      names: NAMES,
      onAcquired: (lease: HeldLease) => events.push(`+${lease.name}#${lease.fence}`),
      onLost: (name) => events.push(`-${name}`),
    });
    keepers.push(created);
    return created;
  }

  it('the first keeper takes every lease, the second stands by; a graceful stop releases them and the second takes them at its next round', async () => {
    const location = await backend.location();
    const [a, b] = [await connect(location), await connect(location)];
    const firstEvents: string[] = [];
    const secondEvents: string[] = [];
    const first = keeper(a, 'host-a:1:aa', 30, firstEvents);
    await first.start();
    expect(first.held()).toEqual(NAMES);
    expect(firstEvents).toEqual(['+stream:deals#1', '+stream:transactions#1', '+webhooks#1']);
    // A short lease for the second: its rounds come every 100 ms.
    const second = keeper(b, 'host-b:2:bb', 0.3, secondEvents);
    await second.start();
    expect(second.held()).toEqual([]);
    await first.stop();
    expect(firstEvents.slice(3)).toEqual(['-stream:deals', '-stream:transactions', '-webhooks']);
    await waitFor(() => second.held().length === NAMES.length, 'the second keeper to take every lease');
    expect(secondEvents).toEqual(['+stream:deals#2', '+stream:transactions#2', '+webhooks#2']);
    expect((await new Leases(a).list()).map((lease) => lease.holder)).toEqual(['host-b:2:bb', 'host-b:2:bb', 'host-b:2:bb']);
  });

  it('a keeper that stops renewing loses its leases once they expire; a keeper whose leases were taken over drops them at its next round', async () => {
    const location = await backend.location();
    const [a, b] = [await connect(location), await connect(location)];
    // A killed daemon: it took every lease (0.3 s) and never renews.
    for (const name of NAMES) await new Leases(a, 0.3).acquire(name, 'host-a:1:aa');
    const events: string[] = [];
    const survivor = keeper(b, 'host-b:2:bb', 0.3, events);
    await survivor.start();
    await waitFor(() => survivor.held().length === NAMES.length, 'the survivor to take every expired lease');
    expect([...events].sort()).toEqual(['+stream:deals#2', '+stream:transactions#2', '+webhooks#2']);
    // Now a third process takes them over (as if the survivor had been paused past its leases).
    await a.run("UPDATE leases SET holder = 'host-c:3:cc', fence = fence + 1, expires_at = '2999-01-01T00:00:00.000Z'");
    await waitFor(() => survivor.held().length === 0, 'the survivor to drop the leases taken over');
    expect(events.slice(3).sort()).toEqual(['-stream:deals', '-stream:transactions', '-webhooks']);
  });
});
