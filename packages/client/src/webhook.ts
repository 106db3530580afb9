/**
 * Verifies a webhook request from a bizops-sync daemon (docs/webhooks.md): Standard Webhooks
 * (https://www.standardwebhooks.com/), checked by the `standardwebhooks` library the daemon signs with:
 * `webhook-signature` holds `v1,<base64 HMAC-SHA256 of "webhook-id.webhook-timestamp.body">` (two
 * entries while the daemon rotates its secret), `webhook-timestamp` must be within 5 minutes of now.
 */
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import type { BizopsEvent } from './events.generated.ts';

export { WebhookVerificationError };

/** A received request: a Fetch API `Request`, or its headers and exact body bytes (node:http, Express with a raw body parser). */
export type WebhookRequest =
  | Request
  | {
      /** Header names in any case; a repeated header's values as an array (its first is used). */
      headers: Headers | Record<string, string | string[] | undefined>;
      /** The body exactly as received: re-serialized JSON does not verify. */
      body: string | Uint8Array;
    };

/** A verified webhook: the event with its `id` (the `webhook-id` header, the same on every retry: deduplicate on it). */
export type VerifiedWebhook = BizopsEvent & { id: string };

const HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

/**
 * Checks the signature and the timestamp of `request` against `secret` and returns its event.
 * @param secret the endpoint's secret, `whsec_` followed by base64; during a rotation, both secrets
 *   (either verifying is enough)
 * @returns the parsed body with `id` set from `webhook-id`
 * @throws WebhookVerificationError when a header is missing, the signature matches no secret, or the
 *   timestamp is more than 5 minutes away; TypeError when a secret is not `whsec_` + base64
 */
export async function verifyWebhook(request: WebhookRequest, secret: string | readonly string[]): Promise<VerifiedWebhook> {
  let body: string | Buffer;
  let read: (name: string) => string | undefined;
  if (request instanceof Request) {
    body = await request.text();
    read = (name) => request.headers.get(name) ?? undefined;
  } else {
    body = typeof request.body === 'string' ? request.body : Buffer.from(request.body);
    const headers = request.headers;
    if (headers instanceof Headers) read = (name) => headers.get(name) ?? undefined;
    else {
      const lower = new Map(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), Array.isArray(value) ? value[0] : value]));
      read = (name) => lower.get(name);
    }
  }
  const headers: Record<string, string> = {};
  for (const name of HEADERS) {
    const value = read(name);
    if (value === undefined) throw new WebhookVerificationError(`Missing required header ${name}`);
    headers[name] = value;
  }
  const secrets = typeof secret === 'string' ? [secret] : secret;
  if (secrets.length === 0) throw new TypeError('secret: at least one whsec_ secret');
  let failure: unknown;
  for (const one of secrets) {
    let webhook: Webhook;
    try {
      webhook = new Webhook(one);
    } catch {
      throw new TypeError('secret: must be whsec_ followed by base64');
    }
    try {
      const event = webhook.verify(body, headers) as BizopsEvent;
      return { ...event, id: headers['webhook-id']! } as VerifiedWebhook;
    } catch (error) {
      failure = error;
    }
  }
  throw failure;
}
