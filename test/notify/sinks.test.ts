/**
 * Sinks (docs/sinks.md) against real brokers: NATS JetStream, RabbitMQ and Redis Streams, the
 * delivery core in front of each (the same as webhooks'). What a consumer of each broker reads is
 * checked: every event, the webhook's body, the event id where the broker keeps it, each record's
 * events in changelog order (a chained checksum per record), duplicates only with the same id.
 * Broker faults: NATS's acknowledgements held back past the time limit (its retries then stored
 * once, by Nats-Msg-Id) and the server killed and restarted, RabbitMQ connections reset and its
 * confirms held back past the time limit, Redis connections killed and the server killed and
 * restarted (its append-only file written before each answer). Nothing waits on time: each step waits
 * for a state.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { describeOnSqlite } from '../sqlite-only.ts';
import { TEST_MIRROR_BACKEND } from '../test-mirror.ts';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import amqp from 'amqplib';
import { connect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Redis } from 'ioredis';
import { configSchema, type SinkConfig } from '../../src/config/schema.ts';
import { MirrorStore, type AppendedChange, type ChangeRowInput } from '../../src/mirror/mirror-store.ts';
import { readChanges } from '../../src/notify/changelog-reader.ts';
import { DeliveryDispatcher } from '../../src/notify/delivery/delivery-dispatcher.ts';
import { latestAttempts, listAttemptsOfEvent } from '../../src/notify/delivery/attempts.ts';
import { loadEndpoint } from '../../src/notify/delivery/endpoint-store.ts';
import { loadHeldEvents } from '../../src/notify/delivery/held-events.ts';
import { webhookPayload } from '../../src/notify/event-payload.ts';
import { listSinks, sinkTargets } from '../../src/notify/sinks/index.ts';
import { fixtureEnv, waitFor } from '../helpers.ts';
import { brokerLog, NATS_URL, RABBITMQ_URL, REDIS_URL, startOwnNats, startOwnRabbit, startOwnRedis, startProxy, uniqueName, type BrokerProxy, type OwnBroker } from './brokers.ts';
import { tempMirror, type TempMirror } from './helpers.ts';

const SINK_DISPATCHER = fileURLToPath(new URL('./fixtures/run-sink-dispatcher.ts', import.meta.url));

let mirror: TempMirror;
const cleanups: (() => Promise<unknown>)[] = [];

/**
 * The private RabbitMQ of the kill-and-restart test (SQLite project only), started when the file
 * loads: its Erlang VM boots (about 6 s) while the other tests run. A failed start fails that test.
 */
const privateRabbit = TEST_MIRROR_BACKEND === 'postgres' ? undefined : (() => {
  const dir = mkdtempSync(join(tmpdir(), 'bizops-rabbit-'));
  const rabbit = startOwnRabbit(dir);
  rabbit.catch(() => undefined); // awaited (and its error thrown) by the test
  return { dir, rabbit };
})();
afterAll(async () => {
  if (!privateRabbit) return;
  await (await privateRabbit.rabbit.catch(() => undefined))?.kill(); // when the test did not run (-t), or failed before its cleanup
  rmSync(privateRabbit.dir, { recursive: true, force: true });
});

beforeEach(async () => {
  mirror = await tempMirror();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  await mirror.cleanup();
});

/** Sinks as the configuration validates them. */
function sinks(entries: Record<string, unknown>[]): SinkConfig[] {
  return configSchema.parse({ baseUrl: 'http://127.0.0.1:9', tokens: { default: 'tok_default_0000' }, sinks: entries }).sinks;
}

/** A dispatcher of `configured`, time scaled down: poll 20 ms, retries after 20, 40, 80 ms, probes every 20 to 120 ms. */
async function dispatch(configured: SinkConfig[]): Promise<DeliveryDispatcher> {
  const dispatcher = new DeliveryDispatcher({ connection: mirror.connection, targets: await sinkTargets(configured), pollMs: 20, scheduleMs: [0, 20, 40, 80], maxAttempts: 1000, jitterRatio: 0, stopGraceMs: 100 });
  cleanups.push(() => dispatcher.stop());
  await dispatcher.start();
  return dispatcher;
}

/** `perRecord` changes of each of `records` deals, interleaved (as a sync's pages would append them). */
async function appendChanges(records: readonly string[], perRecord: number, round = 0): Promise<AppendedChange[]> {
  const store = new MirrorStore(mirror.connection);
  const changes: ChangeRowInput[] = [];
  for (let n = 0; n < perRecord; n += 1) {
    for (const id of records) changes.push({ type: 'deal.updated', stream: 'deals', recordId: id, data: { record: { id, title: `${id} v${round}.${n}` }, changes: { title: { old: null, new: `${id} v${round}.${n}` } } } });
  }
  return store.transaction((tx) => tx.appendChanges(changes));
}

/** One message as a consumer read it: the event id the broker carried, the record, the body. */
interface Received {
  id: string;
  recordId: string;
  seq: number;
  body: string;
}

/**
 * Each record's events in changelog order, duplicates (same id) dropped: a chain of SHA-256 over the
 * event ids, so a lost, reordered or foreign event changes the record's checksum.
 */
