/**
 * The delivery dispatcher, the face of the delivery core: delivers the changelog (`changes`,
 * docs/mirror.md) to every delivery target, each a webhook endpoint (docs/webhooks.md) or a sink of
 * another kind (docs/sinks.md: NATS JetStream, RabbitMQ, Redis Streams). Spec §6 leaves outbound
 * events unspecified. A target's kind only sends one event (`SinkSender`, sink-kind.ts); everything
 * below is the core's, the same for every kind. "Endpoint" in this folder means any target.
 *
 * Guarantees, per target (the loop itself: sink-delivery.ts):
 *   - At-least-once: the durable cursor (`webhook_endpoints.delivered_seq`) moves past an event only
 *     once it is delivered (2xx), filtered out, given up on, or held back in `webhook_held_events`
 *     (written in the same transaction). A crash re-sends at most the events that were in flight or
 *     waiting in memory, with the same `webhook-id` (the event's `event_id`): receivers deduplicate on it.
 *   - By record, in parallel: up to `maxInFlight` requests at once (default 16); the events of one
 *     record (stream and id) go one at a time in changelog order and never overtake each other. A
 *     failing event holds back only the later events of its record; it is retried on the retry
 *     schedule and, after its last attempt (`maxAttempts`, 8 with the Standard Webhooks schedule,
 *     about 27 h), recorded in `webhook_failed_deliveries` (`webhooks replay --failed` re-sends it)
 *     and its record moves on. `ordering: 'endpoint'` keeps the strict order of the whole endpoint
 *     (one request at a time; a failing event holds back every later one).
 *   - Every attempt is kept (attempts.ts: time, status, latency, the answer's first 1 KiB).
 *   - An endpoint without a 2xx for `disableAfterDays` (per endpoint, default 5) is disabled and a
 *     `webhook.endpoint_disabled` change is appended, which the other endpoints receive.
 *   - Independent: one loop per endpoint, so a dead or slow endpoint never holds up another, nor
 *     the caller (the sync only calls `notify()`, which returns at once).
 *   - 410 Gone disables the endpoint at once (also with a `webhook.endpoint_disabled` change).
 *     A disabled endpoint waits until `webhooks enable`, `webhooks replay` or a new configured URL.
 *   - Events the endpoint's `events` filter excludes are skipped by advancing the cursor.
 *   - An endpoint configured for the first time starts at the current end of the changelog; it
 *     receives changes from then on (`webhooks replay` delivers history). See endpoint-store.ts.
 *
 * Each loop wakes on `notify()` (the sync just committed changes), on PostgreSQL also on the
 * notification of every commit that appended changes (any process: src/notify/changelog-reader.ts
 * `listenForChanges`), and otherwise polls every `pollMs`, so changes written by another process
 * are picked up too. All state lives in the
 * mirror (read and written through a `SqlExecutor`, src/mirror/sql/executor.ts): the loops re-read
 * it every round, so a `webhooks replay` run from the CLI takes effect in the running daemon. Run
 * one dispatcher per mirror: two would both deliver (still at-least-once, but duplicated). The
 * daemon runs one only while it holds the mirror's `webhooks` lease (src/mirror/leases.ts) and gives
 * it the lease's `fence`: every cursor move then confirms the fence in its own transaction, so a
 * dispatcher that lost the lease (paused past it) stops before it moves a cursor again; and
 * `mayDeliver`, asked right before each request leaves, so a holder whose lease lapsed (paused past
 * it, even before anyone took it over) sends nothing more.
 */
import { DEFAULT_WEBHOOK_DISABLE_AFTER_DAYS } from '../../config/schema.ts';
import { silentLogger, type Logger } from '../../logging/logger.ts';
import type { Listening, SqlExecutor } from '../../mirror/sql/executor.ts';
import { listenForChanges } from '../changelog-reader.ts';
import { compileEventFilter } from '../event-filter/index.ts';
import { EndpointDelivery, safeUrl, type DeliveryEnvironment, type WebhookOrdering } from './sink-delivery.ts';
import { endpointLag, forgetStoredCredentials, loadEndpoint, registerEndpoint, undeliveredEvents } from './endpoint-store.ts';
import { countFailedDeliveries } from './failed-deliveries.ts';
import { loadHeldEvents } from './held-events.ts';
import { DEFAULT_PROBE_INTERVALS, DEFAULT_WEBHOOK_RETRY_SCHEDULE, validateSchedule, type ProbeIntervals, type WebhookRetrySchedule } from './retry-schedule.ts';
import type { SinkSender } from './sink-kind.ts';
import { snapshotStreams } from '../snapshot.ts';

