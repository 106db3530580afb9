/**
 * Signed webhooks (docs/webhooks.md): the dispatcher that delivers the changelog to every endpoint,
 * and the administration behind `bizops-sync webhooks list|send-test|replay|enable`. The face of
 * src/notify/webhooks/ for jobs/ and cli/.
 */
export { safeUrl, WebhookDispatcher, type WebhookDispatcherOptions } from './dispatcher.ts';
export {
  enableWebhookEndpoint,
  listEventAttempts,
  listWebhookEndpoints,
  replayFailedWebhooks,
  replayWebhooks,
  sendTestEvent,
  type EnableResult,
  type FailedReplayOutcome,
  type ReplayResult,
  type TestEventResult,
  type WebhookEndpointListing,
} from './admin.ts';
export type { WebhookAttempt } from './attempts.ts';
