/**
 * The write queue (docs/writes.md; spec §4, §7, §8): every mutation of the API, validated at
 * intake, queued durably (`writes` row in the mirror, then BullMQ job), sent at the pace of the shared rate budget
 * (never sent again while its outcome is unknown: src/writes/engine.ts), its outcome recorded and
 * emitted as a change (`write.succeeded`, `write.failed`, `write.needs_review`) and written through
 * into the mirror.
 *
 * The module's surface for jobs/ and tests (everything else is internal to src/writes/). Entry points:
 * - `WriteIntake#enqueueWrite(kind, payload, { idempotencyKey?, actAs? })` -> `{ id, idempotencyKey, status }`.
 * - `startWriteWorker(options)` -> `{ close() }` (with its sweeper: src/writes/sweeper.ts).
 * - `handleWritesRequest(request, response, { intake, writeApiKey })`: `POST /writes`, `GET /writes/{id}`.
 */
export { WRITE_KIND_NAMES, WRITE_KINDS, type WriteKindName, type WritePayload } from './kinds/index.ts';
export { IdempotencyConflictError, WriteValidationError, type WriteFieldIssue } from './errors.ts';
export { WriteIntake, type EnqueueOptions, type EnqueueResult } from './intake.ts';
export { WRITE_DUPLICATED, WriteStore, type WriteRecord, type WriteStatus } from './store.ts';
export { DEFAULT_SWEEP_INTERVAL_MS, WriteSweeper, type SweepResult, type WriteSweeperOptions } from './sweeper.ts';
export { MAX_TEXT_CHARACTERS } from './validation.ts';
export { startWriteWorker, type WriteWorkerHandle, type WriteWorkerOptions } from './worker.ts';
export { connectProducer, deploymentQueueName, type WriteQueueLocation } from './queue.ts';
export { handleWritesRequest } from './http.ts';
