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

/**
 * The body of a changelog event as JSON text: exactly `JSON.stringify(webhookPayload(event))`.
 * When the event carries `dataJson` (changelog-reader.ts `readChanges` with `dataJson: true`), that
 * text is spliced in instead of the record being encoded again.
 */
export function webhookBody(event: ChangeEvent): string {
  const dataJson = event.dataJson;
  // `data` always has `record` and `changes`: never `{}`, so its text less the `}` takes more keys.
  if (dataJson === undefined || dataJson.length <= 2) return JSON.stringify(webhookPayload(event));
  const partition = event.partition === undefined ? '' : `,"partition":${JSON.stringify(event.partition)}`;
  return `{"type":${JSON.stringify(event.type)},"timestamp":${JSON.stringify(event.occurredAt)},"data":${dataJson.slice(0, -1)},"seq":${event.seq},"stream":${JSON.stringify(event.stream)},"record_id":${JSON.stringify(event.recordId)}${partition}}}`;
}
