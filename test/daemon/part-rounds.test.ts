/**
 * The daemon's parts whose work recurs, on the real file, in this process: another connection takes
 * the mirror's write lock after every part runs.
 *
 * - The write sweeper's sweeps fail (a write's row needs an update): the `writes` part shows
 *   `retrying` with the lock error in `/readyz`, `bizops_daemon_part_running` and `status`, and
 *   `running` again after the next sweep that works.
 * - The lease keeper's rounds fail: one warning when they start failing (naming the leases and the
 *   cause), none more over the next rounds, one line when a round works again.
 * - Webhook delivery started again and again while the file is locked (its start registers the
 *   endpoints, a write): each failed start closes the mirror handle it opened, so the process's
 *   open handles on the file do not grow.
 *
 * Nothing waits on time: each step waits for a state or a count.
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, readlinkSync, realpathSync } from 'node:fs';
import Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { startDaemon, type RunningDaemon } from '../../jobs/daemon.ts';
import { readStatus } from '../../jobs/status.ts';
import { openMirror } from '../../src/mirror/database.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import type { PartStatus } from '../../src/daemon/index.ts';
import { capturingLogger, simulator, tempDir, testConfig, waitFor, type TempDir } from '../helpers.ts';
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

async function parts(url: string): Promise<Record<string, PartStatus>> {
  return ((await (await fetch(`${url}/readyz`)).json()) as { parts: Record<string, PartStatus> }).parts;
}

/** `bizops_daemon_part_running` by part. */
async function partsRunning(url: string): Promise<Record<string, number>> {
  const { samples } = parsePrometheusText(await (await fetch(`${url}/metrics`)).text());
  return Object.fromEntries(samples.filter((sample) => sample.name === 'bizops_daemon_part_running').map((sample) => [sample.labels.part!, sample.value]));
}

/** This process's open file descriptors on the file at `path` (each SQLite handle holds one). */
function openHandlesOn(path: string): number {
  const target = realpathSync(path);
  let count = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === target) count += 1;
    } catch {
      // Closed while listed.
    }
  }
  return count;
}

