/**
 * Signed webhooks (docs/webhooks.md), the first kind of delivery target: their targets for the
 * delivery core (src/notify/delivery/), a dispatcher of endpoints alone, and what `bizops-sync
 * webhooks list|send-test|replay --failed` needs of the endpoints' configuration. The face of
 * src/notify/webhooks/ for jobs/ and cli/ (the stored state's administration, `webhooks
 * replay|enable|retry|attempts`, is the delivery core's face).
 */
export { WebhookDispatcher, webhookTargets, type WebhookDispatcherOptions, type WebhookTargetOptions } from './dispatcher.ts';
export { listWebhookEndpoints, replayFailedWebhooks, sendTestEvent, type TestEventResult } from './admin.ts';
export { safeUrl } from '../delivery/delivery-dispatcher.ts';
export {
  enableWebhookEndpoint,
  listEventAttempts,
  replayWebhooks,
  retryTargetNow,
  type EnableResult,
  type FailedReplayOutcome,
  type ReplayResult,
  type RetryNowResult,
  type WebhookEndpointListing,
} from '../delivery/target-admin.ts';
export type { WebhookAttempt } from '../delivery/attempts.ts';