export { safeUrl } from './sink-delivery.ts';

/** Requests in flight per endpoint unless its `maxInFlight` says otherwise. */
export const DEFAULT_MAX_IN_FLIGHT = 16;

/**
 * One delivery target: a webhook endpoint (src/notify/webhooks/ `webhookTargets`) or a sink
 * (src/notify/sinks/ `sinkTargets`), with the sender of its kind.
 */
export interface DeliveryTarget {
  /** Unique among every target of the dispatcher (webhook endpoints and sinks share one name space). */
  name: string;
  /** `webhook`, or the sink's kind (`nats`, `rabbitmq`, `redis-stream`). */
  kind: string;
  /** Where its configuration lives, for error messages: `webhooks` or `sinks`. */
  configKey: 'webhooks' | 'sinks';
  /** The URL the mirror keeps and operators see; a sink's without its password. */
  url: string;
  /** Event type patterns (`deal.*`, `deal.won`, `*`). */
  events: readonly string[];
  /** Disabled after failing this long without a success, days. Default 5. */
  disableAfterDays?: number;
  /** Events in flight at once, each of a different record. Default 16. */
  maxInFlight?: number;
  /** `record` (default) or `endpoint` (strict order, one at a time). */
  ordering?: WebhookOrdering;
  /** Where it starts when it is new: `end` (default: the changelog's end) or `snapshot` (src/notify/snapshot.ts). */
  initial?: 'end' | 'snapshot';
  sender: SinkSender;
}

/** Construction options of a DeliveryDispatcher; validated by its constructor (which throws naming the option). */
export interface DeliveryDispatcherOptions {
  /**
   * The mirror. Prefer a connection of its own (`sqliteConnection(openMirror(path))`), not the one
   * the sync holds transactions on. The dispatcher does not close it (see `release`).
   */
  connection: SqlExecutor;
  /**
   * Run once, last, by `stop()`: closes what was opened for this dispatcher alone (the daemon's own
   * connection to the mirror). A dispatcher whose `start()` failed is stopped to release it.
   */
  release?: () => Promise<void>;
  /** The targets: webhook endpoints and sinks (names unique across both). */
  targets: readonly DeliveryTarget[];
  logger?: Logger;
  /** How often each idle loop looks for new changes (written by another process), ms. Default 1000. */
  pollMs?: number;
  /** Retry delays after 1, 2, … consecutive failures, ms; the last repeats. Default: the Standard Webhooks schedule. */
  scheduleMs?: readonly number[];
  /** Jitter as a fraction of each delay (± this much). Default 0.1. */
  jitterRatio?: number;
  /** Cap on a receiver's Retry-After, ms. Default 24 h. */
  maxRetryAfterMs?: number;
  /** Random source for jitter (tests). */
  random?: () => number;
  /** On `stop()`, how long an in-flight request may finish before it is aborted, ms. Default 2000. */
  stopGraceMs?: number;
  /** Changes read per query, per endpoint (at most the 2,000 events a loop keeps in memory). Default 1000. */
  batchSize?: number;
  /**
   * How often a target that is down is probed, by how long it has been failing (retry-schedule.ts
   * `probeDelayMs`). Default: from the retry schedule's first retry delay to six times it (5 s to
   * 30 s with the Standard Webhooks schedule; a test's scaled-down schedule scales them too).
   */
  probeIntervals?: ProbeIntervals;
  /** Called after every attempt (for metrics: counters, latency histograms). Must not throw. */
  onAttempt?: (attempt: WebhookAttemptRecord) => void;
  /** Attempts per event before it is given up on (recorded as failed; its record moves on). Default: `scheduleMs.length` (8). */
  maxAttempts?: number;
  /** The clock of retry times, failure streaks and disabling (tests move it forward). Default: the system clock. */
  now?: () => Date;
  /**
   * Run first inside the transaction of every write the dispatcher makes (cursor moves, failures,
   * disabling, registering), with that transaction's executor: throws `LeaseLostError` when this
   * dispatcher may no longer write (the daemon's `confirmLease` of the `webhooks` lease). The write
   * rolls back and every loop ends. Default: none (one dispatcher per mirror is the caller's care).
   */
  fence?: (tx: SqlExecutor) => Promise<void>;
  /**
   * Asked right before each request leaves: false sends nothing now (the loops ask again shortly).
   * The daemon answers whether the `webhooks` lease is known to be unexpired (src/mirror/leases.ts
   * `leaseKnownValid`). Default: always true.
   */
  mayDeliver?: () => boolean;
}