describe('parts whose rounds fail after their start', { timeout: 60_000 }, () => {
  it('the write sweeper shows its part retrying and running again; the lease keeper warns once, not every round', async () => {
    sim = await simulator({ size: { transactions: 2, deals: 2, onboardings: 2 } });
    dir = tempDir();
    prefix = `bizops-test:part-rounds:${randomUUID()}:`;
    const path = dir.file('mirror.db');
    openMirror(path).close();
    const config = testConfig(sim, path, {
      http: { port: 0 },
      sync: { streams: ['onboardings'], schedule: '* * * * * *', leaseSeconds: 0.6 },
      writes: { sweepSeconds: 0.1 },
    });
    const { logger, lines } = capturingLogger();
    daemon = await startDaemon(config, {
      logger,
      processMetrics: false,
      sqliteBusyTimeoutMs: 60_000,
      partRetry: { minDelayMs: 20, maxDelayMs: 200 },
      redisKeys: { budgetPrefix: `${prefix}rate`, queuePrefix: prefix, queueName: 'writes' },
    });
    const url = daemon.url;
    await waitFor(async () => Object.values(await parts(url)).every((part) => part.state === 'running'), 'every part to run');
    const logged = (message: string) => lines.map((line) => JSON.parse(line) as { msg: string; leases?: string[]; err?: { message: string }; failedRounds?: number }).filter((line) => line.msg.startsWith(message));

    // A write whose row has an enqueue error to clear (every sweep updates it), then the file write-locked
    // by another connection: the row and the lock in one step, so the daemon sees the row only locked.
    lock = new Database(path);
    const now = new Date().toISOString();
    lock
      .prepare("INSERT INTO writes (id, idempotency_key, kind, status, payload, payload_hash, acting_as, created_at, updated_at, enqueue_error) VALUES (?, ?, 'deal.close', 'queued', '{}', 'x', 'default', ?, ?, 'Redis did not answer')")
      .run(`wr_${randomUUID()}`, randomUUID(), now, now);
    lock.exec('BEGIN IMMEDIATE');

    const failing = await waitFor(async () => {
      const shown = await parts(url);
      return shown.writes?.state === 'retrying' && (shown.writes.failures ?? 0) >= 2 && (shown.leases?.failures ?? 0) >= 4 ? shown : undefined;
    }, 'the sweeps and the lease rounds to fail');
    expect(failing.writes).toMatchObject({ state: 'retrying', required: true, error: expect.stringMatching(/^the mirror file is locked by another process/) });
    expect(failing.leases).toMatchObject({ state: 'retrying', error: expect.stringMatching(/^stream:onboardings: the mirror file is locked by another process/) });
    expect(await partsRunning(url)).toMatchObject({ writes: 0, leases: 0, scheduler: 1 });
    // `status` finds the daemon from its row (written before the lock) and shows its parts live.
    const status = await readStatus(path);
    const writes = status.daemons.daemons[0]!.parts.find((part) => part.part === 'writes');
    expect(writes).toMatchObject({ state: 'retrying', since: failing.writes!.since, error: expect.stringMatching(/^the mirror file is locked by another process/) });
    // Four and more failed lease rounds, one warning naming the lease and the cause.
    const warned = logged('could not renew or acquire leases');
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ leases: ['stream:onboardings'], err: { message: expect.stringMatching(/^stream:onboardings: the mirror file is locked by another process/) } });
    expect(logged('still cannot renew or acquire leases')).toHaveLength(0);

    lock.exec('COMMIT');
    await waitFor(async () => Object.values(await parts(url)).every((part) => part.state === 'running'), 'every part to run again once the lock is released');
    expect(await partsRunning(url)).toMatchObject({ writes: 1, leases: 1 });
    await waitFor(() => logged('leases renewed or acquired again').length === 1, 'the lease keeper to log its recovery');
    expect(logged('leases renewed or acquired again')[0]!.failedRounds).toBeGreaterThanOrEqual(4);
    expect(logged('could not renew or acquire leases')).toHaveLength(1);
  });

  it('webhook delivery that cannot start on a locked file leaves no mirror handle open per attempt', async () => {
    sim = await simulator({ size: { transactions: 2, deals: 2, onboardings: 2 } });
    dir = tempDir();
    receiver = await new WebhookReceiver().start();
    prefix = `bizops-test:part-rounds:${randomUUID()}:`;
    const path = dir.file('mirror.db');
    openMirror(path).close();
    const config = testConfig(sim, path, {
      http: { port: 0 },
      webhooks: [{ name: 'hook', url: receiver.url, secret: newWebhookSecret() }],
      sync: { streams: ['onboardings'], schedule: '* * * * * *', leaseSeconds: 300 },
    });
    daemon = await startDaemon(config, {
      logger: silentLogger,
      processMetrics: false,
      sqliteBusyTimeoutMs: 60_000,
      partRetry: { minDelayMs: 20, maxDelayMs: 100 },
      webhooks: { pollMs: 50, scheduleMs: [0, 50, 100] },
      redisKeys: { budgetPrefix: `${prefix}rate`, queuePrefix: prefix, queueName: 'writes' },
    });
    const url = daemon.url;
    await waitFor(async () => Object.values(await parts(url)).every((part) => part.state === 'running'), 'every part to run');
    const connection = daemon.connections[0]!;

    // Delivery stopped (as when the lease goes to a replica): the handles the daemon keeps otherwise,
    // and the locking connection's.
    await connection.parts.standBy('webhooks', 'stopped by the test');
    await connection.dispatcher!.settled();
    lock = new Database(path);
    const before = openHandlesOn(path);

    // Locked, delivery started again: each attempt opens its handle and cannot register the endpoints.
    // (SQLite keeps the descriptor of a handle closed while this process holds a lock on the file, and
    // reuses it for the next handle opened: one more, however many attempts.)
    lock.exec('BEGIN IMMEDIATE');
    const afterFailedStarts = async (count: number): Promise<number> => {
      void connection.parts.start('webhooks');
      const retried = await waitFor(() => {
        const status = connection.parts.status('webhooks');
        return status?.state === 'retrying' && (status.failures ?? 0) >= count ? status : undefined;
      }, `${count} failed starts of webhook delivery`);
      expect(retried.error).toMatch(/the mirror file is locked by another process/);
      await connection.parts.standBy('webhooks', 'stopped by the test');
      await connection.dispatcher!.settled();
      return openHandlesOn(path);
    };
    const afterThree = await afterFailedStarts(3);
    expect(afterThree).toBeLessThanOrEqual(before + 1);
    expect(await afterFailedStarts(8)).toBe(afterThree);

    // Released: delivery starts.
    lock.exec('COMMIT');
    await connection.parts.start('webhooks');
    await waitFor(() => connection.parts.status('webhooks')?.state === 'running', 'webhook delivery to run');
  });
});
