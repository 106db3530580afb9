/**
 * The delivery core (docs/sinks.md "The delivery core"): one dispatcher delivering the changelog to
 * every target, webhook endpoints and sinks alike, with their cursors, ordering by record, held
 * events, attempts, retries, pauses and disabling kept in the mirror; and the administration of
 * their stored state. The face of src/notify/delivery/ for jobs/ and cli/; a target's kind is
 * `SinkSender` (sink-kind.ts): src/notify/webhooks/ and src/notify/sinks/ provide them.
 */
export { DEFAULT_MAX_IN_FLIGHT, DeliveryDispatcher, safeUrl, type DeliveryDispatcherOptions, type DeliveryTarget, type WebhookAttemptRecord, type WebhookEndpointStats } from './delivery-dispatcher.ts';
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
} from './target-admin.ts';
export type { WebhookAttempt } from './attempts.ts';
export type { DeliveryOutcome, SinkSender } from './sink-kind.ts';
export { DEFAULT_PROBE_INTERVALS, type ProbeIntervals } from './retry-schedule.ts';
