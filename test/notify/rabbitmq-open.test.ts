/**
 * The RabbitMQ sink's opening of its connection (docs/sinks.md "What each broker guarantees"):
 * against a real RabbitMQ behind a TCP proxy that lets the AMQP handshake through but keeps back the
 * client's channel.open (its first frame on a channel other than 0) and every byte after it. The
 * opening is given up after `ackTimeoutSeconds` (the half-open connection's socket closed by the
 * sink), a send waiting for it returns at once when its signal aborts, closing the sender gives the
 * opening up, and the same sender delivers once the proxy passes everything; closing the sender
 * after the broker stopped answering (the proxy dropping what the sink sends) ends its connection
 * after `ackTimeoutSeconds`. Nothing waits on time.
 */
import amqp from 'amqplib';
import { afterEach, describe, expect, it } from 'vitest';
import { configSchema, type SinkConfig } from '../../src/config/schema.ts';
import type { ChangeEvent } from '../../src/notify/changelog-reader.ts';
import { rabbitmqSender } from '../../src/notify/sinks/rabbitmq-sink.ts';
import { waitFor } from '../helpers.ts';
import { RABBITMQ_URL, startProxy, uniqueName } from './brokers.ts';

/** A TCP proxy in front of RabbitMQ (`startProxy`); while `holding`, each new connection's channel.open and what follows are kept back. */
interface ChannelOpenProxy {
  port: number;
  /** Read at each new connection: true keeps its first frame on a channel other than 0, and every byte after it, from the broker; false passes everything. */
  holding: boolean;
  /** Read at every chunk: true drops every byte the clients send from now on (a broker that stopped answering). */
  silenced: boolean;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Client sockets the client (the sink) closed while their broker connection was still open. */
  readonly closedByClient: number;
  /** Frames kept back (one per held connection: its channel.open). */
  heldFrames: number;
  close(): Promise<void>;
}

const AMQP_HEADER_BYTES = 8; // "AMQP" 0 0 9 1
const FRAME_HEADER_BYTES = 7; // type (1), channel (2, big-endian), size (4, big-endian)

async function startChannelOpenProxy(targetPort: number): Promise<ChannelOpenProxy> {
  // One connection's filter of the client's bytes: the protocol header and each whole frame on channel 0 pass; from the first frame on another channel nothing does.
  const channelZeroOnly = (): ((data: Buffer) => Buffer) => {
    const holding = state.holding;
    let pending = Buffer.alloc(0);
    let headerPassed = false;
    let held = false;
    return (data) => {
      if (state.silenced || held) return Buffer.alloc(0);
      if (!holding) return data;
      pending = Buffer.concat([pending, data]);
      let passed = 0;
      if (!headerPassed) {
        if (pending.length < AMQP_HEADER_BYTES) return Buffer.alloc(0);
        headerPassed = true;
        passed = AMQP_HEADER_BYTES;
      }
      while (pending.length - passed >= FRAME_HEADER_BYTES) {
        if (pending.readUInt16BE(passed + 1) !== 0) {
          held = true;
          state.heldFrames += 1;
          break;
        }
        const frameBytes = FRAME_HEADER_BYTES + pending.readUInt32BE(passed + 3) + 1; // + the 0xCE end byte
        if (pending.length - passed < frameBytes) break;
        passed += frameBytes;
      }
      const out = pending.subarray(0, passed);
      pending = pending.subarray(passed);
      return out;
    };
  };
  const proxy = await startProxy(targetPort, { clientFilter: channelZeroOnly });
  const state: ChannelOpenProxy = {
    port: proxy.port,
    holding: true,
    silenced: false,
    get accepted() {
      return proxy.connections;
    },
    get closedByClient() {
      return proxy.closedByClient;
    },
    heldFrames: 0,
    close: () => proxy.close(),
  };
  return state;
}