function chains(messages: readonly Received[]): Map<string, string> {
  const seen = new Set<string>();
  const out = new Map<string, string>();
  for (const message of messages) {
    if (seen.has(message.id)) continue;
    seen.add(message.id);
    out.set(message.recordId, createHash('sha256').update(`${out.get(message.recordId) ?? ''}|${message.id}`).digest('hex'));
  }
  return out;
}

/** What every sink must show for the changelog's events after `afterSeq`: all of them, in order per record, the exact webhook body, duplicates identical. */
async function expectDelivered(received: readonly Received[], afterSeq: number): Promise<void> {
  const events = (await readChanges(mirror.connection, { sinceSeq: afterSeq, limit: 10_000 })).filter((event) => event.stream === 'deals'); // not the sinks' condition events
  const expected = events.map((event) => ({ id: event.eventId, recordId: event.recordId, seq: event.seq, body: JSON.stringify(webhookPayload(event)) }));
  expect(chains(received)).toEqual(chains(expected));
  const bodies = new Map(expected.map((event) => [event.id, event.body]));
  for (const message of received) expect(message.body).toBe(bodies.get(message.id)); // a duplicate is the same event, byte for byte
  expect(new Set(received.map((message) => message.id)).size).toBe(expected.length);
}

/** Reads every message of a JetStream stream (an ordered consumer). */
async function readNats(url: string, stream: string, count: number): Promise<Received[]> {
  const connection = await connect({ servers: new URL(url).host });
  try {
    const consumer = await jetstream(connection).consumers.get(stream);
    const received: Received[] = [];
    while (received.length < count) {
      const batch = await consumer.fetch({ max_messages: count - received.length, expires: 2000 });
      let got = 0;
      for await (const message of batch) {
        got += 1;
        const body = message.string();
        const data = (JSON.parse(body) as { data: { record_id: string; seq: number } }).data;
        expect(message.subject).toBe(`${stream.toLowerCase()}.deals.${data.record_id}`);
        received.push({ id: message.headers?.get('Nats-Msg-Id') ?? '', recordId: data.record_id, seq: data.seq, body });
      }
      if (got === 0) break;
    }
    return received;
  } finally {
    await connection.close();
  }
}

/** Reads every entry of a Redis stream key. */
async function readRedis(key: string, url = REDIS_URL): Promise<Received[]> {
  const client = new Redis(url);
  try {
    const entries = await client.xrange(key, '-', '+');
    return entries.map(([, fields]) => {
      const value = (name: string) => fields[fields.indexOf(name) + 1]!;
      expect(fields.filter((_, index) => index % 2 === 0)).toEqual(['id', 'type', 'seq', 'record_id', 'data']);
      return { id: value('id'), recordId: value('record_id'), seq: Number(value('seq')), body: value('data') };
    });
  } finally {
    client.disconnect();
  }
}

/** A queue bound to every routing key of `exchange` (declared here, as the sink would), collecting what arrives. */
async function rabbitQueue(exchange: string): Promise<{ received: Received[]; persistent: () => boolean }> {
  const connection = await amqp.connect(RABBITMQ_URL);
  cleanups.push(() => connection.close());
  const channel = await connection.createChannel();
  await channel.assertExchange(exchange, 'topic', { durable: true });
  cleanups.push(() => channel.deleteExchange(exchange));
  const { queue } = await channel.assertQueue('', { exclusive: true });
  await channel.bindQueue(queue, exchange, '#');
  const received: Received[] = [];
  let persistent = true;
  await channel.consume(queue, (message) => {
    if (!message) return;
    const body = message.content.toString();
    const data = (JSON.parse(body) as { type: string; data: { record_id: string; seq: number } });
    expect(message.fields.routingKey).toBe(`deals.${data.type}`);
    if (message.properties.deliveryMode !== 2 || message.properties.contentType !== 'application/json') persistent = false;
    received.push({ id: String(message.properties.messageId), recordId: data.data.record_id, seq: data.data.seq, body });
  }, { noAck: true });
  return { received, persistent: () => persistent };
}

