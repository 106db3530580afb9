/**
 * The `nats` kind of sink (docs/sinks.md "NATS JetStream"): each event is a JetStream publish to
 * `<subjectPrefix>.<stream>.<record_id>` with the header `Nats-Msg-Id` = the event id, and counts as
 * delivered once the stream's acknowledgement (PubAck) arrives. JetStream drops a second publish of
 * one id within the stream's duplicate window, so a retry after a lost acknowledgement is stored once.
 * With `createStream`, the stream (subjects `<subjectPrefix>.>`, file storage) is created when missing.
 * The client (`@nats-io/transport-node`, `@nats-io/jetstream`) reconnects on its own; a connection
 * that closed for good is opened again at the next event. A send stops waiting for the opening when
 * its signal aborts; closing the sender waits up to `ackTimeoutSeconds` (`CLOSE_WAIT_MS` at most) for an opening under way
 * (whose connection is closed once it opens). Closing a connection sends nothing to the server
 * (nats.js destroys its socket), so a server that stopped answering cannot hold it up.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import type { SinkConfig } from '../../config/schema.ts';
import { maskSecrets } from '../../logging/mask.ts';
import { plantedBug } from '../../logging/planted-bugs.ts';
import { urlCredentials } from '../../logging/mask-url.ts';
import type { ChangeEvent } from '../changelog-reader.ts';
import { CLOSE_WAIT_MS, describeError, elapsedMs, failedWithoutAnswer, resultWithin, untilAborted, type DeliveryOutcome, type SinkSender } from '../delivery/sink-kind.ts';
import { sinkMessage, subjectToken } from './sink-message.ts';

/** The subject prefix unless `subjectPrefix` says otherwise. */
export const DEFAULT_SUBJECT_PREFIX = 'bizops';

/** The JetStream stream unless `stream` says otherwise. */
export const DEFAULT_NATS_STREAM = 'BIZOPS';

/** The soak's planted bug `nats-drop-seq-7` (src/logging/planted-bugs.ts): an event whose seq ends in 7 is dropped. Off in production. */
const DROP_SEQ_7 = plantedBug('nats-drop-seq-7');

/** An open connection and its JetStream client. */
interface NatsLink {
  connection: NatsConnection;
  client: JetStreamClient;
}

/**
 * The sender of one `nats` sink.
 * @param sink a validated sink of kind `nats` (its `url` resolved)
 */
export function natsSender(sink: SinkConfig): SinkSender {
  const url = new URL(sink.url!);
  const secrets = urlCredentials(sink.url!);
  const prefix = sink.subjectPrefix ?? DEFAULT_SUBJECT_PREFIX;
  const timeoutMs = Math.round(sink.ackTimeoutSeconds * 1000);
  let opening: Promise<NatsLink> | null = null;

  const open = () => {
    if (opening) return opening;
    // Compared by identity before clearing: a late end of an earlier connection must not drop a newer opening.
    let current: Promise<NatsLink> | null = null;
    current = (async () => {
      const connection = await connect({
        servers: `${url.protocol === 'tls:' ? 'tls://' : ''}${url.host}`,
        ...(url.username ? { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } : {}),
        ...(url.protocol === 'tls:' ? { tls: {} } : {}),
        name: `bizops-sync sink ${sink.name}`,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 250,
        timeout: timeoutMs,
      });
      if (sink.createStream) {
        try {
          const manager = await jetstreamManager(connection, { timeout: timeoutMs });
          const name = sink.stream ?? DEFAULT_NATS_STREAM;
          try {
            await manager.streams.info(name);
          } catch {
            await manager.streams.add({ name, subjects: [`${prefix}.>`], duplicate_window: (sink.duplicateWindowSeconds ?? 120) * 1_000_000_000 });
          }
        } catch (error) {
          // The opening failed: its connection is not kept (the next send opens another).
          await connection.close().catch(() => undefined);
          throw error;
        }
      }
      void connection.closed().then(() => {
        if (opening === current) opening = null;
      });
      return { connection, client: jetstream(connection, { timeout: timeoutMs }) };
    })();
    opening = current;
    current.catch(() => {
      if (opening === current) opening = null;
    });
    return current;
  };

  return {
    async send(event: ChangeEvent, signal: AbortSignal): Promise<DeliveryOutcome> {
      const started = performance.now();
      if (signal.aborted) return failedWithoutAnswer('aborted: the dispatcher is stopping', started, true);
      const message = sinkMessage(event);
      const subject = `${prefix}.${subjectToken(message.stream)}.${subjectToken(message.recordId)}`;
      if (DROP_SEQ_7 && message.seq % 10 === 7) return { ok: true, status: 0, durationMs: elapsedMs(started), response: 'dropped (planted bug)' };
      try {
        const { client } = await untilAborted(open(), signal);
        const ack = await client.publish(subject, message.body, { msgID: message.id, timeout: timeoutMs });
        return { ok: true, status: 0, durationMs: elapsedMs(started), response: `stream ${ack.stream} seq ${ack.seq}${ack.duplicate ? ' (duplicate: stored before)' : ''}` };
      } catch (error) {
        return failedWithoutAnswer(maskSecrets(`NATS publish to ${subject}: ${describeError(error)}`, secrets), started, signal.aborted);
      }
    },
    async close() {
      const current = opening;
      opening = null;
      if (!current) return;
      // The opening (connect, and with createStream the stream's check or creation) can take several
      // times the time limit: it is waited for up to CLOSE_WAIT_MS at most, and its connection closed whenever it opens.
      const closing = current.then(
        ({ connection }) => connection.close(),
        () => undefined, // never opened
      );
      await resultWithin(
        closing.catch(() => undefined), // closed already
        Math.min(timeoutMs, CLOSE_WAIT_MS),
        undefined,
      );
    },
  };
}
