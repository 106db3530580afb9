/**
 * What the console shows of one connection, gathered at each page view: the verdict (the same rule
 * as `status`: src/status/verdict.ts), the mirror's report (the same as `status`: src/status/),
 * every webhook endpoint as `webhooks list` shows it with its latest attempts, the runs this daemon
 * finished lately and the ones running now (with a retry streak, when their requests fail), the
 * plots' history, and the leases it holds.
 * Every text is masked (the deployment's secrets, bearer tokens, webhook secrets) and endpoint URLs
 * lose their query and credentials (`safeUrl`) before anything is rendered or sent as JSON.
 */
import type { SinkConfig, WebhookEndpointConfig } from '../config/schema.ts';
import { maskSecrets } from '../logging/mask.ts';
import type { SqlExecutor } from '../mirror/sql/executor.ts';
import type { WebhookEndpointListing } from '../notify/delivery/target-admin.ts';
import { listWebhookEndpoints } from '../notify/webhooks/admin.ts';
import { listSinks } from '../notify/sinks/sink-targets.ts';
import { safeUrl } from '../notify/delivery/sink-delivery.ts';
import { readMirrorReport, type MirrorReport } from '../status/mirror-status.ts';
import { verdictOf, type Verdict } from '../status/verdict.ts';
import type { ConsoleHistory, HistorySnapshot } from './console-history.ts';
import type { RecentRuns, FinishedRun } from './recent-runs.ts';
import type { RunRetries, RunRetrying } from './run-retries.ts';

/** One connection as the daemon runs it, for the console (jobs/daemon.ts builds these). */
export interface ConsoleConnection {
  /** The connection's name (`default` without `connections`). */
  name: string;
  /** The connection's mirror (the daemon's own connection to it). */
  executor: SqlExecutor;
  /** The configured webhook endpoints (URL, secrets: the secrets are never shown). */
  webhooks: readonly WebhookEndpointConfig[];
  /** The configured sinks (docs/sinks.md; their URLs' credentials are never shown). */
  sinks?: readonly SinkConfig[];
  /** The streams this connection runs (configured `sync.streams`). */
  streams: readonly string[];
  /** The runs this daemon finished lately. */
  runs: RecentRuns;
  /** The streams running now, with why. */
  activeRuns(): { stream: string; reason: string }[];
  /** The leases this daemon holds for the connection (names). */
  heldLeases(): string[];
  /** The plots' samples (console-history.ts); absent: no plots. */
  history?: ConsoleHistory;
  /** The retry streaks of the runs in progress (run-retries.ts); absent: none known. */
  retries?: RunRetries;
  /** Called after an action changed an endpoint's state (wakes the webhook delivery). */
  afterAction?(): void;
}

/** What the console shows of one connection. */
export interface ConnectionSnapshot {
  name: string;
  /** One line over the connection (src/status/verdict.ts): `all 5 streams ok`, or what needs a look. */
  verdict: Verdict;
  /** The mirror's report; null when it could not be read (`error` says why). */
  report: MirrorReport | null;
  /** Why the mirror could not be read (e.g. PostgreSQL down); null when it was. */
  error: string | null;
  webhooks: WebhookEndpointListing[];
  /** The sinks as `sinks list` shows them (URLs without credentials); absent or empty when none is configured. */
  sinks?: WebhookEndpointListing[];
  /** Configured streams. */
  streams: string[];
  /** Per stream, the runs this daemon finished lately, newest first. */
  recentRuns: Record<string, FinishedRun[]>;
  /** The runs in progress, with their retry streak when their requests fail. */
  activeRuns: { stream: string; reason: string; retrying?: RunRetrying }[];
  heldLeases: string[];
  /** The plots' samples; null when the daemon keeps none. */
  history: HistorySnapshot | null;
}

/** Attempts shown per endpoint. */
export const ATTEMPTS_SHOWN = 5;

/**
 * Gathers one connection's snapshot. A mirror that cannot be read gives a snapshot with `error`
 * set (the page still shows the other connections), never a throw.
 * @param secrets literal secrets masked wherever they appear (config deploymentSecrets and the keys)
 */
export async function gatherSnapshot(connection: ConsoleConnection, secrets: readonly string[], now: Date = new Date()): Promise<ConnectionSnapshot> {
  let report: MirrorReport | null = null;
  let webhooks: WebhookEndpointListing[] = [];
  let sinks: WebhookEndpointListing[] = [];
  let error: string | null = null;
  try {
    report = await readMirrorReport(connection.executor, { now });
    webhooks = (await listWebhookEndpoints(connection.executor, { webhooks: connection.webhooks }, { attempts: ATTEMPTS_SHOWN, now })).map((endpoint) => ({
      ...endpoint,
      url: safeUrl(endpoint.url),
    }));
    if (connection.sinks && connection.sinks.length > 0) {
      sinks = (await listSinks(connection.executor, connection.sinks, { attempts: ATTEMPTS_SHOWN, now })).map((sink) => ({ ...sink, url: safeUrl(sink.url) }));
    }
  } catch (caught) {
    error = `the mirror could not be read: ${caught instanceof Error ? caught.message : String(caught)}`;
  }
  const streams = report ? report.streams.filter((stream) => connection.streams.includes(stream.stream)) : [];
  const verdict = verdictOf({
    streams,
    endpoints: [...webhooks, ...sinks].filter((endpoint) => endpoint.configured && endpoint.registered).map((endpoint) => ({ ...endpoint, nextAttemptAt: endpoint.pausedUntil })),
    recentFailedWrites: report?.recentFailedWrites ?? 0,
    writesNeedingReview: report?.writes.needs_review ?? 0,
    mirrorError: error,
    now,
  });
  const snapshot: ConnectionSnapshot = {
    name: connection.name,
    verdict,
    report,
    error,
    webhooks,
    sinks,
    streams: [...connection.streams],
    recentRuns: Object.fromEntries(connection.streams.map((stream) => [stream, connection.runs.of(stream)])),
    activeRuns: connection.activeRuns().map((run) => {
      const retrying = connection.retries?.of(run.stream);
      return retrying ? { ...run, retrying } : run;
    }),
    heldLeases: connection.heldLeases(),
    history: connection.history?.snapshot() ?? null,
  };
  return maskStrings(snapshot, secrets);
}

/** A copy of `value` with every string masked (`maskSecrets`). */
function maskStrings<T>(value: T, secrets: readonly string[]): T {
  if (typeof value === 'string') return maskSecrets(value, secrets) as T;
  if (Array.isArray(value)) return value.map((item: unknown) => maskStrings(item, secrets)) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, maskStrings(item, secrets)])) as T;
  }
  return value;
}
