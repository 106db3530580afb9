/**
 * The `redis-stream` kind of sink (docs/sinks.md "Redis Streams"): each event is one `XADD` to its
 * stream's key (`<keyPrefix><stream>`, or the one `key`), with `MAXLEN ~ maxLen` when set, fields
 * `id` (the event id), `type`, `seq`, `record_id` and `data` (the webhook's JSON body). It counts as
 * delivered once the XADD returns the entry's id; the sink's cursor moves only then. Redis keeps no
 * message ids: a retry after a lost answer adds a second entry with the same `id` field, which
 * readers deduplicate on. ioredis reconnects on its own; commands are pipelined automatically, and
 * the events the delivery core sends at once (each of a different record) go in one pipeline: one
 * round trip, each XADD's own answer its event's outcome, under one acknowledgement timer for the
 * whole pipeline (`ackTimeoutSeconds`), not one per XADD. Closing the sender waits up to
 * `ackTimeoutSeconds` (`CLOSE_WAIT_MS` at most) for QUIT's answer, then ends the connection without it.
 */
import { Redis } from 'ioredis';
import type { SinkConfig } from '../../config/schema.ts';
import { maskSecrets } from '../../logging/mask.ts';
import { urlCredentials } from '../../logging/mask-url.ts';
import type { ChangeEvent } from '../changelog-reader.ts';
import { CLOSE_WAIT_MS, describeError, elapsedMs, failedWithoutAnswer, resultWithin, type DeliveryOutcome, type SinkSender } from '../delivery/sink-kind.ts';
import { sinkMessage } from './sink-message.ts';

/** The key prefix unless `keyPrefix` (or `key`) says otherwise: one stream key per stream, `bizops:changes:deals`. */
export const DEFAULT_KEY_PREFIX = 'bizops:changes:';

/**
 * The sender of one `redis-stream` sink.
 * @param sink a validated sink of kind `redis-stream` (its `url` resolved)
 */