describe('sinks', () => {
  it('publishes every event to NATS JetStream, RabbitMQ and Redis Streams: the webhook body, the event id, each record in changelog order', async () => {
    const name = uniqueName('s');
    const natsStream = name.toUpperCase();
    const exchange = `${name}.x`;
    const redisPrefix = `bizops-test:${name}:`;
    cleanups.push(async () => {
      const client = new Redis(REDIS_URL);
      await client.del(`${redisPrefix}deals`);
      client.disconnect();
    });
    cleanups.push(async () => {
      const connection = await connect({ servers: new URL(NATS_URL).host });
      await (await jetstreamManager(connection)).streams.delete(natsStream).catch(() => undefined);
      await connection.close();
    });
    const rabbit = await rabbitQueue(exchange);
    const configured = sinks([
      { name: 'to-nats', kind: 'nats', url: NATS_URL, subjectPrefix: name.toLowerCase(), stream: natsStream, createStream: true, maxInFlight: 8 },
      { name: 'to-rabbit', kind: 'rabbitmq', url: RABBITMQ_URL, exchange, maxInFlight: 8 },
      { name: 'to-redis', kind: 'redis-stream', url: REDIS_URL, keyPrefix: redisPrefix, maxInFlight: 8 },
    ]);
    const dispatcher = await dispatch(configured);
    const records = ['deal_a', 'deal_b', 'deal_c', 'deal_d', 'deal_e'];
    const appended = await appendChanges(records, 6);
    dispatcher.notify();
    const last = appended.at(-1)!.seq;
    await waitFor(async () => {
      for (const sink of ['to-nats', 'to-rabbit', 'to-redis']) if ((await loadEndpoint(mirror.connection, sink))?.deliveredSeq !== last) return false;
      return true;
    }, 'every sink at the last seq');

    await expectDelivered(await readNats(NATS_URL, natsStream, appended.length), 0);
    await waitFor(() => rabbit.received.length >= appended.length, 'the queue to hold every message');
    await expectDelivered(rabbit.received, 0);
    expect(rabbit.persistent()).toBe(true);
    await expectDelivered(await readRedis(`${redisPrefix}deals`), 0);

    // Kept like an endpoint's: cursor, attempts (the broker's acknowledgement), no password anywhere.
    const listing = await listSinks(mirror.connection, configured, { attempts: 1 });
    expect(listing.map((sink) => [sink.name, sink.kind, sink.deliveredSeq, sink.lagEvents])).toEqual([
      ['to-nats', 'nats', last, 0],
      ['to-rabbit', 'rabbitmq', last, 0],
      ['to-redis', 'redis-stream', last, 0],
    ]);
    expect(listing[0]!.recentAttempts[0]).toMatchObject({ outcome: 'delivered', response: expect.stringMatching(new RegExp(`^stream ${natsStream} seq \\d+$`)) });
    expect(listing[1]!.url).toBe('amqp://***:***@127.0.0.1:5672');
    expect(JSON.stringify(await mirror.connection.all('SELECT * FROM webhook_endpoints'))).not.toContain('guest:guest');
    expect((await dispatcher.stats()).map((stats) => [stats.name, stats.kind, stats.deliveries])).toEqual([
      ['to-nats', 'nats', appended.length],
      ['to-rabbit', 'rabbitmq', appended.length],
      ['to-redis', 'redis-stream', appended.length],
    ]);
  });

  it('loses nothing through broker faults: NATS acknowledging late, then killed and restarted; RabbitMQ connections reset and confirms held back; Redis connections killed, then the server killed and restarted', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bizops-sinks-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const nats: OwnBroker = await startOwnNats(join(dir, 'jetstream'));
    cleanups.push(() => nats.kill());
    mkdirSync(join(dir, 'redis'));
    const ownRedis: OwnBroker = await startOwnRedis(join(dir, 'redis'));
    cleanups.push(() => ownRedis.kill());
    const natsProxy: BrokerProxy = await startProxy(Number(new URL(nats.url).port));
    cleanups.push(() => natsProxy.close());
    const rabbitPort = Number(new URL(RABBITMQ_URL).port || 5672);
    const proxy: BrokerProxy = await startProxy(rabbitPort);
    cleanups.push(() => proxy.close());
    const name = uniqueName('f');
    const exchange = `${name}.x`;
    const redisPrefix = `bizops-test:${name}:`;
    const rabbit = await rabbitQueue(exchange);
    const rabbitUrl = new URL(RABBITMQ_URL);
    rabbitUrl.port = String(proxy.port);
    const configured = sinks([
      // Only the deals' events: the sinks' own condition events (sink.failing, sink.recovered) go to the others, tested below.
      { name: 'to-nats', kind: 'nats', url: `nats://127.0.0.1:${natsProxy.port}`, subjectPrefix: 'faults', stream: 'FAULTS', createStream: true, maxInFlight: 4, ackTimeoutSeconds: 1, events: ['deal.*'] },
      { name: 'to-rabbit', kind: 'rabbitmq', url: rabbitUrl.toString(), exchange, maxInFlight: 4, ackTimeoutSeconds: 0.3, events: ['deal.*'] },
      { name: 'to-redis', kind: 'redis-stream', url: ownRedis.url, keyPrefix: redisPrefix, maxInFlight: 4, ackTimeoutSeconds: 1, events: ['deal.*'] },
    ]);
    const dispatcher = await dispatch(configured);
    const records = ['deal_a', 'deal_b', 'deal_c', 'deal_d'];
    // Every event up to `seq` delivered: the cursor there, and none of them held back for a retry (a sink's cursor passes a
    // failed event it holds back; on a saturated machine the first round's openings can take longer than the time limit).
    const atSeq = async (sink: string, seq: number) =>
      ((await loadEndpoint(mirror.connection, sink))?.deliveredSeq ?? 0) >= seq && (await loadHeldEvents(mirror.connection, sink)).length === 0;

    // A first round through, then the faults strike while the next rounds are being delivered.
    const first = await appendChanges(records, 3, 1);
    dispatcher.notify();
    await waitFor(async () => (await atSeq('to-nats', first.at(-1)!.seq)) && (await atSeq('to-rabbit', first.at(-1)!.seq)) && (await atSeq('to-redis', first.at(-1)!.seq)), 'the first round');

    proxy.holdAnswers(true); // confirms come late: past the sink's time limit, so its publishes are retried
    natsProxy.holdAnswers(true); // PubAcks too: the server stored what their publishes carried
    await appendChanges(records, 3, 2);
    dispatcher.notify();
    await waitFor(async () => ((await loadEndpoint(mirror.connection, 'to-nats'))?.consecutiveFailures ?? 0) >= 1, 'a NATS publish past the time limit');
    await nats.kill();
    natsProxy.holdAnswers(false);
    natsProxy.reset();
    const redis = new Redis(ownRedis.url);
    redis.on('error', () => undefined); // its server is killed below
    cleanups.push(async () => redis.disconnect());
    const killRedisClients = async () => {
      const clients = (await redis.client('LIST')) as string;
      for (const line of clients.split('\n')) {
        const id = /\bid=(\d+)\b/.exec(line)?.[1];
        if (id && line.includes('name=bizops-sync-sink-to-redis')) await redis.client('KILL', 'ID', id);
      }
    };
    await killRedisClients();
    await waitFor(async () => ((await loadEndpoint(mirror.connection, 'to-nats'))?.consecutiveFailures ?? 0) >= 1, 'a failed publish to the dead NATS server');
    await waitFor(async () => ((await loadEndpoint(mirror.connection, 'to-rabbit'))?.consecutiveFailures ?? 0) >= 1, 'a confirm past the time limit');
    proxy.holdAnswers(false);
    proxy.reset();
    await killRedisClients();
    // Redis killed (SIGKILL) with what it acknowledged in its append-only file, the third round appended while it is away.
    await ownRedis.kill();
    const third = await appendChanges(records, 3, 3);
    dispatcher.notify();
    await waitFor(async () => ((await loadEndpoint(mirror.connection, 'to-redis'))?.consecutiveFailures ?? 0) >= 1, 'a failed XADD to the dead Redis server');
    await ownRedis.start();
    await nats.start();
    dispatcher.notify();
    const last = third.at(-1)!.seq;
    await waitFor(async () => (await atSeq('to-nats', last)) && (await atSeq('to-rabbit', last)) && (await atSeq('to-redis', last)), 'every sink at the last seq after the faults', 30_000);

    const natsMessages = await readNats(nats.url, 'FAULTS', third.length * 3);
    await expectDelivered(natsMessages, 0);
    // The retries after late PubAcks were dropped by the stream's duplicate window (Nats-Msg-Id): stored once each.
    const natsConnection = await connect({ servers: new URL(nats.url).host });
    cleanups.push(() => natsConnection.close());
    expect((await (await jetstreamManager(natsConnection)).streams.info('FAULTS')).state.messages).toBe(third.length * 3);
    const duplicates = (await latestAttempts(mirror.connection, 'to-nats', 1_000_000)).filter((attempt) => attempt.response?.endsWith('(duplicate: stored before)'));
    expect(duplicates.length).toBeGreaterThan(0); // the server said so on the retries' PubAcks
    // The broker confirmed every publish before the cursor moved; its consumer gets them a moment later.
    await waitFor(() => {
      const distinct = new Set(rabbit.received.map((message) => message.id)).size;
      if (distinct >= third.length * 3) return true;
      throw new Error(`the queue holds ${rabbit.received.length} messages of ${distinct} events (expected every one of ${third.length * 3})`);
    }, 'the queue to hold every event', 30_000);
    // Copies sent again (a publish whose confirm came late, or whose connection was reset) are the same event, with its id.
    await expectDelivered(rabbit.received, 0);
    // The publishes whose confirms came late (no confirm within 300 ms) were sent again, with the same event id: a failed
    // attempt, then a delivered one. How many copies the queue holds depends on where each publish stood when the proxy reset
    // its connection: not asserted.
    const rabbitAttempts = await latestAttempts(mirror.connection, 'to-rabbit', 1_000_000);
    const failedThenDelivered = rabbitAttempts.filter(
      (attempt) => attempt.outcome === 'failed' && rabbitAttempts.some((later) => later.eventId === attempt.eventId && later.outcome === 'delivered' && later.attempt > attempt.attempt),
    );
    const failures = JSON.stringify(rabbitAttempts.filter((attempt) => attempt.outcome === 'failed').map((attempt) => [attempt.seq, attempt.attempt, attempt.error]));
    expect(failedThenDelivered.some((attempt) => attempt.error?.endsWith('no confirm within 300 ms')), failures).toBe(true);
    await expectDelivered(await readRedis(`${redisPrefix}deals`, ownRedis.url), 0);
    expect(proxy.connections).toBeGreaterThan(1); // the sink opened its connection again after the reset
  });
});

