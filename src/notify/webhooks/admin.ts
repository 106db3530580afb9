/**
 * Webhook administration for the command line (`bizops-sync webhooks list|test|replay`): read and
 * adjust the endpoints' stored delivery state. The CLI wires these into commander; each works on
 * the mirror while the daemon runs (its loops re-read the state every round), through a
 * `SqlExecutor` (src/mirror/sql/executor.ts).
 */
import type { Dispatcher } from 'undici';
import type { WebhookEndpointConfig } from '../../config/schema.ts';
import { maskUrlCredentials } from '../../logging/mask-url.ts';
import type { SqlExecutor } from '../../mirror/sql/executor.ts';
import { DEFAULT_DELIVERY_TIMEOUT_MS, deliverWebhook } from './delivery.ts';
import { readChanges } from '../changelog-reader.ts';
import { insertAttempts, latestAttempts, listAttemptsOfEvent, type WebhookAttempt } from './attempts.ts';
import { enableEndpoint, endpointLag, loadAllEndpoints, undeliveredEvents, loadEndpoint, registerEndpoint, resetCursor } from './endpoint-store.ts';
import { clearFailedDelivery, countFailedDeliveries, listFailedDeliveries, recordReplayFailure } from './failed-deliveries.ts';
import { dropHeldEventsAfter, loadHeldEvents, retryHeldEventsNow } from './held-events.ts';
import { buildTestWebhookMessage, buildWebhookMessage, signerForEndpoint } from './signing.ts';

/** One line of `webhooks list`. Times are ISO 8601. */
export interface WebhookEndpointListing {
  name: string;
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
   * When the endpoint next tries: while it counts as down (a streak of failures), its next new
   * event; otherwise the earliest retry of an event held back. Null when nothing waits.
   */
  nextAttemptAt: string | null;
  lastAttemptAt: string | null;
  lastStatus: number | null;
  lastSuccessAt: string | null;
  lastError: string | null;
  lastErrorAt: string | null;
  deliveredCount: number;
  failedCount: number;
}

/** Options of `listWebhookEndpoints`. */
export interface ListWebhookEndpointsOptions {
  /** How many of each endpoint's latest attempts to include (`recentAttempts`). Default 3. */
  attempts?: number;
  now?: Date;
}

/**
 * Every configured endpoint (in configuration order), then stored endpoints no longer configured,
 * each with its latest attempts. Read-only: works on a read-only connection.
 */
export async function listWebhookEndpoints(
  executor: SqlExecutor,
  config: { webhooks: readonly WebhookEndpointConfig[] },
  options: ListWebhookEndpointsOptions = {},
): Promise<WebhookEndpointListing[]> {
  const now = options.now ?? new Date();
  const stored = new Map((await loadAllEndpoints(executor)).map((state) => [state.name, state]));
  const failed = await countFailedDeliveries(executor);
  const listing: WebhookEndpointListing[] = [];
  const describe = async (name: string, configured: WebhookEndpointConfig | undefined): Promise<WebhookEndpointListing> => {
    const state = stored.get(name);
    const held = state ? await loadHeldEvents(executor, name) : [];
    const lag = state ? await endpointLag(executor, state.deliveredSeq, now, held[0]?.seq) : undefined;
    return {
      name,
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
      lastAttemptAt: state?.lastAttemptAt ?? null,
      lastStatus: state?.lastStatus ?? null,
      lastSuccessAt: state?.lastSuccessAt ?? null,
      lastError: state?.lastError ?? null,
      lastErrorAt: state?.lastErrorAt ?? null,
      deliveredCount: state?.deliveredCount ?? 0,
      failedCount: state?.failedCount ?? 0,
    };
  };
  for (const endpoint of config.webhooks) listing.push(await describe(endpoint.name, endpoint));
  const configuredNames = new Set(config.webhooks.map((endpoint) => endpoint.name));
  for (const name of stored.keys()) if (!configuredNames.has(name)) listing.push(await describe(name, undefined));
  return listing;
}

/** The earliest retry time among held-back events (ISO 8601), or null. */
function earliestRetry(held: readonly { nextAttemptAt: string | null }[]): string | null {
  let earliest: string | null = null;
  for (const event of held) if (event.nextAttemptAt !== null && (earliest === null || event.nextAttemptAt < earliest)) earliest = event.nextAttemptAt;
  return earliest;
}

/** The answer to a test event. */
export interface TestEventResult {
  ok: boolean;
  /** HTTP status, null without an answer. */
  status: number | null;
  durationMs: number;
  /** The webhook-id sent (`test_<uuid>`). */
  webhookId: string;
  /** Why it failed, when it did. */
  error: string | null;
}