export function redisStreamSender(sink: SinkConfig): SinkSender {
  const secrets = urlCredentials(sink.url!);
  const timeoutMs = Math.round(sink.ackTimeoutSeconds * 1000);
  let client: Redis | null = null;
  const redis = (): Redis => {
    if (client) return client;
    client = new Redis(sink.url!, {
      lazyConnect: false,
      enableAutoPipelining: true,
      // No `commandTimeout`: it arms a timer per command; `acknowledged` arms one per send or pipeline.
      connectTimeout: timeoutMs,
      // A command fails at once while the server is away (the core retries it): nothing queues behind a dead link.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: (times) => Math.min(times * 100, 2000),
      connectionName: `bizops-sync-sink-${sink.name}`,
    });
    client.on('error', () => undefined); // each command reports its own failure (one listener per client)
    return client;
  };
  const keyOf = (stream: string) => sink.key ?? `${sink.keyPrefix ?? DEFAULT_KEY_PREFIX}${stream}`;
  /** The wait for the connection, shared by every event sent meanwhile (one pair of listeners, whatever maxInFlight). */
  let connecting: Promise<Redis> | null = null;
  /**
   * The client once it is connected: an event sent while it connects waits for it (up to the
   * acknowledgement time limit) instead of failing (commands are not queued offline: a command sent
   * while the server is away fails at once, and the core retries it).
   */
  const ready = (): Promise<Redis> => {
    const current = redis();
    if (current.status === 'ready') return Promise.resolve(current);
    connecting ??= new Promise<Redis>((resolve, reject) => {
      const done = (error?: Error) => {
        clearTimeout(timer);
        current.off('ready', onReady);
        current.off('error', onError);
        connecting = null;
        if (error) reject(error);
        else resolve(current);
      };
      const timer = setTimeout(() => done(new Error(`not connected within ${timeoutMs} ms (${current.status})`)), timeoutMs);
      const onReady = () => done();
      const onError = (error: Error) => done(error);
      current.once('ready', onReady);
      current.once('error', onError);
    });
    return connecting;
  };

  const maxLen = sink.maxLen === undefined ? null : String(sink.maxLen);
  /** The stream keys by stream name (a handful of streams: one string per stream, not one per event). */
  const keys = new Map<string, string>();
  const keyOfStream = (stream: string): string => {
    let key = keys.get(stream);
    if (key === undefined) keys.set(stream, (key = keyOf(stream)));
    return key;
  };
  /**
   * Queues the event's XADD on `target` (the client or a pipeline): the key, the trim when set, `*`,
   * the fields `id`, `type`, `seq`, `record_id`, `data`; the arguments passed as they are, without
   * an array of them built per event.
   */
  const xadd = <T>(target: { xadd(...args: string[]): T }, key: string, event: ChangeEvent): T => {
    const message = sinkMessage(event);
    const seq = String(message.seq);
    return maxLen === null
      ? target.xadd(key, '*', 'id', message.id, 'type', message.type, 'seq', seq, 'record_id', message.recordId, 'data', message.body)
      : target.xadd(key, 'MAXLEN', '~', maxLen, '*', 'id', message.id, 'type', message.type, 'seq', seq, 'record_id', message.recordId, 'data', message.body);
  };
  /**
   * `answer`, or a rejection when it did not come within the acknowledgement time limit (the XADDs
   * may still be added: a retry is then a duplicate with the same `id`).
   */
  const acknowledged = <T>(answer: Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`not acknowledged within ${timeoutMs} ms`)), timeoutMs);
      answer.then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(error as Error);
        },
      );
    });
  const failure = (key: string, error: unknown, started: number, signal: AbortSignal) => failedWithoutAnswer(maskSecrets(`Redis XADD ${key}: ${describeError(error)}`, secrets), started, signal.aborted);

  return {
    async send(event: ChangeEvent, signal: AbortSignal): Promise<DeliveryOutcome> {
      const started = performance.now();
      if (signal.aborted) return failedWithoutAnswer('aborted: the dispatcher is stopping', started, true);
      const key = keyOfStream(event.stream);
      try {
        const entry = await acknowledged(xadd(await ready(), key, event));
        return { ok: true, status: 0, durationMs: elapsedMs(started), response: `${key} ${entry ?? ''}` };
      } catch (error) {
        return failure(key, error, started, signal);
      }
    },
    async sendBatch(events: readonly ChangeEvent[], signal: AbortSignal): Promise<DeliveryOutcome[]> {
      const started = performance.now();
      if (signal.aborted) return events.map(() => failedWithoutAnswer('aborted: the dispatcher is stopping', started, true));
      const eventKeys = events.map((event) => keyOfStream(event.stream));
      let answers: [Error | null, unknown][];
      try {
        const pipeline = (await ready()).pipeline();
        events.forEach((event, index) => xadd(pipeline, eventKeys[index]!, event));
        answers = (await acknowledged(pipeline.exec())) ?? [];
      } catch (error) {
        return eventKeys.map((key) => failure(key, error, started, signal));
      }
      const durationMs = elapsedMs(started);
      return eventKeys.map((key, index) => {
        const [error, entry] = answers[index] ?? [new Error('no answer in the pipeline'), null];
        return error ? failure(key, error, started, signal) : { ok: true, status: 0, durationMs, response: `${key} ${typeof entry === 'string' ? entry : ''}` };
      });
    },
    async close() {
      const current = client;
      client = null;
      if (!current) return;
      // QUIT is answered after the commands sent before it, and never by a server that stopped
      // answering: without its answer within the time limit (CLOSE_WAIT_MS at most) the connection is ended without it
      // (ioredis ends the socket, and destroys it 2 s later, its disconnectTimeout, when the server
      // has not closed its side).
      // QUIT fails at once while the client is not connected (no offline queue).
      const quitted = await resultWithin(
        current.quit().then(
          () => true,
          () => false,
        ),
        Math.min(timeoutMs, CLOSE_WAIT_MS),
        false,
      );
      if (!quitted) current.disconnect();
    },
  };
}