describe('redis-stream batches', () => {
  it('keeps an acknowledged pipeline as one attempt row and shows each of its attempts by event id, with its entry id', async () => {
    const name = uniqueName('k');
    const prefix = `bizops-test:${name}:`;
    const client = new Redis(REDIS_URL);
    cleanups.push(async () => {
      await client.del(`${prefix}deals`);
      client.disconnect();
    });
    const dispatcher = await dispatch(sinks([{ name: 'to-redis', kind: 'redis-stream', url: REDIS_URL, keyPrefix: prefix, maxInFlight: 32 }]));
    const appended = await appendChanges(Array.from({ length: 64 }, (_, index) => `deal_${index}`), 1);
    dispatcher.notify();
    await waitFor(async () => (await loadEndpoint(mirror.connection, 'to-redis'))?.deliveredSeq === appended.at(-1)!.seq, 'the sink at the last seq');
    await waitFor(async () => (await latestAttempts(mirror.connection, 'to-redis', 1000)).length === appended.length, 'every attempt written');

    // Pipelines of up to 32 XADDs, each acknowledged whole: batch rows, not a row per attempt.
    const batches = Number((await mirror.connection.get<{ n: number | string }>("SELECT COUNT(*) AS n FROM webhook_attempt_batches WHERE endpoint = 'to-redis'"))!.n);
    const single = Number((await mirror.connection.get<{ n: number | string }>("SELECT COUNT(*) AS n FROM webhook_attempts WHERE endpoint = 'to-redis'"))!.n);
    expect(batches).toBeGreaterThan(0);
    expect(batches + single).toBeLessThan(appended.length);
    // Each event's attempt by its id: delivered at the first attempt, the answer naming its own entry in the stream.
    const entries = new Map((await client.xrange(`${prefix}deals`, '-', '+')).map(([entryId, fields]) => [fields[fields.indexOf('id') + 1]!, entryId]));
    for (const change of appended) {
      const attempts = await listAttemptsOfEvent(mirror.connection, change.eventId);
      expect(attempts.map((attempt) => [attempt.endpoint, attempt.seq, attempt.attempt, attempt.outcome, attempt.response])).toEqual([['to-redis', change.seq, 1, 'delivered', `${prefix}deals ${entries.get(change.eventId)}`]]);
    }
  });

  it('sends the ready events of different records in one pipeline, each XADD its own outcome: a refused one holds back only its record', async () => {
    const name = uniqueName('b');
    const prefix = `bizops-test:${name}:`;
    const client = new Redis(REDIS_URL);
    cleanups.push(async () => {
      await client.del(`${prefix}deals`, `${prefix}people`);
      client.disconnect();
    });
    await client.set(`${prefix}people`, 'not a stream'); // every XADD to it is refused (WRONGTYPE)
    const store = new MirrorStore(mirror.connection);
    const changes: ChangeRowInput[] = [];
    for (let n = 0; n < 3; n += 1) {
      for (const id of ['deal_a', 'deal_b', 'deal_c']) changes.push({ type: 'deal.updated', stream: 'deals', recordId: id, data: { record: { id, n } } });
      changes.push({ type: 'person.updated', stream: 'people', recordId: 'person_a', data: { record: { id: 'person_a', n } } });
    }
    const dispatcher = await dispatch(sinks([{ name: 'to-redis', kind: 'redis-stream', url: REDIS_URL, keyPrefix: prefix, maxInFlight: 8 }]));
    const appended = await store.transaction((tx) => tx.appendChanges(changes));
    dispatcher.notify();
    const deals = appended.filter((change) => change.stream === 'deals');
    await waitFor(async () => (await client.xlen(`${prefix}deals`)) === deals.length, 'every deal event in its stream');
    await waitFor(async () => ((await loadEndpoint(mirror.connection, 'to-redis'))?.consecutiveFailures ?? 0) >= 1, 'a refused XADD of the person');
    const attemptsOf = async (type: string) => (await latestAttempts(mirror.connection, 'to-redis', 1000)).filter((attempt) => attempt.type === type);
    await waitFor(async () => (await attemptsOf('deal.updated')).length === deals.length, 'every deal attempt written');

    // The deals went in the same pipelines as the refused person events, each acknowledged at its first attempt.
    const dealAttempts = await attemptsOf('deal.updated');
    expect(dealAttempts.map((attempt) => [attempt.outcome, attempt.attempt])).toEqual(deals.map(() => ['delivered', 1]));
    const personFailures = (await attemptsOf('person.updated')).filter((attempt) => attempt.outcome === 'failed');
    expect(personFailures[0]!.error).toMatch(/^Redis XADD bizops-test:\S+:people: WRONGTYPE/);

    await client.del(`${prefix}people`); // the key fixed: the held person events go, in order
    dispatcher.notify();
    await waitFor(async () => (await loadEndpoint(mirror.connection, 'to-redis'))?.deliveredSeq === appended.at(-1)!.seq && (await client.xlen(`${prefix}people`)) === 3, 'the person events after the fix');
    const people = await client.xrange(`${prefix}people`, '-', '+');
    expect(people.map(([, fields]) => Number(fields[fields.indexOf('seq') + 1]))).toEqual(appended.filter((change) => change.stream === 'people').map((change) => change.seq));
  });
});

