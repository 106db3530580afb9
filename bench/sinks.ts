/**
 * Benchmark: sinks (docs/sinks.md). A backlog of 100,000 change events (20,000 records, 5 events
 * each, interleaved as a sync appends them) in a real SQLite mirror, delivered through the real
 * delivery core to each broker: NATS JetStream (publish, PubAck), Redis Streams (XADD) and RabbitMQ
 * (publisher confirms), the brokers `.ci/run` starts (NATS_URL, REDIS_URL, RABBITMQ_URL point
 * elsewhere). Events per second from the dispatcher's start to the sink's cursor at the last seq
 * (every attempt and cursor move written to the mirror), against a plain publisher loop written
 * with the same client: the same rows read from the changelog in pages, the same bodies, the same
 * number in flight (the sink's default `maxInFlight`), each publish awaited, nothing written back;
 * for Redis the same XADDs in explicit pipelines of `maxInFlight`, the lightest plain loop measured.
 * Goal: 5,000 events/s or more to NATS and to Redis, at least 0.8 of the plain loop.
 *
 * Redis Streams runs `SINKS_BENCH_ROUNDS` (3) rounds of both, alternating which goes first.
 *
 * `npm run bench -- sinks`; `SINKS_BENCH_EVENTS=20000` for a shorter run, `SINKS_BENCH_BROKERS=redis`
 * (a comma-separated list of `nats`, `redis`, `rabbitmq`) for some brokers only.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import amqp from 'amqplib';
import { connect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Redis } from 'ioredis';
import { configSchema, type SinkConfig } from '../src/config/schema.ts';
import { openMirror } from '../src/mirror/database.ts';
import { MirrorStore, type ChangeRowInput } from '../src/mirror/mirror-store.ts';
import { sqliteConnection } from '../src/mirror/sql/sqlite.ts';
import { iterateChanges } from '../src/notify/changelog-reader.ts';
import { DeliveryDispatcher } from '../src/notify/delivery/delivery-dispatcher.ts';
import { loadEndpoint, registerEndpoint } from '../src/notify/delivery/endpoint-store.ts';
import { sinkMessage } from '../src/notify/sinks/sink-message.ts';
import { sinkTargets } from '../src/notify/sinks/index.ts';
import { machineLoad, spread } from './runs.ts';

const EVENTS = Number(process.env.SINKS_BENCH_EVENTS ?? 100_000);
const PER_RECORD = 5;
const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const RABBITMQ_URL = process.env.RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
/** Rounds of core and plain loop for Redis Streams (`SINKS_BENCH_ROUNDS`). */
const ROUNDS = Number(process.env.SINKS_BENCH_ROUNDS ?? 3);
const BROKERS = new Set((process.env.SINKS_BENCH_BROKERS ?? 'nats,redis,rabbitmq').split(',').map((name) => name.trim()));

/** A mirror holding the backlog, the sink registered before it (its cursor at 0). */
async function backlog(dir: string, sinkName: string) {
  const db = openMirror(join(dir, `${sinkName}.db`));
  const connection = sqliteConnection(db);
  await registerEndpoint(connection, sinkName, 'bench://', new Date(), 'bench');
  const store = new MirrorStore(connection);
  const records = EVENTS / PER_RECORD;
  for (let round = 0; round < PER_RECORD; round += 1) {
    for (let start = 0; start < records; start += 5000) {
      const changes: ChangeRowInput[] = [];
      for (let n = start; n < Math.min(records, start + 5000); n += 1) {
        const id = `deal_${n}`;
        changes.push({ type: 'deal.updated', stream: 'deals', recordId: id, data: { record: { id, title: `Deal ${n}`, value: n * 100, status: 'OPEN', round }, changes: { round: { old: round - 1, new: round } } } });
      }
      await store.transaction((tx) => tx.appendChanges(changes));
    }
  }
  return connection;
}

/**
 * CPU time of this process per event (user + system, µs) in the last `throughCore` or `plainLoop`:
 * what the core adds on top of the plain loop, less swayed than events/s by other work on a shared
 * machine (the broker's own CPU is not in it).
 */
let lastCpuUsPerEvent = 0;

