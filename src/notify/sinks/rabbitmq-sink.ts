/**
 * The `rabbitmq` kind of sink (docs/sinks.md "RabbitMQ"): each event is an AMQP 0-9-1 publish on a
 * confirm channel to `exchange` with routing key `<stream>.<event type>`, persistent
 * (`delivery_mode` 2), `message_id` = the event id, `content_type` application/json, `type` the event
 * type, `mandatory`; it counts as delivered once the broker confirms it (basic.ack). A nack, a
 * message the broker returned as unroutable (no queue bound for its key: it would be lost), a closed
 * channel or no confirm within `ackTimeoutSeconds` is a failure, retried with the same `message_id`.
 * The delivery core sends one event per record at a time, so a record's messages reach a queue in
 * changelog order. The connection (amqplib) is opened at the first event and again after it broke;
 * its opening (connect, confirm channel, the exchange's check or declare) is given up after
 * `ackTimeoutSeconds` too, and a send stops waiting for it when its signal aborts.
 */
import type { Duplex } from 'node:stream';
import amqp from 'amqplib';
import type { SinkConfig } from '../../config/schema.ts';
import { maskSecrets } from '../../logging/mask.ts';
import { urlCredentials } from '../../logging/mask-url.ts';
import type { ChangeEvent } from '../changelog-reader.ts';
import { CLOSE_WAIT_MS, describeError, elapsedMs, failedWithoutAnswer, resultWithin, untilAborted, type DeliveryOutcome, type SinkSender } from '../delivery/sink-kind.ts';
import { sinkMessage, subjectToken } from './sink-message.ts';

/** The exchange unless `exchange` says otherwise. */
export const DEFAULT_EXCHANGE = 'bizops';

/** An open connection and its confirm channel, with the message ids the broker returned as unroutable. */
interface Link {
  connection: amqp.ChannelModel;
  channel: amqp.ConfirmChannel;
  returned: Set<string>;
  broken: Error | null;
}

/**
 * The sender of one `rabbitmq` sink.
 * @param sink a validated sink of kind `rabbitmq` (its `url` resolved)
 */
