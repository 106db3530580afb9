/**
 * The write queue (docs/writes.md), loaded on demand (it loads BullMQ): the intake that stores a
 * write then queues it, the worker that sends it with its sweeper, and `POST /writes`. The face of
 * src/writes/queue/ for jobs/ and cli/. Entry points:
 * - `WriteIntake#enqueueWrite(kind, payload, { idempotencyKey?, actAs? })` -> `{ id, idempotencyKey, status }`.
 * - `startWriteWorker(options)` -> `{ close() }` (with its sweeper: `WriteSweeper`).
 * - `writeRoutes({ intake })`: `POST /writes`, `GET /writes/{id}` for the daemon's route table
 *   (`WRITE_ROUTE_SPECS` their declarations); `handleWritesRequest` the same on a server of its own.
 */
export { WriteIntake, type EnqueueOptions, type EnqueueResult } from './intake.ts';
export { startWriteWorker, type WriteWorkerHandle, type WriteWorkerOptions } from './worker.ts';
export { DEFAULT_SWEEP_INTERVAL_MS, WriteSweeper, type SweepResult, type WriteSweeperOptions } from './sweeper.ts';
export { connectProducer, deploymentQueueName, type WriteQueueLocation } from './write-queue.ts';
export { handleWritesRequest, WRITE_ROUTE_SPECS, writeRoutes, type WritesHttpDependencies } from './write-routes.ts';