/** Starts a dispatcher of the sinks `entries` in a child process (killed at the end) and waits until it runs. */
async function startSinkProcess(entries: Record<string, unknown>[]): Promise<ChildProcess> {
  const child = spawn(process.execPath, [SINK_DISPATCHER], {
    env: fixtureEnv({ BIZOPS_TEST_SINK_DISPATCHER: JSON.stringify({ dbPath: mirror.path, sinks: entries, pollMs: 20 }) }),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('started')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`sink dispatcher process exited early with ${String(code)}`)));
  });
  return child;
}

describe('redis-stream sink killed between XADD and the cursor write', () => {
  it('moves its cursor only past answered XADDs; after a SIGKILL the entries added without an answer go again with the same id, each record in changelog order', async () => {
    const proxy: BrokerProxy = await startProxy(Number(new URL(REDIS_URL).port || 6379));
    cleanups.push(() => proxy.close());
    const key = `bizops-test:${uniqueName('crash')}`;
    const redis = new Redis(REDIS_URL);
    cleanups.push(async () => {
      await redis.del(key);
      redis.disconnect();
    });
    const proxied = new URL(REDIS_URL);
    proxied.port = String(proxy.port);
    const sink = { name: 'to-redis', kind: 'redis-stream', key, ackTimeoutSeconds: 300 };
    const records = Array.from({ length: 300 }, (_, index) => `deal_${index}`);

    // A first round goes through: 300 events, 256 in flight at most (the default maxInFlight).
    const child = await startSinkProcess([{ ...sink, url: proxied.toString() }]);
    const first = await appendChanges(records, 1, 1);
    await waitFor(async () => (await loadEndpoint(mirror.connection, 'to-redis'))?.deliveredSeq === first.at(-1)!.seq, 'the first round acknowledged');
    expect(await redis.xlen(key)).toBe(first.length);

    // Then Redis's answers are held back: the next 256 XADDs (each a different record) are added, never answered.
    proxy.holdAnswers(true);
    const second = await appendChanges(records, 2, 2);
    await waitFor(async () => (await redis.xlen(key)) === first.length + 256, 'the next 256 XADDs added');
    const killed = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await killed;
    // The cursor never passed an XADD whose answer did not arrive.
    expect((await loadEndpoint(mirror.connection, 'to-redis'))?.deliveredSeq).toBe(first.at(-1)!.seq);

    // Restarted (straight to Redis): every event after the cursor goes again.
    await startSinkProcess([{ ...sink, url: REDIS_URL }]);
    await waitFor(async () => (await loadEndpoint(mirror.connection, 'to-redis'))?.deliveredSeq === second.at(-1)!.seq, 'every event acknowledged after the restart');
    const received = await readRedis(key);
    await expectDelivered(received, 0);
    // The 256 added before the kill are there twice, with the same id (and body, checked above); no other event is.
    const copies = new Map<number, number>();
    for (const message of received) copies.set(message.seq, (copies.get(message.seq) ?? 0) + 1);
    const twice = [...copies].filter(([, count]) => count === 2).map(([seq]) => seq);
    expect(twice).toEqual(second.slice(0, 256).map((change) => change.seq));
    expect(received).toHaveLength(first.length + second.length + 256);
  });
});