/** Events per second through the delivery core to `sink`. */
async function throughCore(dir: string, sink: SinkConfig): Promise<number> {
  const connection = await backlog(dir, sink.name);
  try {
    const dispatcher = new DeliveryDispatcher({ connection, targets: await sinkTargets([sink]), pollMs: 50 });
    const started = performance.now();
    const cpu = process.cpuUsage();
    await dispatcher.start();
    for (;;) {
      if ((await loadEndpoint(connection, sink.name))?.deliveredSeq === EVENTS) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const seconds = (performance.now() - started) / 1000;
    lastCpuUsPerEvent = cpuPerEvent(cpu);
    await dispatcher.stop();
    return Math.round(EVENTS / seconds);
  } finally {
    await connection.close();
  }
}

/**
 * Events per second of a plain loop: the changelog read in pages, each body published, at most
 * `window` awaited at once (a counter and one waiter: a new publish leaves as soon as one of the
 * window is answered, with no per-event search of the ones in flight).
 * @throws the first publish's error
 */
async function plainLoop(dir: string, name: string, window: number, publish: (message: ReturnType<typeof sinkMessage>) => Promise<unknown>): Promise<number> {
  const connection = await backlog(dir, `${name}-plain`);
  try {
    const started = performance.now();
    const cpu = process.cpuUsage();
    let inFlight = 0;
    let failure: unknown = null;
    let waiter: (() => void) | null = null;
    const answered = () => {
      inFlight -= 1;
      const wake = waiter;
      waiter = null;
      wake?.();
    };
    const failed = (error: unknown) => {
      failure ??= error;
      answered();
    };
    const room = (limit: number) => (inFlight <= limit ? Promise.resolve() : new Promise<void>((resolve) => (waiter = resolve)));
    for await (const event of iterateChanges(connection, { batchSize: 1000 })) {
      inFlight += 1;
      publish(sinkMessage(event)).then(answered, failed);
      while (inFlight >= window) await room(window - 1);
    }
    while (inFlight > 0) await room(0);
    if (failure !== null) throw failure;
    lastCpuUsPerEvent = cpuPerEvent(cpu);
    return Math.round(EVENTS / ((performance.now() - started) / 1000));
  } finally {
    await connection.close();
  }
}

/**
 * Events per second of a plain Redis loop: the changelog read in pages, each body one XADD (the
 * sink's fields, no `MAXLEN`) in explicit pipelines of `window` (the sink's `maxInFlight`, the most
 * the core has in flight), one pipeline awaited at a time. Faster and lighter per event than
 * `plainLoop` with auto-pipelining, so it is the baseline.
 * @throws the first XADD's error
 */
async function plainPipelines(dir: string, name: string, window: number, redis: Redis, key: string): Promise<number> {
  const connection = await backlog(dir, `${name}-plain`);
  try {
    const started = performance.now();
    const cpu = process.cpuUsage();
    const flush = async (pipeline: ReturnType<Redis['pipeline']>) => {
      for (const [error] of (await pipeline.exec()) ?? []) if (error) throw error;
    };
    let pipeline = redis.pipeline();
    for await (const event of iterateChanges(connection, { batchSize: 1000 })) {
      const message = sinkMessage(event);
      pipeline.xadd(key, '*', 'id', message.id, 'type', message.type, 'seq', String(message.seq), 'record_id', message.recordId, 'data', message.body);
      if (pipeline.length >= window) {
        await flush(pipeline);
        pipeline = redis.pipeline();
      }
    }
    if (pipeline.length > 0) await flush(pipeline);
    lastCpuUsPerEvent = cpuPerEvent(cpu);
    return Math.round(EVENTS / ((performance.now() - started) / 1000));
  } finally {
    await connection.close();
  }
}

/** µs of this process's CPU per event since `since` (a `process.cpuUsage()`). */
function cpuPerEvent(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return Math.round(((used.user + used.system) / EVENTS) * 10) / 10;
}

function sinkConfig(entry: Record<string, unknown>): SinkConfig {
  return configSchema.parse({ baseUrl: 'http://127.0.0.1:9', tokens: { default: 'tok_default_0000' }, sinks: [entry] }).sinks[0]!;
}

export async function run(): Promise<Record<string, number | string>> {
  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-sinks-'));
  const figures: Record<string, number | string> = { 'backlog (events)': EVENTS, 'records (events each)': `${EVENTS / PER_RECORD} (${PER_RECORD})` };
  const tag = `bench${process.pid}`;
  try {
    if (BROKERS.has('nats')) await natsFigures(dir, tag, figures);
    if (BROKERS.has('redis')) await redisFigures(dir, tag, figures);
    if (BROKERS.has('rabbitmq')) await rabbitFigures(dir, tag, figures);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return figures;
}

/** NATS JetStream: a stream of the benchmark's own. */
async function natsFigures(dir: string, tag: string, figures: Record<string, number | string>): Promise<void> {
  const nats = await connect({ servers: new URL(NATS_URL).host });
  const manager = await jetstreamManager(nats);
  const stream = tag.toUpperCase();
  await manager.streams.add({ name: stream, subjects: [`${tag}.>`], duplicate_window: 120_000_000_000 });
  const natsSink = sinkConfig({ name: 'nats', kind: 'nats', url: NATS_URL, subjectPrefix: tag, stream });
  const core = await throughCore(dir, natsSink);
  await manager.streams.purge(stream);
  const js = jetstream(nats);
  const plain = await plainLoop(dir, 'nats', natsSink.maxInFlight, (message) => js.publish(`${tag}.deals.${message.recordId}`, message.body, { msgID: message.id }));
  figures['NATS JetStream: events/s'] = core;
  figures['NATS JetStream: plain publisher loop, events/s'] = plain;
  figures['NATS JetStream: ratio to the plain loop (goal >= 0.8)'] = (core / plain).toFixed(2);
  await manager.streams.delete(stream);
  await nats.close();

}

/**
 * Redis Streams: a key of the benchmark's own. `ROUNDS` rounds, each the core and the plain loop
 * one after the other (the order alternating from round to round, so a burst of load on a shared
 * machine falls on both alike); each figure min / median / max over the rounds, the ratio taken
 * within each round.
 */
async function redisFigures(dir: string, tag: string, figures: Record<string, number | string>): Promise<void> {
  const key = `bizops-bench:${tag}:`;
  const redisSink = sinkConfig({ name: 'redis', kind: 'redis-stream', url: REDIS_URL, keyPrefix: key });
  const redis = new Redis(REDIS_URL);
  const core: number[] = [];
  const plain: number[] = [];
  const coreCpu: number[] = [];
  const plainCpu: number[] = [];
  const ratios: number[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    const roundDir = join(dir, `redis-${round}`);
    const runCore = async () => {
      core.push(await throughCore(roundDir, redisSink));
      coreCpu.push(lastCpuUsPerEvent);
      await redis.del(`${key}deals`);
    };
    const runPlain = async () => {
      plain.push(await plainPipelines(roundDir, 'redis', redisSink.maxInFlight, redis, `${key}deals`));
      plainCpu.push(lastCpuUsPerEvent);
      await redis.del(`${key}deals`);
    };
    mkdirSync(roundDir);
    await redis.del(`${key}deals`);
    if (round % 2 === 0) {
      await runCore();
      await runPlain();
    } else {
      await runPlain();
      await runCore();
    }
    ratios.push(core.at(-1)! / plain.at(-1)!);
    rmSync(roundDir, { recursive: true, force: true });
  }
  figures['Redis Streams: rounds'] = ROUNDS;
  figures['Redis Streams: events/s (min / median / max)'] = spread(core, 0);
  figures['Redis Streams: plain publisher loop, events/s (min / median / max)'] = spread(plain, 0);
  figures['Redis Streams: ratio to the plain loop, min / median / max (goal >= 0.8)'] = spread(ratios, 2);
  figures['Redis Streams: CPU µs/event, core (min / median / max)'] = spread(coreCpu, 1);
  figures['Redis Streams: CPU µs/event, plain loop (min / median / max)'] = spread(plainCpu, 1);
  figures['Redis Streams: machine'] = machineLoad();
  redis.disconnect();
}

/** RabbitMQ with publisher confirms: an exchange of the benchmark's own, one queue bound to it. */
async function rabbitFigures(dir: string, tag: string, figures: Record<string, number | string>): Promise<void> {
  const rabbit = await amqp.connect(RABBITMQ_URL);
  const setup = await rabbit.createChannel();
  const exchange = `${tag}.x`;
  await setup.assertExchange(exchange, 'topic', { durable: true });
  const { queue } = await setup.assertQueue(`${tag}.q`, { durable: true });
  await setup.bindQueue(queue, exchange, '#');
  const rabbitSink = sinkConfig({ name: 'rabbit', kind: 'rabbitmq', url: RABBITMQ_URL, exchange });
  const rabbitCore = await throughCore(dir, rabbitSink);
  await setup.purgeQueue(queue);
  const confirm = await rabbit.createConfirmChannel();
  const rabbitPlain = await plainLoop(dir, 'rabbit', rabbitSink.maxInFlight, (message) =>
    new Promise<void>((resolve, reject) =>
      confirm.publish(exchange, `deals.${message.type}`, Buffer.from(message.body), { persistent: true, mandatory: true, messageId: message.id, contentType: 'application/json', type: message.type }, (error: unknown) => (error ? reject(error as Error) : resolve())),
    ),
  );
  figures['RabbitMQ (confirms): events/s'] = rabbitCore;
  figures['RabbitMQ (confirms): plain publisher loop, events/s'] = rabbitPlain;
  figures['RabbitMQ (confirms): ratio to the plain loop'] = (rabbitCore / rabbitPlain).toFixed(2);
  await setup.deleteQueue(queue);
  await setup.deleteExchange(exchange);
  await rabbit.close();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(JSON.stringify(await run(), null, 2));
