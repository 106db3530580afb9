/**
 * Administration of the delivery targets, webhook endpoints and sinks alike (`bizops-sync webhooks
 * list|replay|enable|retry|attempts`, `bizops-sync sinks list|replay|enable|retry`, the console's
 * actions): read and adjust their stored delivery state. Each works on the mirror while the daemon
 * runs (its loops re-read the state every round), through a `SqlExecutor`
 * (src/mirror/sql/executor.ts).
 */
import { maskUrlCredentials } from '../../logging/mask-url.ts';
import type { SqlExecutor } from '../../mirror/sql/executor.ts';
import { readChanges } from '../changelog-reader.ts';
import { insertAttempts, latestAttempts, listAttemptsOfEvent, type WebhookAttempt } from './attempts.ts';
import { enableEndpoint, endPause, endpointLag, loadAllEndpoints, undeliveredEvents, loadEndpoint, registerEndpoint, resetCursor, WEBHOOK_KIND } from './endpoint-store.ts';
import { clearFailedDelivery, countFailedDeliveries, listFailedDeliveries, recordReplayFailure } from './failed-deliveries.ts';
import { dropHeldEventsAfter, loadHeldEvents, retryHeldEventsNow } from './held-events.ts';
import type { SinkSender } from './sink-kind.ts';

/** What the listing needs of a configured target (a webhook endpoint's or a sink's configuration). */
export interface ConfiguredTarget {
  name: string;
  /** Its URL as shown (a sink's without its password). */
  url: string;
  events: readonly string[];
  ordering?: 'record' | 'endpoint';
  maxInFlight?: number;
}

/** One line of `webhooks list` or `sinks list`. Times are ISO 8601. */
export interface WebhookEndpointListing {
  name: string;
  /** `webhook`, or the sink's kind (`nats`, `rabbitmq`, `redis-stream`). */
  kind: string;
  /**
   * The configured URL (the stored one for an endpoint no longer configured), its credentials
   * masked: user, password, query values, fragment (`maskUrlCredentials`).
   */
  url: string;
  /** In the configuration (delivered to); false for a stored endpoint that was removed from it. */
  configured: boolean;
  /** Has a row in the database (false until the daemon first starts with it). */
  registered: boolean;
  /** False after a 410 Gone or failing for disableAfterDays (see disabledReason) until `webhooks enable` or a replay. */
  enabled: boolean;
  disabledAt: string | null;
  disabledReason: string | null;
  /** `gone` (410) or `failing`; null while enabled. */
  disabledKind: 'gone' | 'failing' | null;
  /** First failed attempt since the last 2xx; null while the endpoint answers. */
  failingSince: string | null;
  /** Events given up on after the retry schedule and not yet re-sent (`webhooks replay --failed`). */
  failedEvents: number;
  /** Events held back behind a failing event of their record (retried on the schedule). */
  heldEvents: number;
  /** `record` (events of one record in order, records in parallel) or `endpoint` (strict order); null when not configured. */
  ordering: 'record' | 'endpoint' | null;
  /** Requests in flight at once; null when not configured. */
  maxInFlight: number | null;
  /** The latest attempts (newest first, at most `attempts` of `listWebhookEndpoints`). */
  recentAttempts: WebhookAttempt[];
  /** Event type patterns from the configuration; null when not configured. */
  events: string[] | null;
  /** The cursor: last changes.seq delivered or skipped; null when not registered. */
  deliveredSeq: number | null;
  /** MAX(changes.seq) − deliveredSeq, plus the events held back; 0 when not registered (it will start at the end). */
  lagEvents: number;
  /** now − occurred_at of the oldest undelivered event, seconds. */
  lagSeconds: number;
  /** Failed attempts in a row, any event, since the last 2xx (a stuck endpoint keeps counting). */
  consecutiveFailures: number;
  /**
   * When the endpoint next tries: while it counts as down (a streak of failures), its next probe;
   * otherwise the earliest retry of an event held back. Null when nothing waits.
   */
  nextAttemptAt: string | null;
  /** Until when the endpoint, taken for down, sends nothing but its next probe; null when not paused (`webhooks retry` ends it). */
  pausedUntil: string | null;
  lastAttemptAt: string | null;
  lastStatus: number | null;
  lastSuccessAt: string | null;
  lastError: string | null;
  lastErrorAt: string | null;
  deliveredCount: number;
  failedCount: number;
}

/** Options of `listWebhookEndpoints` and `listDeliveryTargets`. */
export interface ListWebhookEndpointsOptions {
  /** How many of each endpoint's latest attempts to include (`recentAttempts`). Default 3. */
  attempts?: number;
  now?: Date;
}

