/**
 * The daemon started while another connection holds the SQLite file's write lock (a `BEGIN
 * IMMEDIATE` left open: a stuck writer, a long transaction), in this process on the real file: it
 * comes up, `/readyz` and `bizops_daemon_part_running` say which parts cannot run (the leases, hence
 * webhook delivery) and why, and once the lock is released every part runs: `/readyz` is ready and a
 * change made afterwards reaches the webhook receiver. `status` shows the same: while the lock is held
 * the daemon cannot record itself in the mirror, so `status` finds it at its configured address and
 * shows its parts live (retrying, with the lock error); once released, the daemon's row leads
 * `status` to it, every part running; once stopped, `status` says no daemon is recorded. Nothing waits on time: each step waits for a
 * state. The mirror's busy timeout is long (a minute): the daemon never waits on it once the mirror
 * is open (a daemon that did would block this very process, and its probes, for that minute).
 */
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { startDaemon, type RunningDaemon } from '../../jobs/daemon.ts';
import { readStatus } from '../../jobs/status.ts';
import { openMirror } from '../../src/mirror/database.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import type { PartStatus } from '../../src/daemon/index.ts';
import { runCli, simulator, tempDir, testConfig, waitFor, type TempDir } from '../helpers.ts';
import { newWebhookSecret, parsePrometheusText, WebhookReceiver } from './helpers.ts';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

let sim: RunningSimulator | undefined;
let dir: TempDir | undefined;
let daemon: RunningDaemon | undefined;
let receiver: WebhookReceiver | undefined;
let lock: Database.Database | undefined;
let prefix: string | undefined;

afterEach(async () => {
  if (lock?.inTransaction) lock.exec('ROLLBACK');
  lock?.close();
  await daemon?.stop();
  await receiver?.close();
  await sim?.close();
  dir?.remove();
  if (prefix) {
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  }
  sim = dir = daemon = receiver = lock = prefix = undefined;
});

const READ_KEY = 'locked-start-read-key-0123456789';

/** `PUT /consumers/after-the-lock` with the read key: a route that writes to the mirror. */
function registerConsumer(url: string): Promise<Response> {
  return fetch(`${url}/consumers/after-the-lock`, { method: 'PUT', headers: { authorization: `Bearer ${READ_KEY}` } });
}

interface ReadyzBody {
  ready: boolean;
  reason: string;
  parts: Record<string, PartStatus>;
}

async function readyz(url: string): Promise<{ status: number; body: ReadyzBody }> {
  const response = await fetch(`${url}/readyz`);
  return { status: response.status, body: (await response.json()) as ReadyzBody };
}

/** `bizops_daemon_part_running` by part. */
async function partsRunning(url: string): Promise<Record<string, number>> {
  const { samples } = parsePrometheusText(await (await fetch(`${url}/metrics`)).text());
  return Object.fromEntries(samples.filter((sample) => sample.name === 'bizops_daemon_part_running').map((sample) => [sample.labels.part!, sample.value]));
}

/** `bizops_mirror_file_locked_total` of the default connection. */
async function fileLockedTotal(url: string): Promise<number> {
  const { samples } = parsePrometheusText(await (await fetch(`${url}/metrics`)).text());
  return samples.find((sample) => sample.name === 'bizops_mirror_file_locked_total' && sample.labels.connection === 'default')?.value ?? -1;
}

