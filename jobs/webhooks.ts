/**
 * Jobs of webhook administration (the `webhooks list|send-test|replay` commands). Wiring only:
 * src/notify/webhooks/admin.ts does the work, on the mirror file while the daemon runs.
 */
import type { Config, WebhookEndpointConfig } from '../src/config/schema.ts';
import { listWebhookEndpoints, replayWebhooks, sendTestEvent, type ReplayResult, type TestEventResult, type WebhookEndpointListing } from '../src/notify/index.ts';
import { openExistingMirror } from './context.ts';

const NO_MIRROR_HINT = 'start `bizops-sync daemon` (or run `bizops-sync backfill`) first';

/** Every endpoint with its cursor, lag and last error (`webhooks list`). @throws Error when the mirror does not exist */
export function listWebhooksJob(config: Config): WebhookEndpointListing[] {
  const db = openExistingMirror(config.dbPath, { readonly: true, hint: NO_MIRROR_HINT });
  try {
    return listWebhookEndpoints(db, config);
  } finally {
    db.close();
  }
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
export function replayWebhooksJob(config: Config, endpointName: string, sinceSeq: number): ReplayResult {
  const configured = config.webhooks.find((endpoint) => endpoint.name === endpointName);
  const db = openExistingMirror(config.dbPath, { hint: NO_MIRROR_HINT });
  try {
    return replayWebhooks(db, configured ?? endpointName, sinceSeq);
  } finally {
    db.close();
  }
}