describe('sink condition events', () => {
  it('appends sink.failing once when a sink is taken for down and sink.recovered when it acknowledges again; the other targets get them, the sink itself never', async () => {
    const name = uniqueName('c');
    const refusedKey = `bizops-test:${name}:refused`;
    const witnessKey = `bizops-test:${name}:witness`;
    const client = new Redis(REDIS_URL);
    cleanups.push(async () => {
      await client.del(refusedKey, witnessKey);
      client.disconnect();
    });
    await client.set(refusedKey, 'not a stream'); // the broker refuses every XADD (WRONGTYPE)
    const dispatcher = await dispatch(sinks([
      { name: 'flaky', kind: 'redis-stream', url: REDIS_URL, key: refusedKey, maxInFlight: 4 },
      { name: 'witness', kind: 'redis-stream', url: REDIS_URL, key: witnessKey, maxInFlight: 4 },
    ]));
    const appended = await appendChanges(['deal_a', 'deal_b', 'deal_c'], 3);
    dispatcher.notify();
    const conditions = () => mirror.connection.all<{ seq: number; type: string; record_id: string }>("SELECT seq, type, record_id FROM changes WHERE stream = 'sinks' ORDER BY seq");
    // Probes go on failing after the event: it is said once.
    await waitFor(async () => ((await loadEndpoint(mirror.connection, 'flaky'))?.consecutiveFailures ?? 0) >= 8, 'the sink probed after it was taken for down');
    expect((await conditions()).map((row) => [row.type, row.record_id])).toEqual([['sink.failing', 'flaky']]);

    await client.del(refusedKey); // the broker accepts again
    dispatcher.notify();
    const last = async () => (await conditions()).at(-1)?.seq ?? 0;
    await waitFor(async () => (await conditions()).length === 2 && (await loadEndpoint(mirror.connection, 'flaky'))?.deliveredSeq === (await last()) && (await loadEndpoint(mirror.connection, 'witness'))?.deliveredSeq === (await last()) && (await client.xlen(refusedKey)) === appended.length, 'both sinks past the recovery, the held events sent');
    expect((await conditions()).map((row) => [row.type, row.record_id])).toEqual([['sink.failing', 'flaky'], ['sink.recovered', 'flaky']]);

    // The witness got every event once, each record's in changelog order: the deal events and the two condition events
    // (record `flaky`), failing before recovered. Delivery is ordered per record, not across records: a condition event
    // may pass deal events of other records still waiting for their turn. The recovered sink got every deal event, none about itself.
    const witness = await readRedis(witnessKey);
    const types = (entries: { body: string }[]) => entries.map((entry) => (JSON.parse(entry.body) as { type: string }).type);
    const everyEvent = (await readChanges(mirror.connection, { sinceSeq: 0, limit: 10_000 })).map((event) => ({ id: event.eventId, recordId: event.recordId, seq: event.seq, body: '' }));
    expect(everyEvent).toHaveLength(appended.length + 2);
    expect(witness).toHaveLength(everyEvent.length);
    expect(chains(witness)).toEqual(chains(everyEvent));
    expect(types(witness).filter((type) => type.startsWith('sink.'))).toEqual(['sink.failing', 'sink.recovered']);
    const condition = (type: string) => JSON.parse(witness.find((entry) => (JSON.parse(entry.body) as { type: string }).type === type)!.body) as { data: { record: Record<string, unknown> } };
    const failing = condition('sink.failing');
    expect(failing.data.record).toMatchObject({ sink: 'flaky', sinkKind: 'redis-stream', condition: 'failing', lastError: expect.stringContaining('WRONGTYPE') });
    expect(failing.data.record.consecutiveFailures).toBeGreaterThanOrEqual(5);
    const recovered = condition('sink.recovered');
    expect(recovered.data.record).toMatchObject({ condition: 'ok', failingSince: failing.data.record.failingSince, consecutiveFailures: expect.any(Number) });
    expect(recovered.data.record.consecutiveFailures).toBeGreaterThanOrEqual(8);
    const flaky = await readRedis(refusedKey);
    expect(types(flaky)).toEqual(appended.map(() => 'deal.updated'));
    expect(chains(flaky)).toEqual(chains(appended.map((change) => ({ id: change.eventId, recordId: change.recordId, seq: change.seq, body: '' }))));
  });
});

