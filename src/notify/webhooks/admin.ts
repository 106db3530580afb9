/**
 * The webhook side of `bizops-sync webhooks list|send-test|replay --failed`: what needs the
 * endpoints' configuration (URL, secrets) or sends HTTP. The stored state's administration common
 * to every target (replay, enable, retry, attempts) is the delivery core's
 * (src/notify/delivery/target-admin.ts).
 */
import { Agent, type Dispatcher } from 'undici';
import type { WebhookEndpointConfig } from '../../config/schema.ts';
import type { SqlExecutor } from '../../mirror/sql/executor.ts';
import { WEBHOOK_KIND } from '../delivery/endpoint-store.ts';
import { listDeliveryTargets, replayFailedDeliveries, type FailedReplayOutcome, type ListWebhookEndpointsOptions, type WebhookEndpointListing } from '../delivery/target-admin.ts';
import { DEFAULT_DELIVERY_TIMEOUT_MS, deliverWebhook } from './delivery.ts';
import { buildTestWebhookMessage, signerForEndpoint } from './signing.ts';
import { webhookSender } from './webhook-sender.ts';

/**
 * Every configured endpoint (in configuration order), then stored endpoints no longer configured,
 * each with its latest attempts (`webhooks list`, the console). Read-only: works on a read-only connection.
 */
export function listWebhookEndpoints(executor: SqlExecutor, config: { webhooks: readonly WebhookEndpointConfig[] }, options: ListWebhookEndpointsOptions = {}): Promise<WebhookEndpointListing[]> {
  return listDeliveryTargets(executor, 'webhooks', config.webhooks, () => WEBHOOK_KIND, options);
}

/** The answer to a test event. */
export interface TestEventResult {
  ok: boolean;
  /** HTTP status, null without an answer. */
  status: number | null;
  durationMs: number;
  /** The webhook-id sent (`test_<uuid>`). */
  webhookId: string;
  /** Why it failed, when it did. */
  error: string | null;
}

/** Options of `sendTestEvent`: the attempt's time limit (ms) and the undici dispatcher to send with. */
export interface SendTestEventOptions {
  /** Default 15000. */
  timeoutMs?: number;
  dispatcher?: Dispatcher;
}

/**
 * Sends one signed `webhook.test` event to an endpoint, once (no retries, no state recorded) and
 * whatever its `events` filter says, so an operator can check the URL and the receiver's signature
 * verification. Same rules as deliveries: only 2xx is ok, redirects are not followed.
 * @throws Error naming the endpoint when its secret is not valid
 */
export async function sendTestEvent(endpoint: WebhookEndpointConfig, options: SendTestEventOptions = {}): Promise<TestEventResult> {
  const signer = signerForEndpoint(endpoint);
  const message = buildTestWebhookMessage(endpoint.name);
  const outcome = await deliverWebhook(endpoint.url, message, signer, {
    timeoutMs: options.timeoutMs ?? DEFAULT_DELIVERY_TIMEOUT_MS,
    ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
  });
  return {
    ok: outcome.ok,
    status: outcome.status,
    durationMs: outcome.durationMs,
    webhookId: message.id,
    error: outcome.ok ? null : outcome.error,
  };
}

/** Options of `replayFailedWebhooks`. */
export interface ReplayFailedOptions {
  /** Only this endpoint's failed events. */
  endpoint?: string;
  /** Time limit of each attempt, ms. Default 15000. */
  timeoutMs?: number;
  dispatcher?: Dispatcher;
}

/**
 * Re-sends the events endpoints gave up on (`webhook_failed_deliveries`), each once, oldest first
 * per endpoint, with its original webhook-id and body, signed with the endpoint's current
 * secret(s). A 2xx deletes the row; a failure keeps it (attempts + 1, last error). These events
 * arrive after later ones did: receivers order by `data.seq`. Runs beside the daemon (its loops
 * are not involved).
 * @param endpoints the configured endpoints (their URL and secrets)
 * @throws Error when `options.endpoint` names no configured endpoint
 */
export async function replayFailedWebhooks(executor: SqlExecutor, endpoints: readonly WebhookEndpointConfig[], options: ReplayFailedOptions = {}): Promise<FailedReplayOutcome[]> {
  if (options.endpoint !== undefined && !endpoints.some((endpoint) => endpoint.name === options.endpoint)) {
    throw new Error(`endpoint: no configured endpoint named "${options.endpoint}"; configured: ${endpoints.map((endpoint) => endpoint.name).join(', ') || 'none'}`);
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_DELIVERY_TIMEOUT_MS;
  const http = options.dispatcher ?? new Agent({ connect: { timeout: timeoutMs } });
  try {
    const senders = new Map(endpoints.map((endpoint) => [endpoint.name, webhookSender(endpoint, { timeoutMs, http })]));
    return await replayFailedDeliveries(executor, 'webhooks', senders, options.endpoint);
  } finally {
    if (!options.dispatcher) await http.close().catch(() => undefined);
  }
}