export function rabbitmqSender(sink: SinkConfig): SinkSender {
  const secrets = urlCredentials(sink.url!);
  const exchange = sink.exchange ?? DEFAULT_EXCHANGE;
  const timeoutMs = Math.round(sink.ackTimeoutSeconds * 1000);
  let opening: Promise<Link> | null = null;
  /** Gives up the opening under way (its connection destroyed, `opening` rejected with `error`); null when none is. */
  let abandonOpening: ((error: Error) => void) | null = null;

  const open = () => {
    opening ??= (async () => {
      // The whole opening (TCP connect, AMQP handshake, channel.open, confirm.select, the exchange's
      // check or declare) is given up after timeoutMs, or when the sender is closed: a broker or proxy
      // that stops answering part-way would otherwise leave every send, and the stop, waiting for ever.
      let connection: amqp.ChannelModel | undefined;
      let expired: Error | undefined;
      let abandon: (error: Error) => void = () => undefined;
      const deadline = new Promise<never>((_resolve, reject) => {
        abandon = (error: Error) => {
          expired ??= error;
          if (connection) destroyConnection(connection, expired);
          reject(expired);
        };
      });
      abandonOpening = abandon;
      const timer = setTimeout(() => abandon(new Error(`could not open a confirm channel within ${timeoutMs} ms`)), timeoutMs);
      const opened = (async () => {
        connection = await amqp.connect(sink.url!, { timeout: timeoutMs, clientProperties: { connection_name: `bizops-sync sink ${sink.name}` } });
        const link: Link = { connection, channel: undefined as unknown as amqp.ConfirmChannel, returned: new Set(), broken: null };
        const fail = (error: Error) => {
          link.broken ??= error;
          if (opening === current) opening = null;
        };
        // Listening before anything can destroy it: a connection emits `error` when destroyed, and an
        // `error` nobody listens to would end the process.
        connection.on('error', fail);
        connection.on('close', () => fail(new Error('connection closed')));
        if (expired) {
          // Connected after the deadline: nobody waits for it any more.
          destroyConnection(connection, expired);
          throw expired;
        }
        try {
          link.channel = await connection.createConfirmChannel();
          link.channel.on('error', fail);
          link.channel.on('close', () => fail(new Error('channel closed')));
          link.channel.on('return', (message: amqp.Message) => {
            const id = message.properties.messageId as string | undefined;
            if (id) link.returned.add(id);
          });
          if (sink.declareExchange) await link.channel.assertExchange(exchange, 'topic', { durable: true });
          else await link.channel.checkExchange(exchange);
        } catch (error) {
          if (!expired) await connection.close().catch(() => undefined);
          throw error;
        }
        return link;
      })();
      try {
        return await Promise.race([opened, deadline]);
      } finally {
        clearTimeout(timer);
        if (abandonOpening === abandon) abandonOpening = null;
      }
    })();
    const current = opening;
    opening.catch(() => {
      if (opening === current) opening = null;
    });
    return opening;
  };

  return {
    async send(event: ChangeEvent, signal: AbortSignal): Promise<DeliveryOutcome> {
      const started = performance.now();
      if (signal.aborted) return failedWithoutAnswer('aborted: the dispatcher is stopping', started, true);
      const message = sinkMessage(event);
      const routingKey = `${subjectToken(message.stream)}.${message.type}`;
      const failed = (error: string) => failedWithoutAnswer(maskSecrets(`RabbitMQ publish to ${exchange} (${routingKey}): ${error}`, secrets), started, signal.aborted);
      let link: Link;
      try {
        link = await untilAborted(open(), signal);
      } catch (error) {
        if (signal.aborted) return failedWithoutAnswer('aborted: the dispatcher is stopping', started, true);
        return failed(describeError(error));
      }
      link.returned.delete(message.id);
      const confirmed = new Promise<Error | null>((resolve) => {
        const timer = setTimeout(() => resolve(new Error(`no confirm within ${timeoutMs} ms`)), timeoutMs);
        const done = (error: Error | null) => {
          clearTimeout(timer);
          resolve(error);
        };
        try {
          link.channel.publish(
            exchange,
            routingKey,
            Buffer.from(message.body),
            { persistent: true, mandatory: true, messageId: message.id, contentType: 'application/json', type: message.type, timestamp: Math.floor(Date.now() / 1000) },
            (error: unknown) => done(error ? (error instanceof Error ? error : new Error(`nacked: ${String(error)}`)) : null),
          );
        } catch (error) {
          done(error instanceof Error ? error : new Error(String(error)));
        }
      });
      const error = await confirmed;
      if (error) {
        return failed(describeError(error));
      }
      if (link.returned.delete(message.id)) return failed(`returned unroutable: no queue is bound to exchange ${exchange} for routing key ${routingKey}`);
      return { ok: true, status: 0, durationMs: elapsedMs(started), response: 'confirmed' };
    },
    async close() {
      const current = opening;
      opening = null;
      if (!current) return;
      abandonOpening?.(new Error('the sink was closed while opening its connection'));
      let link: Link;
      try {
        link = await current;
      } catch {
        return; // never opened, or given up
      }
      await closeWithin(link.connection, Math.min(timeoutMs, CLOSE_WAIT_MS));
    },
  };
}

/**
 * Ends a connection at once, without the close handshake (a broker that stopped answering would
 * never send close-ok): destroys its socket with `error`, so amqplib closes it and its channels
 * (their pending operations reject) and emits `error` and `close`. The socket is amqplib's own
 * (`connection.stream`, not in its typings).
 */
function destroyConnection(model: amqp.ChannelModel, error: Error): void {
  const stream = (model.connection as unknown as { stream?: Duplex }).stream;
  if (stream) stream.destroy(error);
  else model.close().catch(() => undefined);
}

/**
 * Closes a connection by the AMQP close handshake, or, when the broker has not answered within `ms`
 * (a broker that stopped answering never sends close-ok), destroys it (`destroyConnection`).
 */
async function closeWithin(model: amqp.ChannelModel, ms: number): Promise<void> {
  const answered = await resultWithin(
    model.close().then(
      () => true,
      () => true, // closed already
    ),
    ms,
    false,
  );
  if (!answered) destroyConnection(model, new Error(`no answer to connection.close within ${ms} ms`));
}
