/**
 * The writes (docs/writes.md; spec §4, §7, §8): every mutation of the API, validated at intake,
 * queued durably (`writes` row in the mirror, then BullMQ job), sent at the pace of the shared rate
 * budget (never sent again while its outcome is unknown: src/writes/write-engine.ts), its outcome recorded
 * and emitted as a change (`write.succeeded`, `write.failed`, `write.needs_review`) and written
 * through into the mirror.
 *
 * The face of src/writes/ for jobs/ and cli/: the errors and the `writes` table (`WriteStore`),
 * which `status` and `write ID` read without loading the kinds' schemas or the queue. The write
 * kinds (src/writes/kinds/index.ts) and the queue (intake, BullMQ, the worker and its sweeper,
 * `POST /writes`: src/writes/queue/index.ts) have faces of their own.
 */
export type { WriteKindName, WritePayload } from './kinds/index.ts';
export { IdempotencyConflictError, WriteValidationError, type WriteFieldIssue } from './write-errors.ts';
export { WRITE_DUPLICATED, WriteStore, type WriteRecord, type WriteStatus } from './write-store.ts';
