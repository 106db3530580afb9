/**
 * Two daemons on one mirror and one Redis (docs/operations.md "Running two daemons (replicas)"),
 * as real `bizops-sync daemon` processes against the simulator, on a SQLite file and on a
 * PostgreSQL schema: each stream, and the webhook
 * delivery, is run by the one holding its lease; SIGKILL the holder and the other takes every lease
 * over (within about one lease length: waited on, never timed) and goes on syncing and delivering
 * from where the dead one committed. Killed while idle, no event is lost or doubled, and no record's
 * events are reordered.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { openMirrorConnection } from '../../src/mirror/open.ts';
import type { SqlConnection } from '../../src/mirror/sql/executor.ts';
import { STREAM_NAMES } from '../../src/streams/definitions.ts';
import { groundTruthTotal, runCli, simulator, tempDir, type TempDir, waitFor } from '../helpers.ts';
import { BACKENDS, removeTestMirrors } from '../sql-backends.ts';
import { cliEnv, newWebhookSecret, spawnDaemon, terminate, WebhookReceiver, type DaemonProcess } from './helpers.ts';

let sim: RunningSimulator | undefined;
let dir: TempDir | undefined;
const daemons: DaemonProcess[] = [];
const receivers: WebhookReceiver[] = [];
const connections: SqlConnection[] = [];

afterEach(async () => {
  for (const daemon of daemons.splice(0)) if (daemon.child.exitCode === null && daemon.child.signalCode === null) daemon.child.kill('SIGKILL');
  for (const receiver of receivers.splice(0)) await receiver.close();
  for (const connection of connections.splice(0)) await connection.close();
  await removeTestMirrors();
  await sim?.close();
  dir?.remove();
  sim = dir = undefined;
});

/** A lease per registered stream, and the webhooks'. */
const STREAM_LEASES = STREAM_NAMES.map((stream) => `stream:${stream}`);
const LEASES = [...STREAM_LEASES, 'webhooks'].sort();

/** What a daemon's /readyz says it holds. */
async function leasesHeld(url: string): Promise<string[]> {
  const response = await fetch(`${url}/readyz`);
  const body = (await response.json()) as { leases?: string[] };
  return body.leases ?? [];
}

