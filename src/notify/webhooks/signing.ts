/**
 * Webhook messages and their Standard Webhooks signatures (https://www.standardwebhooks.com/;
 * spec §6 leaves outbound events unspecified, so this project follows that standard).
 *
 * A message is built once per changelog event and is byte-identical on every retry; only the
 * timestamp and signature headers change per attempt:
 *   webhook-id         the event's `event_id`, identical on every retry (receivers deduplicate on it)
 *   webhook-timestamp  Unix seconds of this attempt
 *   webhook-signature  `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, by the `standardwebhooks` library
 *   content-type       application/json
 */
import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { ChangeEvent } from '../changelog.ts';

/** What is sent for one event: the id and the exact body bytes that are signed. */
export interface WebhookMessage {
  /** The `webhook-id` header. */
  id: string;
  /** Event type, e.g. `deal.won` (also inside the body). */
  type: string;
  /** The changelog seq, or null for events outside the changelog (`webhook.test`). */
  seq: number | null;
  /** The JSON body, as sent and signed. */
  body: string;
}

/**
 * The Standard Webhooks payload for a changelog event:
 * `{"type":"deal.won","timestamp":"<occurred_at ISO>","data":{"seq":42,"stream":"deals","record_id":"d_1","record":{...},"changes":{"status":{"old":"OPEN","new":"WON"}}}}`.
 * `data` is the changelog's `data` plus `seq`, `stream` and `record_id`, so receivers can order,
 * detect gaps and find the record without another lookup.
 */
export function buildWebhookMessage(event: ChangeEvent): WebhookMessage {
  const body = JSON.stringify({
    type: event.type,
    timestamp: event.occurredAt,
    data: { ...event.data, seq: event.seq, stream: event.stream, record_id: event.recordId },
  });
  return { id: event.eventId, type: event.type, seq: event.seq, body };
}

/** Headers of one signed attempt. */
export interface SignedWebhookHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
  'content-type': 'application/json';
  [header: string]: string;
}

/**
 * Signs with an endpoint's secret, reusing the decoded key for every message.
 * Construct once per endpoint; the secret is never exposed or logged.
 */
export class WebhookSigner {
  readonly #webhook: Webhook;

  /**
   * @param secret `whsec_` followed by base64 (src/config/schema.ts)
   * @param endpointName names the endpoint in the error
   * @throws Error naming the endpoint (never the secret) when the secret is not valid base64 or empty
   */
  constructor(secret: string, endpointName = 'webhook endpoint') {
    try {
      this.#webhook = new Webhook(secret);
    } catch (error) {
      throw new Error(`webhooks.${endpointName}.secret: must be whsec_ followed by non-empty base64 (${(error as Error).message.replace(/whsec_\S+/g, 'whsec_[redacted]')})`, {
        cause: error,
      });
    }
  }

  /**
   * The headers for one attempt of `message` at `attemptAt` (the signature covers id, the attempt's
   * Unix seconds and the body).
   */
  sign(message: WebhookMessage, attemptAt: Date = new Date()): SignedWebhookHeaders {
    return {
      'webhook-id': message.id,
      'webhook-timestamp': String(Math.floor(attemptAt.getTime() / 1000)),
      'webhook-signature': this.#webhook.sign(message.id, attemptAt, message.body),
      'content-type': 'application/json',
    };
  }
}

/** The `type` of the event `webhooks test` sends. */
const TEST_EVENT_TYPE = 'webhook.test';

/**
 * A `webhook.test` message (not from the changelog; a fresh id each time):
 * `{"type":"webhook.test","timestamp":"<now ISO>","data":{"endpoint":"crm","message":"..."}}`.
 */
export function buildTestWebhookMessage(endpointName: string, now: Date = new Date()): WebhookMessage {
  const id = `test_${randomUUID()}`;
  const body = JSON.stringify({
    type: TEST_EVENT_TYPE,
    timestamp: now.toISOString(),
    data: { endpoint: endpointName, message: 'Test event from bizops-sync: the endpoint is reachable and the signature can be verified.' },
  });
  return { id, type: TEST_EVENT_TYPE, seq: null, body };
}
