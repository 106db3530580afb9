/**
 * The webhook kind of sink (docs/webhooks.md): one signed POST per attempt (delivery.ts, signing.ts)
 * behind the delivery core's `SinkSender` seam (src/notify/delivery/sink-kind.ts).
 */
import type { Dispatcher } from 'undici';
import type { WebhookEndpointConfig } from '../../config/schema.ts';
import type { ChangeEvent } from '../changelog-reader.ts';
import { tracedSender, type DeliveryOutcome, type SinkSender } from '../delivery/sink-kind.ts';
import { deliverWebhook } from './delivery.ts';
import { buildWebhookMessage, signerForEndpoint } from './signing.ts';

/** What a webhook sender needs besides the endpoint: the attempt's time limit (ms) and the shared undici dispatcher. */
export interface WebhookSenderOptions {
  timeoutMs: number;
  http: Dispatcher;
}

/**
 * The sender of one endpoint: each `send` POSTs the event's signed message to `endpoint.url`.
 * @throws Error naming the endpoint's key when its secret is not valid (never the secret)
 */
export function webhookSender(endpoint: WebhookEndpointConfig, options: WebhookSenderOptions): SinkSender {
  const signer = signerForEndpoint(endpoint);
  const sender: SinkSender = {
    send: (event: ChangeEvent, signal: AbortSignal): Promise<DeliveryOutcome> =>
      deliverWebhook(endpoint.url, buildWebhookMessage(event), signer, { timeoutMs: options.timeoutMs, dispatcher: options.http, signal }),
    // The undici dispatcher is the delivery dispatcher's (shared by every endpoint): it closes it.
    close: () => Promise.resolve(),
  };
  // One trace per attempt (src/telemetry), naming the endpoint, never its URL.
  return tracedSender(sender, 'webhook.deliver', { 'bizops.endpoint': endpoint.name });
}