/** Options of `sendTestEvent`: the attempt's time limit (ms) and the undici dispatcher to send with. */
export interface SendTestEventOptions {
  /** Default 15000. */
  timeoutMs?: number;
  dispatcher?: Dispatcher;
}

/**
 * Sends one signed `webhook.test` event to an endpoint, once (no retries, no state recorded) and
 * whatever its `events` filter says, so an operator can check the URL and the receiver's signature
 * verification. Same rules as deliveries: only 2xx is ok, redirects are not followed.
 * @throws Error naming the endpoint when its secret is not valid
 */
export async function sendTestEvent(endpoint: WebhookEndpointConfig, options: SendTestEventOptions = {}): Promise<TestEventResult> {
  const signer = signerForEndpoint(endpoint);
  const message = buildTestWebhookMessage(endpoint.name);
  const outcome = await deliverWebhook(endpoint.url, message, signer, {
    timeoutMs: options.timeoutMs ?? DEFAULT_DELIVERY_TIMEOUT_MS,
    ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
  });
  return {
    ok: outcome.ok,
    status: outcome.status,
    durationMs: outcome.durationMs,
    webhookId: message.id,
    error: outcome.ok ? null : outcome.error,
  };
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
export async function replayWebhooks(executor: SqlExecutor, endpoint: string | WebhookEndpointConfig, sinceSeq: number): Promise<ReplayResult> {
  const name = typeof endpoint === 'string' ? endpoint : endpoint.name;
  if (!Number.isSafeInteger(sinceSeq) || sinceSeq < 0) throw new Error(`sinceSeq: must be a non-negative integer seq, got ${String(sinceSeq)}`);
  return executor.transaction(async (tx): Promise<ReplayResult> => {
    const before = (await loadEndpoint(tx, name)) ?? (typeof endpoint === 'string' ? undefined : (await registerEndpoint(tx, endpoint.name, endpoint.url)).state);
    if (!before) throw new Error(`webhook endpoint "${name}" is not registered: check the name (webhooks list), or start the daemon once with it configured`);
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
  if (!before) throw new Error(`webhook endpoint "${name}" is not registered: check the name (webhooks list)`);
  return { name, wasDisabled: before.disabledAt !== null, disabledReason: before.disabledReason, deliveredSeq: before.deliveredSeq };
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

/** Options of `replayFailedWebhooks`. */
export interface ReplayFailedOptions {
  /** Only this endpoint's failed events. */
  endpoint?: string;
  /** Time limit of each attempt, ms. Default 15000. */
  timeoutMs?: number;
  dispatcher?: Dispatcher;
}

/**
 * Re-sends the events endpoints gave up on (`webhook_failed_deliveries`), each once, oldest first
 * per endpoint, with its original webhook-id and body, signed with the endpoint's current
 * secret(s). A 2xx deletes the row; a failure keeps it (attempts + 1, last error). These events
 * arrive after later ones did: receivers order by `data.seq`. Runs beside the daemon (its loops
 * are not involved).
 * @param endpoints the configured endpoints (their URL and secrets)
 * @throws Error when `options.endpoint` names no configured endpoint
 */
export async function replayFailedWebhooks(executor: SqlExecutor, endpoints: readonly WebhookEndpointConfig[], options: ReplayFailedOptions = {}): Promise<FailedReplayOutcome[]> {
  const byName = new Map(endpoints.map((endpoint) => [endpoint.name, endpoint]));
  if (options.endpoint !== undefined && !byName.has(options.endpoint)) {
    throw new Error(`endpoint: no configured endpoint named "${options.endpoint}"; configured: ${endpoints.map((endpoint) => endpoint.name).join(', ') || 'none'}`);
  }
  const outcomes: FailedReplayOutcome[] = [];
  const signers = new Map<string, ReturnType<typeof signerForEndpoint>>();
  for (const failed of await listFailedDeliveries(executor, options.endpoint)) {
    const endpoint = byName.get(failed.endpoint);
    const [event] = await readChanges(executor, { sinceSeq: failed.seq - 1, limit: 1 });
    if (!endpoint || !event || event.seq !== failed.seq) {
      outcomes.push({ endpoint: failed.endpoint, seq: failed.seq, eventId: failed.eventId, result: 'skipped', status: null, error: !endpoint ? 'endpoint not configured' : 'event no longer in the changelog' });
      continue;
    }
    let signer = signers.get(endpoint.name);
    if (!signer) signers.set(endpoint.name, (signer = signerForEndpoint(endpoint)));
    const attemptedAt = new Date().toISOString();
    const outcome = await deliverWebhook(endpoint.url, buildWebhookMessage(event), signer, {
      timeoutMs: options.timeoutMs ?? DEFAULT_DELIVERY_TIMEOUT_MS,
      ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
    });
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
