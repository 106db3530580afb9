/**
 * What the console shows of one connection, gathered at each page view: the mirror's report (the
 * same as `status`: src/status/), every webhook endpoint as `webhooks list` shows it with its latest
 * attempts, the runs this daemon finished lately and the ones running now, and the leases it holds.
 * Every text is masked (the deployment's secrets, bearer tokens, webhook secrets) and endpoint URLs
 * lose their query and credentials (`safeUrl`) before anything is rendered or sent as JSON.
 */
import type { WebhookEndpointConfig } from '../config/schema.ts';
import { maskSecrets } from '../logging/mask.ts';
import type { SqlExecutor } from '../mirror/sql/executor.ts';
import type { WebhookEndpointListing } from '../notify/delivery/target-admin.ts';
import { listWebhookEndpoints } from '../notify/webhooks/admin.ts';
import { safeUrl } from '../notify/delivery/sink-delivery.ts';
import { readMirrorReport, type MirrorReport } from '../status/mirror-status.ts';
import type { RecentRuns, FinishedRun } from './recent-runs.ts';

/** One connection as the daemon runs it, for the console (jobs/daemon.ts builds these). */
export interface ConsoleConnection {
  /** The connection's name (`default` without `connections`). */
  name: string;
  /** The connection's mirror (the daemon's own connection to it). */
  executor: SqlExecutor;
  /** The configured webhook endpoints (URL, secrets: the secrets are never shown). */
  webhooks: readonly WebhookEndpointConfig[];
  /** The streams this connection runs (configured `sync.streams`). */
  streams: readonly string[];
  /** The runs this daemon finished lately. */
  runs: RecentRuns;
  /** The streams running now, with why. */
  activeRuns(): { stream: string; reason: string }[];
  /** The leases this daemon holds for the connection (names). */
  heldLeases(): string[];
  /** Called after an action changed an endpoint's state (wakes the webhook delivery). */
  afterAction?(): void;
}

/** What the console shows of one connection. */
export interface ConnectionSnapshot {
  name: string;
  /** The mirror's report; null when it could not be read (`error` says why). */
  report: MirrorReport | null;
  /** Why the mirror could not be read (e.g. PostgreSQL down); null when it was. */
  error: string | null;
  webhooks: WebhookEndpointListing[];
  /** Configured streams. */
  streams: string[];
  /** Per stream, the runs this daemon finished lately, newest first. */
  recentRuns: Record<string, FinishedRun[]>;
  activeRuns: { stream: string; reason: string }[];
  heldLeases: string[];
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
  let error: string | null = null;
  try {
    report = await readMirrorReport(connection.executor, { now });
    webhooks = (await listWebhookEndpoints(connection.executor, { webhooks: connection.webhooks }, { attempts: ATTEMPTS_SHOWN, now })).map((endpoint) => ({
      ...endpoint,
      url: safeUrl(endpoint.url),
    }));
  } catch (caught) {
    error = `the mirror could not be read: ${caught instanceof Error ? caught.message : String(caught)}`;
  }
  const snapshot: ConnectionSnapshot = {
    name: connection.name,
    report,
    error,
    webhooks,
    streams: [...connection.streams],
    recentRuns: Object.fromEntries(connection.streams.map((stream) => [stream, connection.runs.of(stream)])),
    activeRuns: connection.activeRuns(),
    heldLeases: connection.heldLeases(),
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