describe('sink configuration', () => {
  it('refuses a sink key of another kind, an unknown kind and a wrong scheme, naming the field', () => {
    const parse = (sink: Record<string, unknown>) => configSchema.safeParse({ baseUrl: 'http://127.0.0.1:9', tokens: { default: 'tok_default_0000' }, sinks: [sink] });
    const issue = (sink: Record<string, unknown>) => {
      const result = parse(sink);
      return result.success ? null : `${result.error.issues[0]!.path.join('.')}: ${result.error.issues[0]!.message}`;
    };
    expect(issue({ name: 'a', kind: 'nats', url: 'nats://h:4222', exchange: 'x' })).toBe('sinks.0.exchange: is a key of rabbitmq sinks, not of nats');
    expect(issue({ name: 'a', kind: 'kafka', url: 'kafka://h' })).toMatch(/^sinks\.0\.kind: /);
    expect(issue({ name: 'a', kind: 'redis-stream', url: 'nats://h:4222' })).toBe("sinks.0.url: a redis-stream sink's URL starts with redis:// or rediss://, got nats://");
    expect(issue({ name: 'a', kind: 'rabbitmq' })).toMatch(/^sinks\.0\.url: is required/);
    expect(issue({ name: 'a', kind: 'rabbitmq', url: 'amqp://h', maxInFlight: 0 })).toMatch(/^sinks\.0\.maxInFlight: /);
    expect(issue({ name: 'a', kind: 'rabbitmq', url: 'amqp://h' })).toBeNull();
  });

  it('takes the URL from an environment variable or a file, masks its password in config check and log lines', async () => {
    const { loadDeployment, maskConfig, deploymentSecrets } = await import('../../src/config/load.ts');
    const { maskSecrets } = await import('../../src/logging/mask.ts');
    const dir = mkdtempSync(join(tmpdir(), 'bizops-sink-config-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const { writeFileSync } = await import('node:fs');
    const password = 'rabbit-password-0123456789';
    writeFileSync(join(dir, 'rabbit-url'), `amqp://bizops:${password}@broker.internal:5672/prod\n`);
    writeFileSync(
      join(dir, 'config.json'),
      JSON.stringify({
        sinks: [
          { name: 'events', kind: 'rabbitmq', urlFile: join(dir, 'rabbit-url') },
          { name: 'stream', kind: 'redis-stream', urlEnv: 'SINK_REDIS_URL' },
        ],
      }),
    );
    const env = { BIZOPS_CONFIG: join(dir, 'config.json'), BIZOPS_BASE_URL: 'http://127.0.0.1:9', BIZOPS_TOKEN: 'tok_default_0000', SINK_REDIS_URL: `redis://:${password}@cache.internal:6379/2` };
    const [config] = loadDeployment({ env }).connections;
    expect(config!.sinks.map((sink) => sink.url)).toEqual([`amqp://bizops:${password}@broker.internal:5672/prod`, `redis://:${password}@cache.internal:6379/2`]);
    expect(JSON.stringify(maskConfig(config!))).not.toContain(password);
    expect(maskSecrets(`connect ECONNREFUSED amqp://bizops:${password}@broker.internal`, deploymentSecrets([config!]))).not.toContain(password);
    expect(() => loadDeployment({ env: { ...env, SINK_REDIS_URL: '' } })).toThrow(/sinks\.1\.urlEnv.*: the environment variable SINK_REDIS_URL is not set/);
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ sinks: [{ name: 'events', kind: 'rabbitmq', url: 'amqp://h', urlEnv: 'X' }] }));
    expect(() => loadDeployment({ env })).toThrow(/sinks\.0\.urlEnv.*: give one of url, urlEnv and urlFile, not url and urlEnv/);
  });
});

