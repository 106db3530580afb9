/**
 * The mirror (docs/mirror.md): opening it wherever it lives (a SQLite file or a PostgreSQL schema),
 * migrated and checked; the stores of its tables; leases; its health and schema version. The face
 * of src/mirror/ for jobs/ and cli/.
 */
export { openMirrorConnection, type OpenMirrorConnectionOptions } from './open.ts';
export type { SqlConnection, SqlExecutor } from './sql/executor.ts';
export { isPostgresUrl, quoteIdentifier } from './sql/postgres-location.ts';
export { MirrorFileLockedError, mirrorFileLockedCount } from './sql/sqlite.ts';
export { dropPostgresMirror, postgresMirrorExists } from './postgres-admin.ts';
export { MIGRATIONS } from './migrations/index.ts';
export { mirrorHealthCheck, mirrorSchemaVersion } from './health.ts';
export { MirrorStore, type AppendedChange, type DeletionHold, type ScanOutcome } from './mirror-store.ts';
export { confirmLease, LEASE_REQUEST_PREFIX, leaseRequestName, Leases, PROCESS_LEASE_HOLDER, streamLeaseName, WEBHOOKS_LEASE, type LeaseState } from './leases.ts';
export { RecordClockStore } from './record-clock-store.ts';
export { changelogActivity, type ChangelogActivity } from './changelog-activity.ts';
export { RejectedRecords } from './rejected-records.ts';
export { listUndeclaredFields, type UndeclaredField } from './field-registry.ts';
