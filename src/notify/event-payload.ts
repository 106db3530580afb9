/**
 * The body of a changelog event as webhooks send it and the pull API returns it (docs/webhooks.md
 * "Request"): `{ type, timestamp, data: { ...the changelog's data, seq, stream, record_id } }`, and
 * `partition` beside `record_id` for a partitioned stream's change.
 * Plain data, no signing: readers that only read changes load nothing of the webhook sender.
 */
import type { ChangeEvent } from './changelog-reader.ts';

/** The `type` of the event `webhooks send-test` sends (not in the changelog). */
export const TEST_EVENT_TYPE = 'webhook.test';

/** The body of a changelog event, as an object (webhooks send its JSON; the pull API lists it). */
export interface WebhookPayload {
  type: string;
  /** When the mirror recorded the change (ISO 8601). */
  timestamp: string;
  /** The changelog's `data` plus `seq`, `stream` and `record_id`, so receivers can order, spot gaps and find the record. */
  data: ChangeEvent['data'] & { seq: number; stream: string; record_id: string; partition?: string };
}

/** The body of a changelog event. */
export function webhookPayload(event: ChangeEvent): WebhookPayload {
  return { type: event.type, timestamp: event.occurredAt, data: { ...event.data, seq: event.seq, stream: event.stream, record_id: event.recordId, ...(event.partition === undefined ? {} : { partition: event.partition }) } };
}
