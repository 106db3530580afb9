/**
 * The operator's console (docs/operations.md "Operator console"): a web page on the daemon's HTTP
 * port, behind the read key, showing what `status` and `webhooks list` show under the same verdict,
 * with small plots of lags and requests, and the replay and enable actions behind the write key. The face of src/console/ for jobs/ (jobs/daemon.ts serves it).
 */
export { CONSOLE_ROUTE_SPECS, consoleRoutes, CONSOLE_COOKIE, CONSOLE_SESSION_SECONDS, type ConsoleRoutesOptions } from './console-routes.ts';
export type { ConsoleConnection } from './console-snapshot.ts';
export { RecentRuns, type FinishedRun } from './recent-runs.ts';
export { ConsoleHistory, HISTORY_CAPACITY, HISTORY_SAMPLE_MS, HistorySampler, type HistoryPoint, type HistoryReading, type HistorySnapshot, type HistorySource } from './console-history.ts';
export { RunRetries, type RunRetrying } from './run-retries.ts';