describe.each(BACKENDS)('two daemons on one mirror (replicas) on $name', { timeout: 120_000 }, (backend) => {
  it("each lease is held by one daemon; SIGKILL the holder and the other takes every stream and the webhooks over, syncing and delivering every change once, each record's in order", async () => {
    sim = await simulator({ size: { transactions: 40, deals: 20, onboardings: 5 } });
    dir = tempDir();
    const location = await backend.location();
    const secret = newWebhookSecret();
    const hooks = await new WebhookReceiver().start();
    receivers.push(hooks);
    const env = cliEnv({
      BIZOPS_BASE_URL: sim.url,
      BIZOPS_TOKEN: String(sim.tokens.admin),
      BIZOPS_DB: location,
      BIZOPS_HTTP_PORT: '0',
      BIZOPS_SCHEDULE: '*/1 * * * * *',
      BIZOPS_READINESS_CACHE_SECONDS: '1',
      BIZOPS_RATE_LIMIT_PER_MIN: '100000',
      BIZOPS_LEASE_SECONDS: '3',
      BIZOPS_WEBHOOK_URL: hooks.url,
      BIZOPS_WEBHOOK_SECRET: secret,
    });
    const start = () => {
      const daemon = spawnDaemon(env);
      daemons.push(daemon);
      return daemon;
    };

    const first = start();
    const firstUrl = await first.url;
    await waitFor(async () => (await leasesHeld(firstUrl)).length === LEASES.length, 'the first daemon to hold every lease', 30_000);
    const second = start();
    const secondUrl = await second.url;
    // The second stands by: ready once its parts started (its webhook delivery stands by), holding
    // nothing while the first renews its leases.
    const standby = await waitFor(async () => {
      const response = await fetch(`${secondUrl}/readyz`);
      return response.status === 200 ? ((await response.json()) as { leases: string[]; parts: Record<string, { state: string }> }) : undefined;
    }, 'the second daemon to be ready, standing by');
    expect(standby.leases).toEqual([]);
    expect(standby.parts.webhooks?.state).toBe('standby');

    const db = await openMirrorConnection(location, { readonly: true });
    connections.push(db);
    const changelog = async () => (await db.all<{ event_id: string; record_id: string; type: string }>('SELECT event_id, record_id, type FROM changes ORDER BY seq'));
    const leaseRows = async () => db.all<{ name: string; holder: string; fence: number }>('SELECT name, holder, fence FROM leases ORDER BY name');
    /** Every changelog event delivered and the endpoint's cursor at the end: a quiet moment. */
    const allDelivered = async () => {
      const events = await changelog();
      const cursor = await db.get<{ delivered_seq: number }>('SELECT delivered_seq FROM webhook_endpoints');
      const last = await db.get<{ seq: number | null }>('SELECT MAX(seq) AS seq FROM changes');
      return events.length > 0 && cursor?.delivered_seq === last?.seq && new Set(hooks.ids()).size === events.length;
    };

    // The backfill's events (one per record of every stream), delivered by the holder of `webhooks`.
    const backfilled = groundTruthTotal(sim);
    await waitFor(async () => (await changelog()).length >= backfilled && (await allDelivered()), 'the backfill to be synced and delivered', 60_000);
    const deal = sim.world.groundTruth('deals')[2] as { id: string };
    sim.world.updateDeal(deal.id, { title: 'Renamed while both run' });
    await waitFor(async () => (await changelog()).some((event) => event.record_id === deal.id && event.type === 'deal.updated') && (await allDelivered()), 'the update to be synced and delivered', 30_000);
    // Both ran the whole time; the update became one change row, not one per daemon.
    expect((await changelog()).filter((event) => event.record_id === deal.id && event.type === 'deal.updated')).toHaveLength(1);
    const [heldByFirst, heldBySecond] = [await leasesHeld(firstUrl), await leasesHeld(secondUrl)];
    expect(heldByFirst.filter((name) => heldBySecond.includes(name))).toEqual([]);
    const before = await leaseRows();
    expect(before.map((row) => row.name)).toEqual(LEASES);
    const firstHolder = before[0]!.holder;
    expect(before.every((row) => row.holder === firstHolder)).toBe(true);

    // SIGKILL the holder of every lease at a quiet moment: nothing in flight.
    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    await waitFor(async () => (await leasesHeld(secondUrl)).length === LEASES.length, 'the second daemon to take every lease over', 60_000);
    const after = await leaseRows();
    for (const row of after) {
      expect(row.holder).not.toBe(firstHolder);
      // Every takeover bumped the fence: a write still carrying the dead daemon's fence is refused.
      expect(row.fence).toBeGreaterThan(before.find((old) => old.name === row.name)!.fence);
    }
    expect(second.logs.some((line) => line.msg === 'lease taken over: its holder stopped renewing it' && line.previousHolder === firstHolder)).toBe(true);
    // Two CLI processes beside the survivor, started now and read below: `status` shows the leases it
    // took; `bizops-sync sync` uses the same lease: busy, nothing sent (exit 75).
    const statusRun = runCli(['status'], env);
    const syncRun = runCli(['sync', '--stream', 'deals'], env);
    const status = await statusRun;
    expect(status.stdout).toContain(`leases: ${after[0]!.name} held by ${after[0]!.holder} (fence ${after[0]!.fence}, until `);

    // A later change upstream is synced and delivered by the survivor.
    const other = sim.world.groundTruth('deals')[5] as { id: string };
    sim.world.updateDeal(other.id, { title: 'Renamed after the kill' });
    await waitFor(async () => (await changelog()).some((event) => event.record_id === other.id && event.type === 'deal.updated') && (await allDelivered()), 'the later update to be synced and delivered', 60_000);

    // Killed while idle: every change delivered exactly once, none lost; each record's changes in changelog order.
    const events = await changelog();
    expect([...hooks.ids()].sort()).toEqual(events.map((event) => event.event_id).sort());
    for (const record of new Set(events.map((event) => event.record_id))) {
      const ofRecord = events.filter((event) => event.record_id === record).map((event) => event.event_id);
      expect(hooks.ids().filter((id) => ofRecord.includes(id))).toEqual(ofRecord);
    }
    expect(events.filter((event) => event.record_id === other.id && event.type === 'deal.updated')).toHaveLength(1);
    for (const request of hooks.received) expect(() => new Webhook(secret).verify(request.body, request.headers as Record<string, string>)).not.toThrow();

    // `bizops-sync sync` beside the daemon uses the same lease: busy, nothing sent (exit 75).
    const cli = await syncRun;
    expect(cli.code).toBe(75);
    expect(cli.stdout).toMatch(/deals: busy \(sync, [a-z ]+\), 0 pages, 0 records, 0 changes/);

    // A graceful stop releases the leases: free for the next daemon at once.
    expect((await terminate(second)).code).toBe(0);
    expect((await leaseRows()).every((row) => row.holder === null)).toBe(true);
  });

  it('SIGKILL the holder in the middle of a backfill: the other resumes its checkpoint; the mirror equals the ground truth, no change twice', async () => {
    sim = await simulator({ size: { transactions: 2_000, deals: 10, onboardings: 3 } });
    // The first daemon's page at offset 1000 is held at the simulator until it is killed, so its
    // backfill is in the middle when it dies however slowly the machine runs.
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    sim.faults.inject({ kind: 'hold', until: gate, match: { method: 'GET', path: '/transactions', query: { offset: '1000' } } });
    dir = tempDir();
    const location = await backend.location();
    const env = cliEnv({
      BIZOPS_BASE_URL: sim.url,
      BIZOPS_TOKEN: String(sim.tokens.admin),
      BIZOPS_DB: location,
      BIZOPS_HTTP_PORT: '0',
      BIZOPS_SCHEDULE: '*/1 * * * * *',
      BIZOPS_RATE_LIMIT_PER_MIN: '100000',
      BIZOPS_LEASE_SECONDS: '3',
    });
    const first = spawnDaemon(env);
    daemons.push(first);
    const firstUrl = await first.url;
    await waitFor(async () => (await leasesHeld(firstUrl)).length === STREAM_LEASES.length, 'the first daemon to hold every stream', 30_000);
    const second = spawnDaemon(env);
    daemons.push(second);
    const secondUrl = await second.url;
    await waitFor(() => sim!.requests.some((request) => request.path.endsWith('/transactions') && new URLSearchParams(request.query).get('offset') === '1000'), 'the first daemon to ask for the page at offset 1000', 60_000);
    first.child.kill('SIGKILL');
    await first.exited;
    open();
    await waitFor(async () => (await leasesHeld(secondUrl)).length === STREAM_LEASES.length, 'the second daemon to take every stream over', 60_000);
    const resumed = await waitFor(
      () => second.logs.find((line) => line.msg === 'run finished' && line.stream === 'transactions'),
      'the second daemon to finish the transactions backfill',
      120_000,
    );
    expect(resumed).toMatchObject({ mode: 'complete' });
    expect(second.logs.some((line) => line.msg === 'resuming an unfinished run from its checkpoint' && line.stream === 'transactions')).toBe(true);

    const db = await openMirrorConnection(location, { readonly: true });
    connections.push(db);
    const rows = await db.all<{ id: string; raw: string }>('SELECT id, raw FROM transactions WHERE deleted_at IS NULL ORDER BY id');
    const truth = sim.world.groundTruth('transactions') as { id: string }[];
    expect(rows).toHaveLength(truth.length);
    const byId = new Map(rows.map((row) => [row.id, JSON.parse(row.raw) as unknown]));
    for (const record of truth) expect(byId.get(record.id)).toEqual(record);
    // One transaction.created per record: neither daemon wrote a page the other had written.
    expect(await db.get("SELECT COUNT(*) AS total, COUNT(DISTINCT record_id) AS records FROM changes WHERE stream = 'transactions'")).toEqual({ total: 2_000, records: 2_000 });
    expect((await terminate(second)).code).toBe(0);
  });
});
