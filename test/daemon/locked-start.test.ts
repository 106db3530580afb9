/**
 * The daemon started while another connection holds the SQLite file's write lock (a `BEGIN
 * IMMEDIATE` left open: a stuck writer, a long transaction), in this process on the real file: it
 * comes up, `/readyz` and `bizops_daemon_part_running` say which parts cannot run (the leases, hence
 * webhook delivery) and why, and once the lock is released every part runs: `/readyz` is ready and a
 * change made afterwards reaches the webhook receiver. Nothing waits on time: each step waits for a
 * state. The mirror's busy timeout is long (a minute): the daemon never waits on it once the mirror
 * is open (a daemon that did would block this very process, and its probes, for that minute).
 */
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { startDaemon, type RunningDaemon } from '../../jobs/daemon.ts';
import { openMirror } from '../../src/mirror/database.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import type { PartStatus } from '../../src/daemon/index.ts';
import { simulator, tempDir, testConfig, waitFor, type TempDir } from '../helpers.ts';
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

    lock.exec('COMMIT');
    // Released: the next lease round takes every lease, delivery starts, every part runs.
    const ready = await waitFor(async () => {
      const answer = await readyz(url);
      return answer.status === 200 && Object.values(answer.body.parts).every((part) => part.state === 'running') ? answer : undefined;
    }, 'every part to run once the lock is released', 30_000);
    expect(ready.body.ready).toBe(true);
    expect(await partsRunning(url)).toEqual({ leases: 1, webhooks: 1, writes: 1, retention: 1, 'stale-watch': 1, scheduler: 1 });
    // A change made now is synced and delivered.
    const onboarding = sim.world.startOnboarding();
    await waitFor(() => receiver!.received.some((request) => request.body.includes(onboarding.id)), 'the new onboarding delivered as a webhook', 30_000);

    await daemon.stop();
    expect(Object.values(daemon.connections[0]!.parts.statuses()).map((part) => part.state)).toEqual(Array(6).fill('stopped'));
  });
});