describe('a daemon started while another connection holds the mirror write-locked', { timeout: 60_000 }, () => {
  it('comes up showing the blocked parts retrying, and runs every part once the lock is released', async () => {
    sim = await simulator({ size: { transactions: 2, deals: 2, onboardings: 2 } });
    dir = tempDir();
    receiver = await new WebhookReceiver().start();
    prefix = `bizops-test:locked-start:${randomUUID()}:`;
    const path = dir.file('mirror.db');
    // A mirror already in place (the daemon restarted), then write-locked by another connection.
    openMirror(path).close();
    lock = new Database(path);
    lock.exec('BEGIN IMMEDIATE');

    const config = testConfig(sim, path, {
      http: { port: 0 },
      webhooks: [{ name: 'hook', url: receiver.url, secret: newWebhookSecret() }],
      sync: { streams: ['onboardings'], schedule: '* * * * * *', leaseSeconds: 3 },
    });
    daemon = await startDaemon(config, {
      logger: silentLogger,
      processMetrics: false,
      sqliteBusyTimeoutMs: 60_000,
      partRetry: { minDelayMs: 20, maxDelayMs: 200 },
      webhooks: { pollMs: 50, scheduleMs: [0, 50, 100] },
      redisKeys: { budgetPrefix: `${prefix}rate`, queuePrefix: prefix, queueName: 'writes' },
    });
    const url = daemon.url;

    // Locked: the leases cannot be taken, so nothing syncs or delivers here, and the changelog's
    // retention cannot prune; /readyz names the parts and the error.
    const locked = await waitFor(async () => {
      const answer = await readyz(url);
      return answer.body.parts.leases?.state === 'retrying' && answer.body.parts.retention?.state === 'retrying' ? answer : undefined;
    }, 'the leases and the retention to show their failed starts');
    expect(locked.status).toBe(503);
    expect(locked.body.ready).toBe(false);
    expect(locked.body.parts.leases).toMatchObject({ state: 'retrying', required: true });
    expect(locked.body.parts.leases!.error).toMatch(/^(stream:onboardings|webhooks): the mirror file is locked by another process/);
    expect(locked.body.parts.webhooks).toMatchObject({ state: 'starting', reason: 'waiting for the webhooks lease' });
    // Not required: the daemon's readiness does not hang on it, but it shows.
    expect(locked.body.parts.retention).toMatchObject({ state: 'retrying', required: false });
    expect(locked.body.parts.retention!.error).toMatch(/^the mirror file is locked by another process/);
    expect(locked.body.reason).toContain('not every part runs: leases retrying (');
    expect(Object.keys(locked.body.parts).sort()).toEqual(['leases', 'retention', 'scheduler', 'stale-watch', 'webhooks', 'writes']);
    const lockedMetric = await partsRunning(url);
    expect(lockedMetric).toMatchObject({ leases: 0, webhooks: 0, retention: 0, scheduler: 1 });
    // Each write that found the file locked is counted.
    expect(await fileLockedTotal(url)).toBeGreaterThanOrEqual(2);
    expect(receiver.received).toHaveLength(0);

    // `status` (reading only, the lock held): the daemon could not record itself in the mirror...
    const unrecorded = await readStatus(path);
    expect(unrecorded.daemons).toEqual({ daemons: [], none: expect.stringMatching(/^no daemon recorded in the mirror/) });
    // ...so it asks the configured address, which serves this mirror: the parts live, with the lock error.
    const lockedStatus = await readStatus(path, { daemonUrl: url });
    expect(lockedStatus.daemons.none).toBeNull();
    expect(lockedStatus.daemons.daemons).toHaveLength(1);
    const lockedDaemon = lockedStatus.daemons.daemons[0]!;
    expect(lockedDaemon).toMatchObject({ source: 'live', connection: 'default', url, pid: process.pid, error: null });
    const lockedParts = Object.fromEntries(lockedDaemon.parts.map((part) => [part.part, part]));
    expect(lockedParts.leases).toMatchObject({ state: 'retrying', required: true, error: expect.stringMatching(/^(stream:onboardings|webhooks): the mirror file is locked by another process/) });
    expect(lockedParts.retention).toMatchObject({ state: 'retrying', required: false, error: expect.stringMatching(/^the mirror file is locked by another process/) });
    expect(lockedParts.webhooks).toMatchObject({ state: 'starting', reason: 'waiting for the webhooks lease' });
    // The verdict counts the required parts down (leases retrying, webhooks starting), not the retention.
    expect(lockedStatus.verdict.ok).toBe(false);
    expect(lockedStatus.verdict.text).toMatch(/^2 daemon parts down \(leases retrying, webhooks starting\)/);
    // The command line finds the daemon at its configured port (BIZOPS_HTTP_PORT) and prints the parts.
    const port = new URL(url).port;
    const cli = await runCli(['status', '--db', path], { PATH: process.env.PATH, HOME: process.env.HOME, BIZOPS_HTTP_PORT: port });
    expect(cli.code, cli.stderr).toBe(0);
    const cliLines = cli.stdout.split('\n');
    expect(cliLines[0]).toMatch(/^NEEDS A LOOK: 2 daemon parts down \(leases retrying, webhooks starting\)/);
    expect(cli.stdout).toContain(`daemon: pid ${process.pid}, http://127.0.0.1:${port}, up since `);
    expect(cliLines.find((line) => line.startsWith('  leases '))).toMatch(/^ {2}leases +retrying +\S+ +\d+ failure\(s\): (stream:onboardings|webhooks): the mirror file is locked by another process/);
    expect(cliLines.find((line) => line.startsWith('  webhooks '))).toMatch(/starting +\S+ +waiting for the webhooks lease$/);

    lock.exec('COMMIT');
    // Released: the next lease round takes every lease, delivery starts, every part runs.
    const ready = await waitFor(async () => {
      const answer = await readyz(url);
      return answer.status === 200 && Object.values(answer.body.parts).every((part) => part.state === 'running') ? answer : undefined;
    }, 'every part to run once the lock is released', 30_000);
    expect(ready.body.ready).toBe(true);
    expect(await partsRunning(url)).toEqual({ leases: 1, webhooks: 1, writes: 1, retention: 1, 'stale-watch': 1, scheduler: 1 });
    // The daemon records itself once the mirror takes writes: `status` finds it from its row alone, every part running.
    const released = await waitFor(async () => {
      const status = await readStatus(path);
      return status.daemons.daemons[0]?.parts.every((part) => part.state === 'running') ? status : undefined;
    }, 'status to find the daemon from its row, every part running', 30_000);
    expect(released.daemons.daemons).toHaveLength(1);
    expect(released.daemons.daemons[0]).toMatchObject({ source: 'live', url, pid: process.pid, seenAt: expect.any(String) });
    expect(released.daemons.daemons[0]!.parts.map((part) => part.part).sort()).toEqual(['leases', 'retention', 'scheduler', 'stale-watch', 'webhooks', 'writes']);
    expect(released.verdict.text).not.toContain('daemon part');
    // A change made now is synced and delivered.
    const onboarding = sim.world.startOnboarding();
    await waitFor(() => receiver!.received.some((request) => request.body.includes(onboarding.id)), 'the new onboarding delivered as a webhook', 30_000);

    await daemon.stop();
    expect(Object.values(daemon.connections[0]!.parts.statuses()).map((part) => part.state)).toEqual(Array(6).fill('stopped'));
    // Stopped: its row is gone, and nothing answers at its address.
    const stopped = await readStatus(path, { daemonUrl: url });
    expect(stopped.daemons).toEqual({ daemons: [], none: `no daemon recorded in the mirror, and nothing listens at ${url} (http.host/http.port): no daemon is running for it` });
  });

  it('answers a route that writes to the mirror 503 with Retry-After while the lock is held, and serves it once released', async () => {
    sim = await simulator({ size: { transactions: 1, deals: 1, onboardings: 1 } });
    dir = tempDir();
    prefix = `bizops-test:locked-start:${randomUUID()}:`;
    const path = dir.file('mirror.db');
    openMirror(path).close();
    lock = new Database(path);
    lock.exec('BEGIN IMMEDIATE');
    daemon = await startDaemon(testConfig(sim, path, { http: { port: 0, readApiKey: READ_KEY }, sync: { streams: ['onboardings'], schedule: '0 0 1 1 *' } }), {
      logger: silentLogger,
      processMetrics: false,
      sqliteBusyTimeoutMs: 60_000,
      redisKeys: { budgetPrefix: `${prefix}rate`, queuePrefix: prefix, queueName: 'writes' },
    });

    // Registering a consumer writes to the mirror: refused as a moment's unavailability, not a 500.
    const refused = await registerConsumer(daemon.url);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toEqual({ error: 'the mirror file is locked by another process (a command writing to it); try again after Retry-After seconds' });

    // Released: the same request registers it (the refused one registered nothing).
    lock.exec('COMMIT');
    const registered = await registerConsumer(daemon.url);
    expect(registered.status).toBe(201);
    expect(await registered.json()).toMatchObject({ created: true, consumer: { name: 'after-the-lock' } });
  });
});
