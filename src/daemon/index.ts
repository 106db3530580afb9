/**
 * The daemon's parts (docs/operations.md): the stream scheduler, the lease keeper and the leased
 * webhook delivery (replicas), the part supervisor (each part started until it runs, its state
 * shown), the readiness probe, the metrics (prom-client), and the HTTP server with its routes. The face of src/daemon/ for jobs/ (jobs/daemon.ts assembles them).
 */
export { StreamScheduler, type StreamSchedulerOptions, type TickOutcome } from './scheduler.ts';
export { DEFAULT_MAX_POLL_FACTOR, DEFAULT_MAX_SCAN_FACTOR, PollBackoff, type PollBackoffLimits } from './poll-backoff.ts';
export { LeaseKeeper, type LeaseKeeperOptions } from './lease-keeper.ts';
export { LeasedWebhookDelivery, type LeasedWebhookDeliveryOptions } from './leased-webhooks.ts';
export { DaemonRecord, DAEMON_ROW_STALE_AFTER_MS, type DaemonRecordOptions } from './daemon-record.ts';
export { ApiAnswers, apiReadinessCheck, LEARNED_MAX_AGE_MS, combineReadiness, failingPartitions, probeBudget, ReadinessProbe, unsupportedStreams, type DaemonIdentity } from './readiness.ts';
export { DaemonMetrics, pageTrustSource, type ConnectionMetricsSources } from './metrics.ts';
export { HEALTH_ROUTE_SPECS, healthRoutes, startDaemonHttpServer, type DaemonHttpServerOptions, type RunningHttpServer } from './http-server.ts';
export { CHANGE_ROUTE_SPECS, changeRoutes, type ChangeRoutesOptions } from './change-routes.ts';
export { SCHEMA_ROUTE_SPECS, schemaRoutes } from './schema-routes.ts';
export { ChangelogRetention, DEFAULT_RETENTION_INTERVAL_MS, type ChangelogRetentionOptions } from './changelog-retention.ts';
export { scheduleIntervalMs, StaleStreamWatch, type StaleStreamWatchOptions } from './stale-streams.ts';
export { PART_STATES, PartSupervisor, partIsUp, partsReadiness, type PartDefinition, type PartRun, type RoundReports, type PartState, type PartStatus, type PartSupervisorOptions } from './part-supervisor.ts';
