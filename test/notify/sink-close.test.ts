/**
 * Closing the Redis Streams and NATS sinks (docs/sinks.md "What each broker guarantees") when their
 * server stopped answering: a server of the test's own paused with SIGSTOP (the kernel still takes
 * the client's bytes, nothing answers). Each sender delivers one event first; its `close()` then
 * resolves (after `ackTimeoutSeconds`, or `CLOSE_WAIT_MS` when that is shorter) and its connection is gone from the server once the server
 * is resumed. A NATS send waiting for its connection's opening returns at once when its signal
 * aborts. Nothing waits on time.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { configSchema, type SinkConfig } from '../../src/config/schema.ts';
import type { ChangeEvent } from '../../src/notify/changelog-reader.ts';
import { natsSender } from '../../src/notify/sinks/nats-sink.ts';
import { redisStreamSender } from '../../src/notify/sinks/redis-stream-sink.ts';
import { waitFor } from '../helpers.ts';
import { freePort } from '../free-port.ts';
import { startOwnNats, startOwnRedis, uniqueName, type OwnBroker } from './brokers.ts';

const event: ChangeEvent = {
  seq: 7,
  eventId: 'evt_sink_close_1',
  type: 'deal.won',
  stream: 'deals',
  recordId: 'deal_1',
  occurredAt: '2025-03-01T10:00:00.000Z',
  data: { record: { id: 'deal_1', status: 'WON' }, changes: { status: { old: 'OPEN', new: 'WON' } } },
};

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A temp dir removed after the test. */
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sink-close-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** `broker` resumed and killed after the test (before its temp dir is removed). */
function stopAfterTest(broker: OwnBroker): void {
  cleanups.push(async () => {
    broker.resume();
    await broker.kill();
  });
}

/** One validated sink of the given fields (`name` `to-broker`). */
function sinkOf(fields: Record<string, unknown>): SinkConfig {
  const [sink] = configSchema.parse({ baseUrl: 'http://127.0.0.1:9', tokens: { default: 'tok_default_0000' }, sinks: [{ name: 'to-broker', ...fields }] }).sinks;
  return sink!;
}

/** The names of the NATS server's open client connections (its `/connz` monitoring). */
async function natsConnectionNames(monitorPort: number): Promise<string[]> {
  const response = await fetch(`http://127.0.0.1:${monitorPort}/connz`);
  const body = (await response.json()) as { connections?: { name?: string }[] };
  return (body.connections ?? []).map((connection) => connection.name ?? '');
}

describe('sinks: closing when the server stopped answering', () => {
  it('redis-stream: close() resolves against a paused Redis and its connection is gone', async () => {
    const redis = await startOwnRedis(tempDir());
    stopAfterTest(redis);
    const key = uniqueName('close');
    // Made and given its cleanup before anything can hang: a body that goes on after its test timed out pushes no cleanup into the next test's.
    const check = new Redis(redis.url, { maxRetriesPerRequest: 0 });
    cleanups.push(async () => check.disconnect());
    // A time limit past the test's hang guard: only the close's own bound (CLOSE_WAIT_MS, 2 s) can end the wait.
    const sender = redisStreamSender(sinkOf({ kind: 'redis-stream', url: redis.url, key, ackTimeoutSeconds: 60 }));
    expect(await sender.send(event, new AbortController().signal)).toMatchObject({ ok: true });

    redis.pause(); // QUIT gets no answer
    await sender.close();

    redis.resume();
    expect(await check.xlen(key)).toBe(1);
    await waitFor(async () => !String(await check.client('LIST')).includes('name=bizops-sync-sink-to-broker'), "the sink's connection gone from Redis");
  }, 30_000);

  it('nats: close() resolves against a paused NATS server and its connection is gone', async () => {
    const monitorPort = await freePort();
    const nats = await startOwnNats(join(tempDir(), 'jetstream'), monitorPort);
    stopAfterTest(nats);
    const sender = natsSender(sinkOf({ kind: 'nats', url: nats.url, subjectPrefix: uniqueName('close'), stream: uniqueName('CLOSE'), createStream: true, ackTimeoutSeconds: 1 }));
    expect(await sender.send(event, new AbortController().signal)).toMatchObject({ ok: true });
    expect(await natsConnectionNames(monitorPort)).toContain('bizops-sync sink to-broker');

    nats.pause();
    await sender.close();

    nats.resume();
    await waitFor(async () => !(await natsConnectionNames(monitorPort)).includes('bizops-sync sink to-broker'), "the sink's connection gone from NATS");
  }, 30_000);

  it('nats: a send waiting for the opening returns the aborted outcome when its signal aborts, and close() closes that connection once it opens', async () => {
    const monitorPort = await freePort();
    const nats = await startOwnNats(join(tempDir(), 'jetstream'), monitorPort);
    stopAfterTest(nats);
    // A time limit past the test's hang guard: only the abort can end the send's wait.
    const sender = natsSender(sinkOf({ kind: 'nats', url: nats.url, subjectPrefix: uniqueName('open'), stream: uniqueName('OPEN'), createStream: true, ackTimeoutSeconds: 120 }));
    nats.pause(); // the TCP connection is accepted, the server's INFO never comes
    const controller = new AbortController();
    const sending = sender.send(event, controller.signal);
    controller.abort();
    expect(await sending).toMatchObject({ ok: false, aborted: true });

    nats.resume(); // the opening goes on and completes
    await waitFor(async () => (await natsConnectionNames(monitorPort)).includes('bizops-sync sink to-broker'), "the sink's connection open on NATS");
    await sender.close();
    await waitFor(async () => !(await natsConnectionNames(monitorPort)).includes('bizops-sync sink to-broker'), "the sink's connection gone from NATS");
  }, 30_000);
});