/**
 * Every configured target (in configuration order), then stored targets of the same family no
 * longer configured (`webhook` rows for endpoints, the other kinds for sinks), each with its latest
 * attempts. Read-only: works on a read-only connection.
 * @param family `webhooks` or `sinks`: which stored rows belong to the listing
 * @param kindOf the kind of a configured target (a sink's `kind`; `webhook` for endpoints)
 */
export async function listDeliveryTargets(
  executor: SqlExecutor,
  family: 'webhooks' | 'sinks',
  configuredTargets: readonly ConfiguredTarget[],
  kindOf: (name: string) => string,
  options: ListWebhookEndpointsOptions = {},
): Promise<WebhookEndpointListing[]> {
  const now = options.now ?? new Date();
  const inFamily = (kind: string) => (family === 'webhooks' ? kind === WEBHOOK_KIND : kind !== WEBHOOK_KIND);
  const stored = new Map((await loadAllEndpoints(executor)).filter((state) => inFamily(state.kind)).map((state) => [state.name, state]));
  const failed = await countFailedDeliveries(executor);
  const listing: WebhookEndpointListing[] = [];
  const describe = async (name: string, configured: ConfiguredTarget | undefined): Promise<WebhookEndpointListing> => {
    const state = stored.get(name);
    const held = state ? await loadHeldEvents(executor, name) : [];
    const lag = state ? await endpointLag(executor, state.deliveredSeq, now, held[0]?.seq) : undefined;
    return {
      name,
      kind: configured ? kindOf(name) : (state?.kind ?? WEBHOOK_KIND),
      url: maskUrlCredentials(configured?.url ?? state?.url ?? ''),
      configured: configured !== undefined,
      registered: state !== undefined,
      enabled: state === undefined || state.disabledAt === null,
      disabledAt: state?.disabledAt ?? null,
      disabledReason: state?.disabledReason ?? null,
      disabledKind: state?.disabledKind ?? null,
      failingSince: state?.failingSince ?? null,
      failedEvents: failed.get(name) ?? 0,
      heldEvents: held.length,
      ordering: configured ? (configured.ordering ?? 'record') : null,
      maxInFlight: configured ? (configured.ordering === 'endpoint' ? 1 : (configured.maxInFlight ?? 16)) : null,
      recentAttempts: state ? await latestAttempts(executor, name, options.attempts ?? 3) : [],
      events: configured ? [...configured.events] : null,
      deliveredSeq: state?.deliveredSeq ?? null,
      lagEvents: state && lag ? undeliveredEvents(lag, state.deliveredSeq, held) : 0,
      lagSeconds: lag?.lagSeconds ?? 0,
      consecutiveFailures: state?.consecutiveFailures ?? 0,
      nextAttemptAt: state?.nextAttemptAt ?? earliestRetry(held),
      pausedUntil: state?.nextAttemptAt ?? null,
      lastAttemptAt: state?.lastAttemptAt ?? null,
      lastStatus: state?.lastStatus ?? null,
      lastSuccessAt: state?.lastSuccessAt ?? null,
      lastError: state?.lastError ?? null,
      lastErrorAt: state?.lastErrorAt ?? null,
      deliveredCount: state?.deliveredCount ?? 0,
      failedCount: state?.failedCount ?? 0,
    };
  };
  for (const target of configuredTargets) listing.push(await describe(target.name, target));
  const configuredNames = new Set(configuredTargets.map((target) => target.name));
  for (const name of stored.keys()) if (!configuredNames.has(name)) listing.push(await describe(name, undefined));
  return listing;
}

/** The earliest retry time among held-back events (ISO 8601), or null. */
function earliestRetry(held: readonly { nextAttemptAt: string | null }[]): string | null {
  let earliest: string | null = null;
  for (const event of held) if (event.nextAttemptAt !== null && (earliest === null || event.nextAttemptAt < earliest)) earliest = event.nextAttemptAt;
  return earliest;
}

/** What a replay changed. */
export interface ReplayResult {
  name: string;
  previousDeliveredSeq: number;
  deliveredSeq: number;
  /** True when the endpoint had been disabled (410 Gone, or failing for disableAfterDays) and is enabled again. */
  reenabled: boolean;
  /** How many changelog events now lie after the cursor (before the endpoint's filter). */
  eventsToResend: number;
}

