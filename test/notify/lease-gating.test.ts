/**
 * A daemon whose `webhooks` lease lapsed sends nothing more (docs/webhooks.md "At-least-once"):
 * the delivery, wired as in the daemon, runs in a child process; the test pauses it (SIGSTOP)
 * until its lease expires by the database's clock, takes the lease over as a replica would,
 * appends changes, and wakes it (SIGCONT). The woken process must not send them: the lease's
 * known expiry is checked before each request leaves. Waited on conditions only, never on time.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { WebhookEndpointConfig } from '../../src/config/schema.ts';
import { Leases, WEBHOOKS_LEASE } from '../../src/mirror/leases.ts';
import { loadEndpoint } from '../../src/notify/delivery/endpoint-store.ts';
import { fixtureEnv, waitFor } from '../helpers.ts';
import { insertChanges, newSecret, Receiver, tempMirror, type TempMirror } from './helpers.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/run-leased-delivery.ts', import.meta.url));

let mirror: TempMirror;
let target: Receiver;
let child: ChildProcess | undefined;

beforeEach(async () => {
  mirror = await tempMirror();
  target = await new Receiver().start();
});
afterEach(async () => {
  if (child && child.exitCode === null && child.signalCode === null) {
    child.kill('SIGCONT');
    child.kill('SIGKILL');
  }
  child = undefined;
  await target.close();
  await mirror.cleanup();
});

describe('webhook delivery under a lapsed lease', () => {
  it('a holder paused past its lease (SIGSTOP) and woken after a replica took the lease sends no webhook', async () => {
    const endpoint: WebhookEndpointConfig = { name: 'crm', url: target.url, secret: newSecret(), events: ['*'] };
    const output: string[] = [];
    child = spawn(process.execPath, [FIXTURE], {
      env: fixtureEnv({ BIZOPS_TEST_LEASED: JSON.stringify({ dbPath: mirror.path, endpoints: [endpoint], leaseSeconds: 1, pollMs: 10 }) }),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    child.stdout!.on('data', (chunk: Buffer) => output.push(...chunk.toString().split('\n').filter(Boolean)));
    await waitFor(() => output.includes('delivering'), 'the child to hold the webhooks lease and deliver', 30_000);

    // It delivers while it holds the lease.
    await insertChanges(mirror.connection, 1);
    await waitFor(() => target.requests.length === 1, 'the first delivery');
    await waitFor(async () => (await loadEndpoint(mirror.connection, 'crm'))?.deliveredSeq === 1, 'its cursor moved');

    // Paused until its lease lapses by the database's clock; a replica takes it over and changes come in.
    child.kill('SIGSTOP');
    const leases = new Leases(mirror.connection, 3600);
    await waitFor(async () => (await leases.state(WEBHOOKS_LEASE))?.free, 'the paused holder\'s lease to expire', 30_000);
    const replica = await leases.acquire(WEBHOOKS_LEASE, 'replica:1:cafe');
    expect(replica?.taken).toBe(true);
    await insertChanges(mirror.connection, 3);

    // Woken: its timers are all overdue; its keeper learns of the takeover and stops the delivery.
    child.kill('SIGCONT');
    await waitFor(() => output.includes('lost'), 'the woken holder to learn it lost the lease', 30_000);
    expect(target.requests).toHaveLength(1);
    expect((await loadEndpoint(mirror.connection, 'crm'))?.deliveredSeq).toBe(1);
    expect(await leases.state(WEBHOOKS_LEASE)).toMatchObject({ holder: 'replica:1:cafe', fence: replica!.lease.fence });
  });
});