/** One delivery attempt, for metrics. */
export interface WebhookAttemptRecord {
  endpoint: string;
  /** `webhook` or the sink's kind. */
  kind: string;
  seq: number;
  type: string;
  ok: boolean;
  /** HTTP status, null without an answer. */
  status: number | null;
  durationMs: number;
}

/** Per-endpoint figures for metrics and status. */
export interface WebhookEndpointStats {
  name: string;
  /** `webhook` or the sink's kind. */
  kind: string;
  enabled: boolean;
  /** Events delivered with a 2xx by this dispatcher since `start()`. */
  deliveries: number;
  /** Failed attempts by this dispatcher since `start()`. */
  failures: number;
  /** The endpoint's cursor (every event at or below it delivered, skipped, given up on or held back). */
  deliveredSeq: number;
  /** MAX(changes.seq) − deliveredSeq, plus the events held back. */
  lagEvents: number;
  /** now − occurred_at of the oldest undelivered event (held back or after the cursor), seconds (0 when caught up). */
  lagSeconds: number;
  /** Failed attempts in a row, any event, since the last 2xx. */
  consecutiveFailures: number;
  /** Events given up on and not yet re-sent (`webhook_failed_deliveries`). */
  failedEvents: number;
  /** Events held back behind a failing event of their record (`webhook_held_events`). */
  heldEvents: number;
  /** Requests in flight now (0 when this dispatcher does not deliver). */
  inFlight: number;
  /** Why the endpoint is disabled (`gone`: 410, `failing`: no 2xx for disableAfterDays); null while enabled. */
  disabledKind: 'gone' | 'failing' | null;
  /** Until when the target, taken for down, sends nothing but its next probe (ISO 8601); null when it is not paused. */
  pausedUntil: string | null;
}

const DAY_MS = 86_400_000;

/**
 * Delivers the changelog to the targets (see the module comment for the guarantees). Usage in the
 * daemon (jobs/context.ts):
 *
 *     const dispatcher = new DeliveryDispatcher({ connection, targets: [...webhookTargets(config.webhooks, http), ...await sinkTargets(config.sinks)], logger });
 *     await dispatcher.start();
 *     // after each sync transaction that appended changes:
 *     dispatcher.notify();
 *     // metrics: await dispatcher.stats(); on SIGTERM:
 *     await dispatcher.stop();
 */
export class DeliveryDispatcher {
  readonly #connection: SqlExecutor;
  readonly #release: (() => Promise<void>) | undefined;
  readonly #logger: Logger;
  readonly #pollMs: number;
  readonly #stopGraceMs: number;
  readonly #fence: ((tx: SqlExecutor) => Promise<void>) | undefined;
  readonly #endpoints: EndpointDelivery[];
  readonly #loops: Promise<void>[] = [];
  /** Aborted by stop(): ends the loops' waits. */
  readonly #stopRequested = new AbortController();
  /** Aborted after the grace period of stop(): cancels requests still in flight. */
  readonly #abortInFlight = new AbortController();
  #state: 'new' | 'starting' | 'running' | 'stopped' = 'new';
  /** The PostgreSQL notifications waking the loops (none on SQLite). */
  #listening: Listening | undefined;