const event: ChangeEvent = {
  seq: 7,
  eventId: 'evt_rabbit_open_1',
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

/** A proxy in front of RABBITMQ_URL and a `rabbitmq` sink through it (exchange of the test's own, declared), `ackTimeoutSeconds` as given. */
async function sinkThroughProxy(ackTimeoutSeconds: number): Promise<{ proxy: ChannelOpenProxy; sink: SinkConfig }> {
  const target = new URL(RABBITMQ_URL);
  const proxy = await startChannelOpenProxy(Number(target.port || 5672));
  cleanups.push(() => proxy.close());
  const url = new URL(RABBITMQ_URL);
  url.port = String(proxy.port);
  const exchange = uniqueName('open');
  const [sink] = configSchema.parse({
    baseUrl: 'http://127.0.0.1:9',
    tokens: { default: 'tok_default_0000' },
    sinks: [{ name: 'to-rabbit', kind: 'rabbitmq', url: url.toString(), exchange, declareExchange: true, ackTimeoutSeconds }],
  }).sinks;
  return { proxy, sink: sink! };
}

describe('rabbitmq sink: opening its connection', () => {
  it('gives the opening up after ackTimeoutSeconds when channel.open gets no answer, closes that connection, and delivers once the broker answers', async () => {
    const { proxy, sink } = await sinkThroughProxy(1);
    // A queue bound to the sink's exchange, so the publish after recovery is routed (not returned).
    const connection = await amqp.connect(RABBITMQ_URL);
    cleanups.push(() => connection.close());
    const channel = await connection.createChannel();
    await channel.assertExchange(sink.exchange!, 'topic', { durable: true });
    cleanups.push(() => channel.deleteExchange(sink.exchange!));
    const { queue } = await channel.assertQueue('', { exclusive: true });
    await channel.bindQueue(queue, sink.exchange!, '#');

    const sender = rabbitmqSender(sink);
    cleanups.push(() => sender.close());
    const failed = await sender.send(event, new AbortController().signal);
    expect(failed).toMatchObject({ ok: false, aborted: false, status: null });
    expect(failed.ok ? '' : failed.error).toContain('could not open a confirm channel within 1000 ms');
    expect(proxy.heldFrames).toBe(1); // it was channel.open that got no answer
    await waitFor(() => proxy.closedByClient === 1, 'the sink to close its half-open connection');

    proxy.holding = false;
    const delivered = await sender.send(event, new AbortController().signal);
    expect(delivered).toMatchObject({ ok: true, response: 'confirmed' });
    expect(proxy.accepted).toBe(2);
    const message = await waitFor(() => channel.get(queue, { noAck: true }), 'the message in the queue');
    expect(message && message.properties.messageId).toBe(event.eventId);
  }, 30_000);

  it('returns the aborted outcome when the signal aborts while the connection is opening, and closing the sender closes that connection', async () => {
    // A time limit past the test's hang guard: only the abort, then the close, can end the waits.
    const { proxy, sink } = await sinkThroughProxy(120);
    const sender = rabbitmqSender(sink);
    const controller = new AbortController();
    const sending = sender.send(event, controller.signal);
    await waitFor(() => proxy.heldFrames === 1, 'the sink to wait for its channel.open');
    controller.abort();
    expect(await sending).toMatchObject({ ok: false, aborted: true, error: 'aborted: the dispatcher is stopping' });
    expect(proxy.closedByClient).toBe(0); // the opening goes on: the next send may use it

    await sender.close();
    await waitFor(() => proxy.closedByClient === 1, 'the closed sender to close its half-open connection');
  }, 30_000);

  it('closing the sender after the broker stopped answering ends its connection after ackTimeoutSeconds', async () => {
    const { proxy, sink } = await sinkThroughProxy(1);
    proxy.holding = false;
    const sender = rabbitmqSender(sink);
    // Confirmed or returned unroutable (no queue is bound): either way the connection and its channel are open.
    await sender.send(event, new AbortController().signal);
    expect(proxy.accepted).toBe(1);
    expect(proxy.closedByClient).toBe(0);

    proxy.silenced = true; // connection.close gets no close-ok
    await sender.close();
    await waitFor(() => proxy.closedByClient === 1, 'the sender to end its connection');
  }, 30_000);
});
