/**
 * Change notifications: the changelog tail (`bizops-sync changes`) and signed webhooks
 * (`WebhookDispatcher`, `bizops-sync webhooks list|test|replay`). The public surface of src/notify/.
 */
export { readChanges, followChanges, formatChangeLine, latestChangeSeq } from './changelog.ts';
export type { ChangeEvent, ChangeData, FieldChange, ReadChangesOptions, FollowChangesOptions } from './changelog.ts';
export { compileEventFilter, validateEventPattern } from './event-filter.ts';
export type { EventTypeFilter } from './event-filter.ts';
export { WebhookDispatcher } from './webhooks/dispatcher.ts';
export type { WebhookDispatcherOptions, WebhookEndpointStats, WebhookAttemptRecord } from './webhooks/dispatcher.ts';
export { listWebhookEndpoints, sendTestEvent, replayWebhooks } from './webhooks/admin.ts';
export type { WebhookEndpointListing, TestEventResult, SendTestEventOptions, ReplayResult } from './webhooks/admin.ts';
export { buildWebhookMessage, WebhookSigner, TEST_EVENT_TYPE } from './webhooks/signing.ts';
export type { WebhookMessage, SignedWebhookHeaders } from './webhooks/signing.ts';
export { STANDARD_RETRY_SCHEDULE_MS } from './webhooks/retry-schedule.ts';
