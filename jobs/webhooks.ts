/**
 * Jobs of webhook administration (the `webhooks list|attempts|send-test|replay|enable|retry` commands). Wiring only:
 * src/notify/webhooks/ and the delivery core's administration (src/notify/delivery/target-admin.ts) do
 * the work, on the mirror (file or PostgreSQL schema) while the daemon runs.
 */
import type { Config, WebhookEndpointConfig } from '../src/config/index.ts';
import {
  enableWebhookEndpoint,
  listEventAttempts,
  listWebhookEndpoints,
  replayFailedWebhooks,
  replayWebhooks,
  retryTargetNow,
  sendTestEvent,
  type EnableResult,
  type RetryNowResult,
  type FailedReplayOutcome,
  type ReplayResult,
  type TestEventResult,
  type WebhookAttempt,
  type WebhookEndpointListing,
} from '../src/notify/webhooks/index.ts';
import type { SqlConnection } from '../src/mirror/index.ts';
import { openExistingMirror } from './open-mirror.ts';

const NO_MIRROR_HINT = 'start `bizops-sync daemon` (or run `bizops-sync backfill`) first';

/** Runs `work` on the mirror of `config`, closing it afterwards. @throws MirrorMissingError when the mirror does not exist */
async function withMirror<T>(config: Config, options: { readonly?: boolean }, work: (connection: SqlConnection) => Promise<T>): Promise<T> {
  const connection = await openExistingMirror(config.dbPath, { ...options, hint: NO_MIRROR_HINT });
  try {
    return await work(connection);
  } finally {
    await connection.close();
  }
}

/**
 * Every endpoint with its cursor, lag, last error and its latest `attempts` attempts (`webhooks list`).
 * @throws Error when the mirror does not exist
 */
export function listWebhooksJob(config: Config, attempts = 3): Promise<WebhookEndpointListing[]> {
  return withMirror(config, { readonly: true }, (connection) => listWebhookEndpoints(connection, config, { attempts }));
}

/**
 * Every kept attempt of one event (`webhooks attempts EVENT_ID`).
 * @throws Error when the mirror does not exist or `eventId` is not an event id
 */
export function eventAttemptsJob(config: Config, eventId: string): Promise<WebhookAttempt[]> {
  return withMirror(config, { readonly: true }, (connection) => listEventAttempts(connection, eventId));
}

/** One signed `webhook.test` to each of `endpoints`, in order (`webhooks send-test`). */
export async function sendTestWebhooksJob(endpoints: readonly WebhookEndpointConfig[]): Promise<{ endpoint: WebhookEndpointConfig; result: TestEventResult }[]> {
  const results: { endpoint: WebhookEndpointConfig; result: TestEventResult }[] = [];
  for (const endpoint of endpoints) results.push({ endpoint, result: await sendTestEvent(endpoint) });
  return results;
}

/**
 * Moves an endpoint's cursor back to `sinceSeq` (`webhooks replay`).
 * @throws Error when the mirror does not exist, the endpoint is unknown, or `sinceSeq` is ahead of its cursor
 */
export function replayWebhooksJob(config: Config, endpointName: string, sinceSeq: number): Promise<ReplayResult> {
  const configured = config.webhooks.find((endpoint) => endpoint.name === endpointName);
  return withMirror(config, {}, (connection) => replayWebhooks(connection, configured ?? endpointName, sinceSeq));
}

/**
 * Re-sends every event endpoints gave up on, or one endpoint's (`webhooks replay --failed`).
 * @throws Error when the mirror does not exist or `endpointName` is not configured
 */
export function replayFailedWebhooksJob(config: Config, endpointName?: string): Promise<FailedReplayOutcome[]> {
  return withMirror(config, {}, (connection) => replayFailedWebhooks(connection, config.webhooks, endpointName === undefined ? {} : { endpoint: endpointName }));
}

/**
 * Re-enables a disabled endpoint where its cursor stands (`webhooks enable NAME`).
 * @throws Error when the mirror does not exist or the endpoint is not registered
 */
export function enableWebhookEndpointJob(config: Config, endpointName: string): Promise<EnableResult> {
  return withMirror(config, {}, (connection) => enableWebhookEndpoint(connection, endpointName));
}

/**
 * Ends a paused endpoint's pause now: its next event goes out as a probe, its held events are due
 * (`webhooks retry NAME`).
 * @throws Error when the mirror does not exist, the endpoint is not registered, or it is disabled
 */
export function retryWebhookEndpointJob(config: Config, endpointName: string): Promise<RetryNowResult> {
  return withMirror(config, {}, (connection) => retryTargetNow(connection, endpointName));
}
