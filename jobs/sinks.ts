/**
 * Jobs of sink administration (the `sinks list|replay|enable|retry` commands, docs/sinks.md). Wiring
 * only: src/notify/sinks/ and the delivery core's administration do the work, on the mirror while
 * the daemon runs.
 */
import type { Config } from '../src/config/index.ts';
import { enableWebhookEndpoint, replayWebhooks, retryTargetNow, type EnableResult, type FailedReplayOutcome, type ReplayResult, type RetryNowResult, type WebhookEndpointListing } from '../src/notify/delivery/index.ts';
import { listSinks, replayFailedSinks } from '../src/notify/sinks/index.ts';
import type { SqlConnection } from '../src/mirror/index.ts';
import { openExistingMirror } from './open-mirror.ts';

const NO_MIRROR_HINT = 'start `bizops-sync daemon` (or run `bizops-sync backfill`) first';

async function withMirror<T>(config: Config, options: { readonly?: boolean }, work: (connection: SqlConnection) => Promise<T>): Promise<T> {
  const connection = await openExistingMirror(config.dbPath, { ...options, hint: NO_MIRROR_HINT });
  try {
    return await work(connection);
  } finally {
    await connection.close();
  }
}

/** Every sink with its cursor, lag, last error and its latest `attempts` attempts (`sinks list`). @throws Error when the mirror does not exist */
export function listSinksJob(config: Config, attempts = 3): Promise<WebhookEndpointListing[]> {
  return withMirror(config, { readonly: true }, (connection) => listSinks(connection, config.sinks, { attempts }));
}

/**
 * Moves a sink's cursor back to `sinceSeq` (`sinks replay --sink NAME --since SEQ`).
 * @throws Error when the mirror does not exist, the sink is unknown, or `sinceSeq` is ahead of its cursor
 */
export function replaySinkJob(config: Config, name: string, sinceSeq: number): Promise<ReplayResult> {
  const sink = config.sinks.find((candidate) => candidate.name === name);
  return withMirror(config, {}, (connection) => replayWebhooks(connection, sink ? { name: sink.name, url: sink.url!, kind: sink.kind } : name, sinceSeq));
}

/** Re-publishes the events sinks gave up on (`sinks replay --failed`). @throws Error when the mirror does not exist or `name` is not configured */
export function replayFailedSinksJob(config: Config, name?: string): Promise<FailedReplayOutcome[]> {
  return withMirror(config, {}, (connection) => replayFailedSinks(connection, config.sinks, name));
}

/** Re-enables a disabled sink where its cursor stands (`sinks enable NAME`). @throws Error when the mirror does not exist or the sink is not registered */
export function enableSinkJob(config: Config, name: string): Promise<EnableResult> {
  return withMirror(config, {}, (connection) => enableWebhookEndpoint(connection, name));
}

/** Ends a paused sink's pause now (`sinks retry NAME`). @throws Error when the mirror does not exist, the sink is not registered, or it is disabled */
export function retrySinkJob(config: Config, name: string): Promise<RetryNowResult> {
  return withMirror(config, {}, (connection) => retryTargetNow(connection, name));
}
