/**
 * The sync (docs/sync.md): `SyncEngine` runs a stream's backfill, incremental sync or
 * reconciliation into the mirror. The face of src/sync/ for jobs/ and cli/.
 */
export { SyncEngine, type RunOptions, type RunProgress, type RunReason, type RunResult, type SyncEngineOptions } from './sync-engine.ts';
export { assertBaseUrlServes, WrongBaseUrlError, type BaseUrlCheckOptions } from './base-url-check.ts';
export { verifyStream, VERIFY_SAMPLE_SIZE, type PartitionVerification, type StreamVerification, type VerifyProgress, type VerifyStreamOptions } from './mirror-verify.ts';
export {
  DEFAULT_FAILING_AFTER_RUNS,
  STREAM_CONDITION_EVENTS,
  STREAM_FAILING,
  STREAM_RECOVERED,
  STREAM_STALE,
  STREAM_UNSUPPORTED,
  StreamConditions,
  type StreamConditionRecord,
  type StreamConditionsOptions,
} from './stream-conditions.ts';
export { attemptUntilFree, type AttemptUntilFreeOptions } from './wait-for-lease.ts';
export { checkCreatedRange, CreatedRangeError, type CreatedRange } from './created-range.ts';
export { measuringFirst } from './record-clock-lags.ts';
