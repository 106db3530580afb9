/**
 * Webhook messages and their Standard Webhooks signatures (https://www.standardwebhooks.com/;
 * spec §6 leaves outbound events unspecified, so this project follows that standard).
 *
 * A message is built once per changelog event and is byte-identical on every retry; only the
 * timestamp and signature headers change per attempt:
 *   webhook-id         the event's `event_id`, identical on every retry (receivers deduplicate on it)
 *   webhook-timestamp  Unix seconds of this attempt
 *   webhook-signature  `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, by the `standardwebhooks` library;
 *                      during a secret rotation two such entries, space-separated
 *   content-type       application/json
 */
import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { ChangeEvent } from '../changelog-reader.ts';
import { TEST_EVENT_TYPE, webhookBody } from '../event-payload.ts';

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
 * detect gaps and find the record without another lookup. Spliced from `event.dataJson` when the
 * reader set it (the same bytes).
 */
export function buildWebhookMessage(event: ChangeEvent): WebhookMessage {
  return { id: event.eventId, type: event.type, seq: event.seq, body: webhookBody(event) };
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
  readonly #previous: { webhook: Webhook; expiresAtMs: number } | null;

  /**
   * @param secret `whsec_` followed by base64 (src/config/schema.ts)
   * @param endpointName names the endpoint in the error
   * @param previous secret rotation: the old secret and when it stops being signed with; until
   *   then `sign` sends both signatures (docs/webhooks.md "Rotating the secret")
   * @throws Error naming the endpoint's key (never the secret) when a secret is not valid base64 or
   *   empty, or `previous.expiresAt` is not a date
   */
  constructor(secret: string, endpointName = 'webhook endpoint', previous?: { secret: string; expiresAt: Date | string }) {
    this.#webhook = decodeSecret(secret, `webhooks.${endpointName}.secret`);
    if (previous) {
      const expiresAtMs = new Date(previous.expiresAt).getTime();
      if (Number.isNaN(expiresAtMs)) throw new Error(`webhooks.${endpointName}.previousSecretExpiresAt: must be an ISO 8601 date-time`);
      this.#previous = { webhook: decodeSecret(previous.secret, `webhooks.${endpointName}.previousSecret`), expiresAtMs };
    } else {
      this.#previous = null;
    }
  }

  /**
   * The headers for one attempt of `message` at `attemptAt` (the signature covers id, the attempt's
   * Unix seconds and the body). While a previous secret is still valid at `attemptAt`,
   * `webhook-signature` holds two space-separated entries, `v1,<with secret> v1,<with previous>`,
   * as Standard Webhooks allows: a receiver verifying with either secret accepts the request.
   */
  sign(message: WebhookMessage, attemptAt: Date = new Date()): SignedWebhookHeaders {
    const signatures = [this.#webhook.sign(message.id, attemptAt, message.body)];
    if (this.#previous && attemptAt.getTime() < this.#previous.expiresAtMs) signatures.push(this.#previous.webhook.sign(message.id, attemptAt, message.body));
    return {
      'webhook-id': message.id,
      'webhook-timestamp': String(Math.floor(attemptAt.getTime() / 1000)),
      'webhook-signature': signatures.join(' '),
      'content-type': 'application/json',
    };
  }
}

/** A signer for an endpoint's configuration (its secret, and its previous secret while rotating). */
export function signerForEndpoint(endpoint: { name: string; secret: string; previousSecret?: string | undefined; previousSecretExpiresAt?: string | undefined }): WebhookSigner {
  const previous =
    endpoint.previousSecret !== undefined && endpoint.previousSecretExpiresAt !== undefined
      ? { secret: endpoint.previousSecret, expiresAt: endpoint.previousSecretExpiresAt }
      : undefined;
  return new WebhookSigner(endpoint.secret, endpoint.name, previous);
}

function decodeSecret(secret: string, key: string): Webhook {
  try {
    return new Webhook(secret);
  } catch (error) {
    throw new Error(`${key}: must be whsec_ followed by non-empty base64 (${(error as Error).message.replace(/whsec_\S+/g, 'whsec_[redacted]')})`, {
      cause: error,
    });
  }
}

export { TEST_EVENT_TYPE } from '../event-payload.ts';

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
