/**
 * `@bizops-sync/client`: a typed client for a bizops-sync daemon (packages/client/README.md).
 *   - `PullConsumer`: a named consumer's events, `for await (const event of consumer.events())`;
 *   - `verifyWebhook(request, secret)`: a webhook request's Standard Webhooks signature checked;
 *   - `WriteSubmitter`: writes sent with idempotency keys;
 *   - the event types, generated from docs/event-schemas.json (`BizopsEvent`, `EventOfType`).
 */
export { PullConsumer, CursorPrunedError, type PulledEvent, type PullConsumerOptions, type PullConsumerStats } from './consumer.ts';
export { verifyWebhook, WebhookVerificationError, type VerifiedWebhook, type WebhookRequest } from './webhook.ts';
export { WriteSubmitter, WriteRejectedError, IdempotencyConflictError, type SubmittedWrite, type WriteState, type WriteSubmitterOptions } from './writes.ts';
export { DaemonRequestError, type DaemonOptions } from './http.ts';
export * from './events.generated.ts';
