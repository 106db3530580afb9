/**
 * Change notifications: the changelog tail (`bizops-sync changes`) and signed webhooks
 * (`WebhookDispatcher`, `bizops-sync webhooks list|test|replay`). The surface of src/notify/ for jobs/ and the CLI (everything else is internal to it).
 */
export { followChanges, formatChangeLine, iterateChanges, readChanges, type ChangeEvent } from './changelog.ts';
export { compileEventFilter } from './event-filter.ts';
export { WebhookDispatcher, type WebhookDispatcherOptions } from './webhooks/dispatcher.ts';
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
} from './webhooks/admin.ts';
export { safeUrl } from './webhooks/dispatcher.ts';
export type { WebhookAttempt } from './webhooks/attempts.ts';
