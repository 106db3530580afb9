/**
 * The write queue (DESIGN.md "Writes"; spec §4, §7, §8): every mutation of the API, validated at
 * intake, queued durably (SQLite row, then BullMQ job), sent exactly once at the pace of the shared
 * rate budget, its outcome recorded and emitted as a change (`write.succeeded`, `write.failed`,
 * `write.needs_review`) and written through into the mirror.
 *
 * Entry points:
 * - `WriteIntake#enqueueWrite(kind, payload, { idempotencyKey?, actAs? })` -> `{ id, idempotencyKey, status }`.
 * - `startWriteWorker(options)` -> `{ close() }`.
 * - `handleWritesRequest(request, response, { intake, writeApiKey })`: `POST /writes`, `GET /writes/{id}`.
 */
export { WRITE_KINDS, WRITE_KIND_NAMES, isWriteKindName, writeKind, ENTRY_ALREADY_OPEN, DOMAIN_PURCHASE_LIMIT_CENTS } from './kinds/index.ts';
export type { WriteKindName, WritePayload, WriteKind, RetrySafety, AmbiguityResolution, LedgerLookup, WriteThrough } from './kinds/index.ts';
export { WriteValidationError, IdempotencyConflictError, WriteQueueError, type WriteFieldIssue } from './errors.ts';
export { validateWritePayload } from './validation.ts';
export { WriteIntake, type EnqueueOptions, type EnqueueResult, type WriteIntakeOptions } from './intake.ts';
export { WriteStore, publicWrite, defaultWriteThrough, WRITE_EVENT_TYPES, type WriteRecord, type WriteStatus, type WriteOutcome, type WriteThroughHook } from './store.ts';
export { WriteEngine, clientRetryPolicy, type WriteProcessResult, type WriteEngineOptions } from './engine.ts';
export { startWriteWorker, type WriteWorkerHandle, type WriteWorkerOptions, type WriteWorkerStats } from './worker.ts';
export { DEFAULT_QUEUE_NAME, DEFAULT_QUEUE_PREFIX, deploymentQueueName, openWriteQueue, type WriteQueueLocation, type WriteJobData, type WriteRetrySchedule } from './queue.ts';
export { handleWritesRequest, type WritesHttpDependencies } from './http.ts';