// The broker's restart is the same whichever mirror the core writes to: run once, with the SQLite
// mirror. Last in the file: its RabbitMQ boots while the tests above run.
describeOnSqlite('rabbitmq killed mid-delivery', () => {
  it('loses nothing when its RabbitMQ server is killed (SIGKILL) mid-delivery and restarted: duplicates only with the same message_id, each record in changelog order', async () => {
    const { dir, rabbit: starting } = privateRabbit!;
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const rabbit: OwnBroker = await starting;
    cleanups.push(() => rabbit.kill());
    // A failure names the step it came at and the broker's last log lines.
    let step = 'the start';
    try {
      // A durable queue bound to every key: what the broker confirmed is on its disk, a restart keeps it.
      const setup = async () => {
        const connection = await amqp.connect(rabbit.url);
        const channel = await connection.createChannel();
        await channel.assertExchange('bizops', 'topic', { durable: true });
        await channel.assertQueue('kept', { durable: true });
        await channel.bindQueue('kept', 'bizops', '#');
        return { connection, channel };
      };
      step = 'the first connection';
      await (await setup()).connection.close();
      /** True once the broker answers for `queue` (a passive declare), within 20 s; false when it keeps refusing (not found, crashed). */
      const queueAnswers = async (queue: string): Promise<boolean> => {
        try {
          await waitFor(async () => {
            const connection = await amqp.connect(rabbit.url);
            try {
              return await (await connection.createChannel()).checkQueue(queue);
            } finally {
              await connection.close().catch(() => undefined);
            }
          }, `queue ${queue} after the restart`, 20_000, 250);
          return true;
        } catch {
          return false;
        }
      };
      const dispatcher = await dispatch(sinks([{ name: 'to-rabbit', kind: 'rabbitmq', url: rabbit.url, exchange: 'bizops', maxInFlight: 4, events: ['deal.*'] }]));
      const records = ['deal_a', 'deal_b', 'deal_c', 'deal_d', 'deal_e'];
      const delivered = async () => (await loadEndpoint(mirror.connection, 'to-rabbit'))?.deliveredCount ?? 0;

      const first = await appendChanges(records, 2, 1);
      dispatcher.notify();
      await waitFor(async () => (await delivered()) === first.length, 'the first round');
      // Killed once the second round is being delivered (some of it confirmed), the third appended while it is away.
      const second = await appendChanges(records, 40, 2);
      dispatcher.notify();
      await waitFor(async () => (await delivered()) > first.length, 'the second round under way');
      step = 'the kill';
      await rabbit.kill();
      const third = await appendChanges(records, 2, 3);
      dispatcher.notify();
      await waitFor(async () => ((await loadEndpoint(mirror.connection, 'to-rabbit'))?.consecutiveFailures ?? 0) >= 1, 'a failed publish to the dead server', 30_000);
      const deliveredBeforeRestart = await delivered();
      step = 'the restart';
      await rabbit.start();
      // After a SIGKILL the broker recovers its durable queue from disk before it listens again. On a saturated machine
      // that recovery was seen to fail: every publish after the restart came back unroutable for 100 s. The sink did
      // what it must (failed, held the records' events, retried); the test then restarts the broker once more, as an
      // operator would, and the queue recovers from the same disk.
      if (!(await queueAnswers('kept'))) {
        step = 'the second restart';
        await rabbit.kill();
        await rabbit.start();
      }
      dispatcher.notify();
      const total = first.length + second.length + third.length;
      // Not there yet: the state in the error, which the timeout names (its last error), with the broker's log lines about the queue.
      await waitFor(async () => {
        const count = await delivered();
        const held = (await mirror.connection.all('SELECT seq FROM webhook_held_events')).length;
        if (count >= total && held === 0) return true;
        const endpoint = await loadEndpoint(mirror.connection, 'to-rabbit');
        const [latest] = await latestAttempts(mirror.connection, 'to-rabbit', 1);
        throw new Error(`${count} of ${total} delivered, ${held} held, ${endpoint?.consecutiveFailures ?? '?'} failures in a row, latest attempt: ${latest ? `${latest.outcome} at ${latest.attemptedAt} ${latest.error ?? ''}` : 'none'}`);
      }, 'every event confirmed after the restart', 100_000).catch((error: Error) => {
        throw new Error(`${error.message}; the broker's log on the queue: ${brokerLog(join(dir, 'log'), /kept|crash|error/i).slice(-5).join(' | ') || 'nothing'}`);
      });
      expect(deliveredBeforeRestart).toBeLessThan(total); // the kill came before the end

      // What the queue holds: every event, its body, each record in order; a duplicate is the same message with the same message_id.
      step = 'reading the queue';
      const { connection, channel } = await setup();
      cleanups.push(() => connection.close());
      const received: Received[] = [];
      for (let message = await channel.get('kept', { noAck: true }); message; message = await channel.get('kept', { noAck: true })) {
        const body = message.content.toString();
        const data = (JSON.parse(body) as { data: { record_id: string; seq: number } }).data;
        expect(message.properties.deliveryMode).toBe(2);
        received.push({ id: String(message.properties.messageId), recordId: data.record_id, seq: data.seq, body });
      }
      await expectDelivered(received, 0);
    } catch (error) {
      throw new Error(`${(error as Error).message} (at ${step}); the broker's log: ${brokerLog(join(dir, 'log')).slice(-15).join(' | ') || 'nothing'}`, { cause: error });
    }
  }, 240_000); // two or three starts of an Erlang VM, a 20 s wait for the queue and a 100 s wait of its own: 60 s was seen exceeded by CI at load 5, with a soak beside, and on a machine slow at starting processes
});