  /**
   * Validates every target (unique name, event patterns, maxInFlight, ordering) without touching
   * the network or the database.
   * @throws Error naming the option or the target's field and the rule
   */
  constructor(options: DeliveryDispatcherOptions) {
    this.#connection = options.connection;
    this.#release = options.release;
    this.#logger = (options.logger ?? silentLogger).child({ component: 'delivery' });
    this.#pollMs = positive(options.pollMs ?? 1000, 'pollMs');
    this.#stopGraceMs = nonNegative(options.stopGraceMs ?? 2000, 'stopGraceMs');
    const batchSize = positive(options.batchSize ?? 1000, 'batchSize');
    const jitterRatio = options.jitterRatio ?? DEFAULT_WEBHOOK_RETRY_SCHEDULE.jitterRatio;
    if (!(jitterRatio >= 0 && jitterRatio <= 1)) throw new Error(`jitterRatio: must be between 0 and 1, got ${String(jitterRatio)}`);
    const retrySchedule: WebhookRetrySchedule = {
      scheduleMs: validateSchedule(options.scheduleMs ?? DEFAULT_WEBHOOK_RETRY_SCHEDULE.scheduleMs),
      jitterRatio,
      maxRetryAfterMs: nonNegative(options.maxRetryAfterMs ?? DEFAULT_WEBHOOK_RETRY_SCHEDULE.maxRetryAfterMs, 'maxRetryAfterMs'),
      random: options.random ?? DEFAULT_WEBHOOK_RETRY_SCHEDULE.random,
    };
    const onAttempt = options.onAttempt;
    const maxAttempts = positive(options.maxAttempts ?? retrySchedule.scheduleMs.length, 'maxAttempts');
    const now = options.now ?? (() => new Date());
    this.#fence = options.fence;
    const mayDeliver = options.mayDeliver ?? (() => true);
    const environment: DeliveryEnvironment = {
      connection: this.#connection,
      logger: this.#logger,
      pollMs: this.#pollMs,
      batchSize,
      retrySchedule,
      probeIntervals: options.probeIntervals ?? probeIntervalsOf(retrySchedule.scheduleMs),
      maxAttempts,
      now,
      write: (work) => this.#write(work),
      mayDeliver,
      report: (attempt) => {
        try {
          onAttempt?.(attempt);
        } catch (error) {
          this.#logger.error({ err: error }, 'webhook onAttempt callback threw');
        }
      },
      stopSignal: this.#stopRequested.signal,
      abortSignal: this.#abortInFlight.signal,
      notifyAll: () => this.notify(),
    };
    const names = new Set<string>();
    this.#endpoints = options.targets.map((target) => {
      const key = `${target.configKey}.${target.name}`;
      if (names.has(target.name)) throw new Error(`${target.configKey}: ${target.configKey === 'webhooks' ? 'endpoint' : 'sink'} name "${target.name}" appears twice; names are unique across webhooks and sinks`);
      names.add(target.name);
      const ordering: WebhookOrdering = target.ordering ?? 'record';
      if (ordering !== 'record' && ordering !== 'endpoint') throw new Error(`${key}.ordering: must be "record" or "endpoint", got ${String(ordering)}`);
      const maxInFlight = target.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
      if (!Number.isInteger(maxInFlight) || maxInFlight < 1) throw new Error(`${key}.maxInFlight: must be a positive integer, got ${String(maxInFlight)}`);
      return new EndpointDelivery(
        {
          name: target.name,
          kind: target.kind,
          url: target.url,
          filter: compileEventFilter(target.events, `${key}.events`),
          sender: target.sender,
          disableAfterMs: positive(target.disableAfterDays ?? DEFAULT_WEBHOOK_DISABLE_AFTER_DAYS, `${key}.disableAfterDays`) * DAY_MS,
          maxInFlight: ordering === 'endpoint' ? 1 : maxInFlight,
          ordering,
          initial: target.initial ?? 'end',
        },
        environment,
      );
    });
  }

  /**
   * Registers the endpoints in the database (a new one starts at the current end of the changelog)
   * and starts one delivery loop per endpoint. Resolves once the endpoints are registered and the
   * loops started (it does not wait for deliveries).
   * @throws Error when called twice or after stop(), or when the database cannot be written
   */
  async start(): Promise<void> {
    if (this.#state !== 'new') throw new Error(`${this.constructor.name}.start: already ${this.#state}`);
    this.#state = 'starting';
    try {
      // The mirror keeps no target's credentials, not even an old row's (endpoint-store.ts registerEndpoint).
      await this.#write((executor) => forgetStoredCredentials(executor));
      for (const { settings } of this.#endpoints) {
        const snapshot = settings.initial === 'snapshot' ? snapshotStreams(settings.filter) : null;
        const { state, created, urlChanged } = await this.#write((executor) => registerEndpoint(executor, settings.name, settings.url, new Date(), settings.kind, snapshot));
        const what = settings.kind === 'webhook' ? 'webhook endpoint' : `${settings.kind} sink`;
        const replay = settings.kind === 'webhook' ? 'webhooks replay' : 'sinks replay';
        if (created && state.snapshot) this.#logger.info({ endpoint: settings.name, kind: settings.kind, boundary: state.deliveredSeq, streams: state.snapshot.streams }, `${what} registered: it receives the current rows of its streams first, then the changes after this seq`);
        else if (created) this.#logger.info({ endpoint: settings.name, kind: settings.kind, deliveredSeq: state.deliveredSeq }, `${what} registered: it receives changes after this seq (use ${replay} for history)`);
        if (urlChanged) this.#logger.info({ endpoint: settings.name, kind: settings.kind, url: safeUrl(settings.url) }, `${what} URL changed: backoff and disablement cleared`);
      }
    } catch (error) {
      if (this.#state === 'starting') this.#state = 'new';
      throw error;
    }
    if (this.#state !== 'starting') return; // stop() was called while the endpoints were being registered
    // PostgreSQL: woken by every commit that appended changes, from any process (polling stays the fallback).
    const listening = await listenForChanges(this.#connection, () => this.notify());
    if (this.#state !== 'starting') {
      await listening?.close();
      return;
    }
    if (this.#connection.listen && !listening) this.#logger.warn({ pollMs: this.#pollMs }, 'cannot listen for change notifications: polling only');
    this.#listening = listening;
    this.#state = 'running';
    for (const endpoint of this.#endpoints) this.#loops.push(endpoint.run());
  }

  /** Wakes every loop now (the sync calls this after committing changes). Cheap; never blocks or throws. */
  notify(): void {
    for (const endpoint of this.#endpoints) endpoint.notify();
  }

  /**
   * Stops gracefully: loops finish their current step; a request still in flight after
   * `stopGraceMs` is aborted (its event stays undelivered and is sent again, same webhook-id, after
   * restart). What was delivered is written before it resolves. Safe to call twice.
   */
  async stop(): Promise<void> {
    if (this.#state === 'stopped') return;
    try {
      await this.#stopDelivering();
    } finally {
      await this.#release?.();
    }
  }

  async #stopDelivering(): Promise<void> {
    const wasRunning = this.#state === 'running';
    this.#state = 'stopped';
    this.#stopRequested.abort();
    const grace = setTimeout(() => this.#abortInFlight.abort(), this.#stopGraceMs);
    await Promise.allSettled(this.#loops);
    clearTimeout(grace);
    await this.#listening?.close();
    await Promise.allSettled(this.#endpoints.map((endpoint) => endpoint.settings.sender.close()));
    if (wasRunning) this.#logger.debug('delivery dispatcher stopped');
  }

  /**
   * Per-endpoint figures: deliveries and failures since start, cursor, held events, lag in events and seconds.
   * @throws Error when the database is closed (the promise rejects)
   */
  async stats(now: Date = new Date()): Promise<WebhookEndpointStats[]> {
    const failed = await countFailedDeliveries(this.#connection);
    const stats: WebhookEndpointStats[] = [];
    for (const endpoint of this.#endpoints) {
      const name = endpoint.settings.name;
      const state = await loadEndpoint(this.#connection, name);
      const deliveredSeq = state?.deliveredSeq ?? 0;
      const held = await loadHeldEvents(this.#connection, name);
      const lag = await endpointLag(this.#connection, deliveredSeq, now, held[0]?.seq);
      stats.push({
        name,
        kind: endpoint.settings.kind,
        enabled: state !== undefined && state.disabledAt === null,
        deliveries: endpoint.deliveries,
        failures: endpoint.failures,
        deliveredSeq,
        lagEvents: undeliveredEvents(lag, deliveredSeq, held),
        lagSeconds: lag.lagSeconds,
        consecutiveFailures: state?.consecutiveFailures ?? 0,
        failedEvents: failed.get(name) ?? 0,
        heldEvents: held.length,
        inFlight: endpoint.inFlight,
        disabledKind: state?.disabledKind ?? null,
        pausedUntil: state?.nextAttemptAt ?? null,
      });
    }
    return stats;
  }

  /**
   * Runs one write of the dispatcher (an endpoint-store function) on its connection; with a `fence`,
   * in one transaction that runs the fence first.
   * @throws LeaseLostError from the fence (the write rolled back)
   */
  #write<T>(write: (executor: SqlExecutor) => Promise<T>): Promise<T> {
    const fence = this.#fence;
    if (!fence) return this.#connection.transaction(write);
    return this.#connection.transaction(async (tx) => {
      await fence(tx);
      return write(tx);
    });
  }
}

/** The probe intervals of a retry schedule: its first retry delay (5 s) to six times it (30 s). */
function probeIntervalsOf(scheduleMs: readonly number[]): ProbeIntervals {
  const first = scheduleMs[1] ?? scheduleMs[0] ?? DEFAULT_PROBE_INTERVALS.minMs;
  if (first <= 0) return DEFAULT_PROBE_INTERVALS;
  return { minMs: first, maxMs: first * (DEFAULT_PROBE_INTERVALS.maxMs / DEFAULT_PROBE_INTERVALS.minMs) };
}

function positive(value: number, field: string): number {
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${field}: must be a positive number, got ${String(value)}`);
  return value;
}

function nonNegative(value: number, field: string): number {
  if (!Number.isFinite(value) || value < 0) throw new Error(`${field}: must be a non-negative number, got ${String(value)}`);
  return value;
}
