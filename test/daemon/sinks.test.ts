/**
 * A sink in the daemon (docs/sinks.md "Operating"): the daemon (in this process) backfills the
 * simulator and publishes every change to a Redis Streams sink; `/metrics` has its
 * `bizops_sink_*` series, `/console.json` its row, and the commands `sinks list`, `sinks retry` and
 * `status` (real processes on the same mirror and configuration file) show it, its URL's password
 * nowhere. Nothing waits on time: each step waits for a state.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { Redis } from 'ioredis';
import { startDaemon, type RunningDaemon } from '../../jobs/daemon.ts';
import { lastChangeSeq } from '../../src/mirror/changelog-format.ts';
import { openMirror } from '../../src/mirror/database.ts';
import { sqliteConnection } from '../../src/mirror/sql/sqlite.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { STREAM_NAMES } from '../../src/streams/definitions.ts';
import { loadEndpoint } from '../../src/notify/delivery/endpoint-store.ts';
import { loadHeldEvents } from '../../src/notify/delivery/held-events.ts';
import { groundTruthTotal, runCli, simulator, tempDir, testConfig, waitFor, type TempDir } from '../helpers.ts';
import { cliEnv } from './helpers.ts';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const READ_KEY = 'read-key-sinks-0123456789';

let sim: RunningSimulator | undefined;
let dir: TempDir | undefined;
let daemon: RunningDaemon | undefined;
let prefix: string | undefined;
const cleanups: (() => void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) cleanup();
  await daemon?.stop();
  await sim?.close();
  dir?.remove();
  if (prefix) {
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  }
  sim = dir = daemon = prefix = undefined;
});

describe('a sink in the daemon', { timeout: 120_000 }, () => {
  it('publishes the backfill; /metrics, the console, sinks list, sinks retry and status show it without its password', async () => {
    sim = await simulator({ size: { transactions: 10, deals: 4, onboardings: 2 } });
    dir = tempDir();
    prefix = `bizops-test:daemon-sink:${randomUUID()}:`;
    // The commands' configuration file names the sink's URL, with credentials, by urlFile (they read the mirror only: no AUTH is sent).
    const sinkUrl = new URL(REDIS_URL);
    sinkUrl.username = 'default';
    sinkUrl.password = 'not-the-real-password-0123';
    writeFileSync(dir.file('sink-url'), sinkUrl.toString());
    const sinks = [{ name: 'feed', kind: 'redis-stream', urlFile: dir.file('sink-url'), keyPrefix: prefix }];
    writeFileSync(dir.file('config.json'), JSON.stringify({ sinks }));
    // The daemon's own sink publishes to the tests' Redis (which has no password).
    const config = testConfig(sim, dir.file('mirror.db'), {
      http: { port: 0, readApiKey: READ_KEY },
      sinks: [{ name: 'feed', kind: 'redis-stream', url: REDIS_URL, keyPrefix: prefix }],
    });
    // One Redis client per sink, its listeners added once (not per event: a leak Node warns of past 10).
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on('warning', onWarning);
    cleanups.push(() => process.off('warning', onWarning));
    daemon = await startDaemon(config, { logger: silentLogger, processMetrics: false, webhooks: { pollMs: 50, scheduleMs: [0, 50, 100] }, redisKeys: { budgetPrefix: `${prefix}rate`, queuePrefix: prefix, queueName: 'writes' } });
    const connection = daemon.context.connection;
    // The backfill recorded every record of every stream, and the sink published all of it (the daemon's /metrics says so too).
    const records = groundTruthTotal(sim);
    const metricsText = async () => (await fetch(`${daemon!.url}/metrics`)).text();
    await waitFor(async () => {
      const recorded = (await connection.all<{ n: number | string }>(`SELECT COUNT(DISTINCT stream || '/' || record_id) AS n FROM changes WHERE stream IN (${STREAM_NAMES.map(() => '?').join(', ')})`, [...STREAM_NAMES]))[0]!;
      const last = await lastChangeSeq(connection);
      return (
        Number(recorded.n) >= records &&
        (await loadEndpoint(connection, 'feed'))?.deliveredSeq === last &&
        (await loadHeldEvents(connection, 'feed')).length === 0 &&
        /^bizops_sink_lag_events\{connection="default",sink="feed",kind="redis-stream"\} 0$/m.test(await metricsText())
      );
    }, 'the backfill published', 60_000);
    const last = await lastChangeSeq(connection);
    expect(warnings.filter((warning) => warning.startsWith('MaxListenersExceededWarning'))).toEqual([]);
    const metrics = await metricsText();
    expect(metrics).toMatch(/^bizops_sink_deliveries_total\{connection="default",sink="feed",kind="redis-stream"\} \d+$/m);
    expect(metrics).not.toMatch(/bizops_webhook_lag_events\{[^}]*endpoint="feed"/);

    const consoleJson = (await (await fetch(`${daemon.url}/console.json`, { headers: { authorization: `Bearer ${READ_KEY}` } })).json()) as { connections: { sinks: { name: string; kind: string; deliveredSeq: number }[] }[] };
    expect(consoleJson.connections[0]!.sinks).toMatchObject([{ name: 'feed', kind: 'redis-stream' }]);
    await daemon.stop();
    daemon = undefined;
    // Stopped: every event up to the sink's cursor is in Redis once (none failed: the sink waits for its connection).
    const stopped = sqliteConnection(openMirror(dir.file('mirror.db')));
    const published = (await loadEndpoint(stopped, 'feed'))!.deliveredSeq;
    const streams = await stopped.all<{ stream: string }>('SELECT DISTINCT stream FROM changes');
    await stopped.close();
    expect(published).toBeGreaterThanOrEqual(last);
    const redis = new Redis(REDIS_URL);
    const seqs: number[] = [];
    for (const { stream } of streams) for (const [, fields] of await redis.xrange(`${prefix}${stream}`, '-', '+')) seqs.push(Number(fields[5]));
    redis.disconnect();
    expect(seqs.sort((a, b) => a - b)).toEqual(Array.from({ length: published }, (_, index) => index + 1));

    // The commands, on the file's configuration (its URL from urlFile, password and all).
    const env = cliEnv({ BIZOPS_CONFIG: dir.file('config.json'), BIZOPS_BASE_URL: sim.url, BIZOPS_TOKEN: String(sim.tokens.admin), BIZOPS_DB: dir.file('mirror.db') });
    // The two listings read only: started at once.
    const [listed, table] = await Promise.all([runCli(['sinks', 'list', '--json'], env), runCli(['sinks', 'list'], env)]);
    expect(listed.stderr).toBe('');
    expect(JSON.parse(listed.stdout)).toMatchObject([{ name: 'feed', kind: 'redis-stream', deliveredSeq: published, heldEvents: 0, failedEvents: 0, enabled: true, configured: true }]);
    expect(listed.stdout).not.toContain('not-the-real-password');
    expect(table.stdout.split('\n')[0]).toMatch(/^NAME\s+KIND\s+URL\s+STATE\s+CURSOR\s+LAG/);
    expect(table.stdout.split('\n')[1]).toMatch(/^feed\s+redis-stream\s+redis:\/\/\*\*\*:\*\*\*@127\.0\.0\.1:\d+\S*\s+enabled\s+\d+\s+0 events/);
    const retried = await runCli(['sinks', 'retry', 'feed'], env);
    expect(retried.stdout).toBe('feed: was not paused; its held events are due now\n');
    const status = await runCli(['status'], env);
    expect(status.stdout).toMatch(new RegExp(`^feed\\s+redis-stream\\s+${published}\\s+\\d+ events\\s+publishing$`, 'm'));
    expect(status.stdout).not.toContain('not-the-real-password');
  });
});
