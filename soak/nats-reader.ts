/**
 * A reader of the NATS JetStream sink the way docs/sinks.md asks a consumer to be written: it reads
 * the sink's JetStream stream in stream order from where it stopped (each message by its stream
 * sequence), deduplicates on the `Nats-Msg-Id` header (the event id: a retry after a longer outage
 * than the duplicate window stores a second message), and keeps each record's events as a chained
 * checksum, like the webhook receivers and the Redis Streams reader. A second message with an id
 * already read must carry the same body (a duplicate is the same event again). The server may be
 * away (a fault): a read that fails is tried again on the next round, from the same sequence.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { RecordChains } from './chain.ts';

/** How long one request to the server may take (ms) before the round gives up. */
const REQUEST_MS = 2000;

/** Reads one JetStream stream, a message of the sink's per event. */
export class NatsStreamReader {
  readonly name: string;
  readonly stream: string;
  readonly chains = new RecordChains();
  /** The body first read for each event id (deduplication, and the duplicates' check). */
  readonly seen = new Map<string, string>();
  /** Messages read, and messages that repeated an event id already read. */
  readonly counts = { messages: 0, duplicates: 0 };
  /** Lines naming what no sink may publish (a message without its id, a duplicate id with another body). */
  readonly problems: string[] = [];
  readonly #url: string;
  #connection: Promise<{ connection: NatsConnection; manager: JetStreamManager }> | undefined;
  /** The next stream sequence to read (JetStream's sequences start at 1). */
  #next = 1;
  #reading: Promise<void> | undefined;

  /**
   * @param name the sink's name in the configuration (`jet`)
   * @param url the NATS server (`nats://127.0.0.1:PORT`)
   * @param stream the JetStream stream the sink publishes to (its `stream` setting)
   */
  constructor(name: string, url: string, stream: string) {
    this.name = name;
    this.stream = stream;
    this.#url = url;
  }

  /** Reads every message stored since the last read; never throws (the server away, or the stream not created yet: nothing read). */
  async read(): Promise<void> {
    this.#reading ??= this.#read().finally(() => {
      this.#reading = undefined;
    });
    return this.#reading;
  }

  #open(): Promise<{ connection: NatsConnection; manager: JetStreamManager }> {
    this.#connection ??= (async () => {
      const connection = await connect({ servers: new URL(this.#url).host, maxReconnectAttempts: -1, reconnectTimeWait: 250, timeout: REQUEST_MS, name: `soak reader ${this.name}` });
      return { connection, manager: await jetstreamManager(connection, { timeout: REQUEST_MS }) };
    })();
    this.#connection.catch(() => {
      this.#connection = undefined;
    });
    return this.#connection;
  }

  async #read(): Promise<void> {
    try {
      const { manager } = await this.#open();
      const last = (await manager.streams.info(this.stream)).state.last_seq;
      for (; this.#next <= last; this.#next += 1) {
        const message = await manager.streams.getMessage(this.stream, { seq: this.#next });
        if (message) this.#accept(message.seq, message.header?.get('Nats-Msg-Id') ?? '', new TextDecoder().decode(message.data));
      }
    } catch {
      // the server is away or restarting, or the sink has not created its stream yet: the next round reads again from the same sequence
    }
  }

  #accept(seq: number, id: string, body: string): void {
    this.counts.messages += 1;
    if (!id) {
      this.problems.push(`sink ${this.name}: message ${seq} of stream ${this.stream} has no Nats-Msg-Id header`);
      return;
    }
    const first = this.seen.get(id);
    if (first !== undefined) {
      this.counts.duplicates += 1;
      if (first !== body) this.problems.push(`sink ${this.name}: message ${seq} of stream ${this.stream} repeats event id ${id} with another body`);
      return;
    }
    this.seen.set(id, body);
    const event = JSON.parse(body) as { type: string; data: { seq?: number; stream?: string; record_id?: string; record?: unknown } };
    const data = event.data ?? {};
    this.chains.append({ eventId: id, type: event.type, seq: Number(data.seq), stream: String(data.stream), recordId: String(data.record_id), record: data.record ?? null });
  }

  /** Deletes the stream (best effort: the next schedule publishes to a stream of its own) and closes the connection. */
  async close(): Promise<void> {
    const opened = this.#connection;
    this.#connection = undefined;
    if (!opened) return;
    try {
      const { connection, manager } = await opened;
      await manager.streams.delete(this.stream).catch(() => undefined);
      await connection.close();
    } catch {
      // never opened
    }
  }
}
