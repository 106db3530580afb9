/**
 * What every sink publishes for one changelog event (docs/sinks.md "Messages"): the webhook's body
 * (src/notify/event-payload.ts `webhookPayload`; the published JSON Schemas apply, docs/events.md)
 * and the event's id, the same on every attempt, for the receiver's deduplication.
 */
import type { ChangeEvent } from '../changelog-reader.ts';
import { webhookBody } from '../event-payload.ts';

/** One event as a sink sends it. */
export interface SinkMessage {
  /** The event's `event_id` (`evt_...`): `Nats-Msg-Id`, AMQP `message_id`, the Redis entry's `id` field. */
  id: string;
  /** The event type, e.g. `deal.won`. */
  type: string;
  /** The changelog seq. */
  seq: number;
  /** The record's stream (`deals`), or `writes`, `webhooks`, `sinks`. */
  stream: string;
  recordId: string;
  /** The webhook's JSON body, as bytes are sent. */
  body: string;
}

/** The message of a changelog event (its body spliced from `event.dataJson` when the reader set it). */
export function sinkMessage(event: ChangeEvent): SinkMessage {
  return { id: event.eventId, type: event.type, seq: event.seq, stream: event.stream, recordId: event.recordId, body: webhookBody(event) };
}

/**
 * A name as one token of a NATS subject or an AMQP routing key: the characters those use as
 * separators or wildcards (`.`, `*`, `>`, `#`) and white space become `_`. Record ids are letters,
 * digits, `_`, `-` and `:` in practice; the body keeps the exact id.
 */
export function subjectToken(name: string): string {
  const token = name.replace(/[.*>#\s]/g, '_');
  return token === '' ? '_' : token;
}
