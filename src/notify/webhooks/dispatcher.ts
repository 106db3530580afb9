/**
 * Webhook endpoints as delivery targets of the delivery core (src/notify/delivery/): each
 * endpoint's sender POSTs signed messages over one keep-alive undici Agent shared by every endpoint
 * of a dispatcher. `WebhookDispatcher` is a delivery dispatcher of webhook endpoints alone (tests,
 * benchmarks); the daemon's dispatcher also holds the sinks (jobs/context.ts).
 */
import { Agent, type Dispatcher } from 'undici';
import type { WebhookEndpointConfig } from '../../config/schema.ts';
import { DeliveryDispatcher, type DeliveryDispatcherOptions, type DeliveryTarget } from '../delivery/delivery-dispatcher.ts';
import { WEBHOOK_KIND } from '../delivery/endpoint-store.ts';
import { DEFAULT_DELIVERY_TIMEOUT_MS } from './delivery.ts';
import { webhookSender } from './webhook-sender.ts';

/** How webhook requests are sent: their time limit and the undici dispatcher (connection pool). */
export interface WebhookTargetOptions {
  /** Time limit of one delivery attempt, ms. Default 15000. */
  timeoutMs?: number;
  /** The undici dispatcher for deliveries; by default the targets share a keep-alive Agent, closed when the last sender closes. */
  httpDispatcher?: Dispatcher;
}

/**
 * The delivery targets of `endpoints` (docs/webhooks.md "Endpoints").
 * @throws Error naming the option or the endpoint's key when `timeoutMs` or a secret is not valid
 */
export function webhookTargets(endpoints: readonly WebhookEndpointConfig[], options: WebhookTargetOptions = {}): DeliveryTarget[] {
  const timeoutMs = options.timeoutMs ?? DEFAULT_DELIVERY_TIMEOUT_MS;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new Error(`timeoutMs: must be a positive number, got ${String(timeoutMs)}`);
  if (endpoints.length === 0) return [];
  const http = options.httpDispatcher ?? new Agent({ connect: { timeout: timeoutMs }, keepAliveTimeout: 10_000 });
  let open = endpoints.length;
  return endpoints.map((endpoint) => {
    const sender = webhookSender(endpoint, { timeoutMs, http });
    let closed = false;
    return {
      name: endpoint.name,
      kind: WEBHOOK_KIND,
      configKey: 'webhooks',
      url: endpoint.url,
      events: endpoint.events,
      ...(endpoint.disableAfterDays === undefined ? {} : { disableAfterDays: endpoint.disableAfterDays }),
      ...(endpoint.maxInFlight === undefined ? {} : { maxInFlight: endpoint.maxInFlight }),
      ...(endpoint.ordering === undefined ? {} : { ordering: endpoint.ordering }),
      ...(endpoint.initial === undefined ? {} : { initial: endpoint.initial }),
      sender: {
        send: sender.send,
        async close() {
          if (closed) return;
          closed = true;
          open -= 1;
          if (open === 0 && !options.httpDispatcher) await http.destroy().catch(() => undefined);
        },
      },
    };
  });
}

/** Construction options of a WebhookDispatcher: the delivery dispatcher's, with the endpoints instead of targets. */
export interface WebhookDispatcherOptions extends Omit<DeliveryDispatcherOptions, 'targets'>, WebhookTargetOptions {
  /** The configured endpoints (src/config/schema.ts `webhooks`). */
  endpoints: readonly WebhookEndpointConfig[];
  /** Further targets delivered by the same dispatcher (the sinks). */
  targets?: readonly DeliveryTarget[];
}

/**
 * A delivery dispatcher (src/notify/delivery/delivery-dispatcher.ts) of the webhook endpoints (and
 * `targets`, when given). Usage:
 *
 *     const dispatcher = new WebhookDispatcher({ connection, endpoints: config.webhooks, logger });
 *     await dispatcher.start();  dispatcher.notify();  await dispatcher.stats();  await dispatcher.stop();
 */
export class WebhookDispatcher extends DeliveryDispatcher {
  /** @throws Error naming the option or the endpoint's field and the rule */
  constructor(options: WebhookDispatcherOptions) {
    const { endpoints, targets = [], timeoutMs, httpDispatcher, ...rest } = options;
    super({
      ...rest,
      targets: [...webhookTargets(endpoints, { ...(timeoutMs === undefined ? {} : { timeoutMs }), ...(httpDispatcher === undefined ? {} : { httpDispatcher }) }), ...targets],
    });
  }
}