/**
 * Moves an endpoint's cursor back so that delivery re-sends every event with seq greater than
 * `sinceSeq` (exclusive, like every changelog cursor: `--since 0` re-sends the whole history).
 * Also clears the backoff and re-enables a disabled endpoint (410 Gone, or failing too long). A running dispatcher
 * picks it up within its poll interval.
 *
 * Re-sent events keep their webhook-id (the event_id): receivers that deduplicate will recognise
 * them, which makes a replay safe; a receiver that wants them processed again must forget those ids.
 *
 * @param endpoint the endpoint's name, or its configuration (which also registers an endpoint the
 *   daemon has not started with yet)
 * @param sinceSeq a seq at or before the endpoint's cursor (`sinceSeq` equal to the cursor only re-enables)
 * The check of the cursor and its move happen in one transaction.
 * @throws Error when `sinceSeq` is not a non-negative integer, is ahead of the cursor, or the
 *   endpoint is unknown (the promise rejects; nothing changed)
 */
export async function replayWebhooks(executor: SqlExecutor, endpoint: string | { name: string; url: string; kind?: string }, sinceSeq: number): Promise<ReplayResult> {
  const name = typeof endpoint === 'string' ? endpoint : endpoint.name;
  if (!Number.isSafeInteger(sinceSeq) || sinceSeq < 0) throw new Error(`sinceSeq: must be a non-negative integer seq, got ${String(sinceSeq)}`);
  return executor.transaction(async (tx): Promise<ReplayResult> => {
    const before = (await loadEndpoint(tx, name)) ?? (typeof endpoint === 'string' ? undefined : (await registerEndpoint(tx, endpoint.name, endpoint.url, new Date(), endpoint.kind ?? WEBHOOK_KIND)).state);
    if (!before) throw new Error(`"${name}" is not registered: check the name (webhooks list, sinks list), or start the daemon once with it configured`);
    if (sinceSeq > before.deliveredSeq) {
      throw new Error(`sinceSeq: ${sinceSeq} is ahead of endpoint "${name}"'s cursor (${before.deliveredSeq}); replay only moves the cursor back`);
    }
    await resetCursor(tx, name, sinceSeq);
    // Events held back after the seq are sent again in order with the rest.
    await dropHeldEventsAfter(tx, name, sinceSeq);
    return {
      name,
      previousDeliveredSeq: before.deliveredSeq,
      deliveredSeq: sinceSeq,
      reenabled: before.disabledAt !== null,
      eventsToResend: (await endpointLag(tx, sinceSeq)).lagEvents,
    };
  });
}

/** What `enableWebhookEndpoint` changed. */
export interface EnableResult {
  name: string;
  /** False when the endpoint was already enabled (its backoff and failure streak are cleared anyway). */
  wasDisabled: boolean;
  /** Why it had been disabled. */
  disabledReason: string | null;
  /** The cursor it resumes after: the event that was failing comes next. */
  deliveredSeq: number;
}

/**
 * Re-enables an endpoint disabled by a 410 Gone or by failing for `disableAfterDays`, where its
 * cursor stands, and clears its backoff and failure streak; its held-back events are tried again at once. A running dispatcher resumes within
 * its poll interval.
 * @throws Error when the endpoint is not registered (the promise rejects)
 */
export async function enableWebhookEndpoint(executor: SqlExecutor, name: string): Promise<EnableResult> {
  const before = await executor.transaction(async (tx) => {
    const state = await enableEndpoint(tx, name);
    // The events held back are tried again at once, their schedules starting over.
    if (state) await retryHeldEventsNow(tx, name);
    return state;
  });
  if (!before) throw new Error(`"${name}" is not registered: check the name (webhooks list, sinks list)`);
  return { name, wasDisabled: before.disabledAt !== null, disabledReason: before.disabledReason, deliveredSeq: before.deliveredSeq };
}

/** What `retryTargetNow` did. */
export interface RetryNowResult {
  name: string;
  /** The pause it ended (ISO 8601), null when the endpoint was not paused (its held events are due at once all the same). */
  pausedUntil: string | null;
  /** Failed attempts in a row when asked: at the streak's length the next event is a probe. */
  consecutiveFailures: number;
}

/**
 * Ends a target's pause now (`webhooks retry NAME`, `sinks retry NAME`, the console's "Retry now"):
 * its next event goes out at once as a probe, and its held events are due at once, their attempts
 * kept. A running dispatcher picks it up within its poll interval. A 2xx (an acknowledgement) ends
 * the streak and everything flows again; a failure pauses it again for as long as its failing time
 * says.
 * @throws Error when the target is not registered, or is disabled (`webhooks enable`, `sinks enable` re-enable it)
 */
export async function retryTargetNow(executor: SqlExecutor, name: string): Promise<RetryNowResult> {
  const before = await endPause(executor, name);
  const command = before?.kind === undefined || before.kind === WEBHOOK_KIND ? 'webhooks' : 'sinks';
  if (!before) throw new Error(`"${name}" is not registered: check the name (webhooks list, sinks list)`);
  if (before.disabledAt !== null) throw new Error(`"${name}" is disabled (${before.disabledReason ?? 'no reason kept'}): re-enable it with ${command} enable ${name}`);
  return { name, pausedUntil: before.nextAttemptAt, consecutiveFailures: before.consecutiveFailures };
}

/** The outcome of re-sending one failed event (`replayFailedWebhooks`). */
export interface FailedReplayOutcome {
  endpoint: string;
  seq: number;
  eventId: string;
  /** `delivered` (2xx: the row is deleted), `failed` (kept, attempts + 1), `skipped` (endpoint not configured, or the event no longer in the changelog). */
  result: 'delivered' | 'failed' | 'skipped';
  status: number | null;
  error: string | null;
}

/**
 * Re-sends the events targets gave up on (`webhook_failed_deliveries`), each once, oldest first
 * per target, with its original id and body, through the target's sender (a webhook signed with the
 * endpoint's current secret(s); a sink published). A success deletes the row; a failure keeps it
 * (attempts + 1, last error). These events arrive after later ones did: receivers order by
 * `data.seq`. Runs beside the daemon (its loops are not involved).
 * @param family `webhooks` or `sinks`: only the rows of that family's targets (by their stored kind)
 * @param senders the configured targets' senders, by name
 * @param only only this target's failed events
 */
export async function replayFailedDeliveries(executor: SqlExecutor, family: 'webhooks' | 'sinks', senders: ReadonlyMap<string, SinkSender>, only?: string): Promise<FailedReplayOutcome[]> {
  const outcomes: FailedReplayOutcome[] = [];
  const signal = new AbortController().signal;
  const kinds = new Map((await loadAllEndpoints(executor)).map((state) => [state.name, state.kind]));
  for (const failed of await listFailedDeliveries(executor, only)) {
    const kind = kinds.get(failed.endpoint) ?? WEBHOOK_KIND;
    if ((family === 'webhooks') !== (kind === WEBHOOK_KIND)) continue;
    const sender = senders.get(failed.endpoint);
    const [event] = await readChanges(executor, { sinceSeq: failed.seq - 1, limit: 1 });
    if (!sender || !event || event.seq !== failed.seq) {
      outcomes.push({ endpoint: failed.endpoint, seq: failed.seq, eventId: failed.eventId, result: 'skipped', status: null, error: !sender ? `${family === 'webhooks' ? 'endpoint' : 'sink'} not configured` : 'event no longer in the changelog' });
      continue;
    }
    const attemptedAt = new Date().toISOString();
    const outcome = await sender.send(event, signal);
    await insertAttempts(executor, [
      {
        endpoint: failed.endpoint,
        seq: failed.seq,
        eventId: failed.eventId,
        type: failed.type,
        attempt: failed.attempts + 1,
        attemptedAt,
        outcome: outcome.ok ? 'delivered' : outcome.gone ? 'gone' : 'failed',
        status: outcome.status,
        latencyMs: outcome.durationMs,
        error: outcome.ok ? null : outcome.error,
        response: outcome.response,
      },
    ]);
    if (outcome.ok) {
      await clearFailedDelivery(executor, failed.endpoint, failed.seq);
      outcomes.push({ endpoint: failed.endpoint, seq: failed.seq, eventId: failed.eventId, result: 'delivered', status: outcome.status, error: null });
    } else {
      await recordReplayFailure(executor, failed.endpoint, failed.seq, outcome.status, outcome.error);
      outcomes.push({ endpoint: failed.endpoint, seq: failed.seq, eventId: failed.eventId, result: 'failed', status: outcome.status, error: outcome.error });
    }
  }
  return outcomes;
}

/**
 * Every kept attempt of one event at every endpoint (`webhooks attempts EVENT_ID`), by endpoint then
 * time. Empty when the event was never attempted, or its attempts are older than the retention.
 * @throws Error naming `EVENT_ID` when it is not an event id (`evt_...`, or `test_...` for a test event)
 */
export async function listEventAttempts(executor: SqlExecutor, eventId: string): Promise<WebhookAttempt[]> {
  if (!/^(evt|test)_[0-9a-f-]{8,}$/i.test(eventId)) throw new Error(`EVENT_ID: "${eventId}" is not an event id; expected evt_ followed by a UUID (the webhook-id header, or event_id in changes)`);
  return listAttemptsOfEvent(executor, eventId);
}
