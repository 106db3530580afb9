/**
 * The webhook dispatcher: delivers the changelog (`changes`, docs/mirror.md) to
 * every configured webhook endpoint as signed Standard Webhooks messages (spec §6 leaves outbound
 * events unspecified; see signing.ts for the wire format).
 *
 * Guarantees, per endpoint:
 *   - At-least-once: the durable cursor (`webhook_endpoints.delivered_seq`) advances only after a
 *     2xx, in the same statement that records the attempt. A crash re-sends at most the event in
 *     flight, with the same `webhook-id` (the event's `event_id`), so receivers deduplicate on it.
 *   - In order: one request in flight per endpoint; event n+1 is not sent before event n got a 2xx
 *     or was given up on. After the last attempt of the retry schedule (`maxAttempts`, 8 with the
 *     Standard Webhooks schedule, about 27 h) the event is recorded in `webhook_failed_deliveries`
 *     and the endpoint moves on; `webhooks replay --failed` re-sends such events later.
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
 * notification of every commit that appended changes (any process: src/notify/changelog.ts
 * `listenForChanges`), and otherwise polls every `pollMs`, so changes written by another process
 * are picked up too. All state lives in the
 * mirror (read and written through a `SqlExecutor`, src/mirror/sql/executor.ts): the loops re-read
 * it every round, so a `webhooks replay` run from the CLI takes effect in the running daemon. Run
 * one dispatcher per mirror: two would both deliver (still at-least-once, but duplicated). The
 * daemon runs one only while it holds the mirror's `webhooks` lease (src/mirror/leases.ts) and gives
 * it the lease's `fence`: every cursor move then confirms the fence in its own transaction, so a
 * dispatcher that lost the lease (paused past it) stops before it moves a cursor again.
 */
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { Agent, type Dispatcher } from 'undici';
import { DEFAULT_WEBHOOK_DISABLE_AFTER_DAYS, type WebhookEndpointConfig } from '../../config/schema.ts';
import { silentLogger, type Logger } from '../../logging/logger.ts';
import { LeaseLostError } from '../../mirror/leases.ts';
import type { Listening, SqlExecutor } from '../../mirror/sql/executor.ts';
import { SqliteConnection } from '../../mirror/sql/sqlite.ts';
import { listenForChanges, readChanges } from '../changelog.ts';
import { compileEventFilter, type EventTypeFilter } from '../event-filter.ts';
import { DEFAULT_DELIVERY_TIMEOUT_MS, deliverWebhook } from './delivery.ts';
import { disableEndpoint, endpointLag, giveUpEvent, loadEndpoint, recordDelivered, recordFailure, recordSkipped, registerEndpoint, type Disablement } from './endpoint-store.ts';
import { countFailedDeliveries } from './failed-deliveries.ts';
import { DEFAULT_WEBHOOK_RETRY_SCHEDULE, nextRetryDelayMs, validateSchedule, type WebhookRetrySchedule } from './retry-schedule.ts';
import { buildWebhookMessage, signerForEndpoint, type WebhookSigner } from './signing.ts';
import { Wakeup } from './wakeup.ts';

/** Construction options of a WebhookDispatcher; validated by its constructor (which throws naming the option). */
export interface WebhookDispatcherOptions {
  /**
   * The mirror. Prefer a connection of its own (`sqliteConnection(openMirror(path))`), not the one
   * the sync holds transactions on. The dispatcher does not close it.
   */
  connection: SqlExecutor;
  /** The configured endpoints (src/config/schema.ts `webhooks`). */
  endpoints: readonly WebhookEndpointConfig[];
  logger?: Logger;
  /** How often each idle loop looks for new changes (written by another process), ms. Default 1000. */
  pollMs?: number;
  /** Time limit of one delivery attempt, ms. Default 15000. */
  timeoutMs?: number;
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
  /** Changes read per round, per endpoint. Default 100. */
  batchSize?: number;
  /** The undici dispatcher for deliveries; by default the dispatcher owns a keep-alive Agent and closes it on stop. */
  httpDispatcher?: Dispatcher;
  /** Called after every attempt (for metrics: counters, latency histograms). Must not throw. */
  onAttempt?: (attempt: WebhookAttemptRecord) => void;
  /** Attempts per event before it is given up on (recorded as failed; the endpoint moves on). Default: `scheduleMs.length` (8). */
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
}

/** One delivery attempt, for metrics. */
export interface WebhookAttemptRecord {
  endpoint: string;
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
  enabled: boolean;
  /** Events delivered with a 2xx by this dispatcher since `start()`. */
  deliveries: number;
  /** Failed attempts by this dispatcher since `start()`. */
  failures: number;
  /** The endpoint's cursor (last seq delivered or skipped). */
  deliveredSeq: number;
  /** MAX(changes.seq) − deliveredSeq. */
  lagEvents: number;
  /** now − occurred_at of the oldest undelivered event, seconds (0 when caught up). */
  lagSeconds: number;
  /** Consecutive failed attempts for the next event. */
  consecutiveFailures: number;
  /** Events given up on and not yet re-sent (`webhook_failed_deliveries`). */
  failedEvents: number;
  /** Why the endpoint is disabled (`gone`: 410, `failing`: no 2xx for disableAfterDays); null while enabled. */
  disabledKind: 'gone' | 'failing' | null;
}

interface EndpointRuntime {
  name: string;
  url: string;
  filter: EventTypeFilter;
  signer: WebhookSigner;
  /** Disabled after failing this long without a 2xx, ms. */
  disableAfterMs: number;
  wakeup: Wakeup;
  deliveries: number;
  failures: number;
  loop: Promise<void> | null;
}

const DAY_MS = 86_400_000;

/** Longest pause after an unexpected error (database busy, corrupt row) before the loop tries again, ms. */
const MAX_ERROR_BACKOFF_MS = 60_000;

/**
 * Delivers the changelog to the configured webhook endpoints (see the module comment for the
 * guarantees). Usage in the daemon:
 *
 *     const dispatcher = new WebhookDispatcher({ connection: sqliteConnection(openMirror(config.dbPath)), endpoints: config.webhooks, logger });
 *     await dispatcher.start();
 *     // after each sync transaction that appended changes:
 *     dispatcher.notify();
 *     // metrics: await dispatcher.stats(); on SIGTERM:
 *     await dispatcher.stop();
 */
export class WebhookDispatcher {
  readonly #connection: SqlExecutor;
  readonly #logger: Logger;
  readonly #pollMs: number;
  readonly #timeoutMs: number;
  readonly #stopGraceMs: number;
  readonly #batchSize: number;
  readonly #retrySchedule: WebhookRetrySchedule;
  readonly #http: Dispatcher;
  readonly #ownsHttp: boolean;
  readonly #onAttempt: ((attempt: WebhookAttemptRecord) => void) | undefined;
  readonly #maxAttempts: number;
  readonly #now: () => Date;
  readonly #fence: ((tx: SqlExecutor) => Promise<void>) | undefined;
  readonly #endpoints: EndpointRuntime[];
  /** Aborted by stop(): ends the loops' waits. */
  readonly #stopRequested = new AbortController();
  /** Aborted after the grace period of stop(): cancels requests still in flight. */
  readonly #abortInFlight = new AbortController();
  #state: 'new' | 'starting' | 'running' | 'stopped' = 'new';
  /** The PostgreSQL notifications waking the loops (none on SQLite). */
  #listening: Listening | undefined;

  /**
   * Validates every endpoint (unique name, event patterns, secret) without touching the network or
   * the database.
   * @throws Error naming the option or the endpoint's field and the rule
   */
  constructor(options: WebhookDispatcherOptions) {
    this.#connection = options.connection;
    this.#logger = (options.logger ?? silentLogger).child({ component: 'webhooks' });
    this.#pollMs = positive(options.pollMs ?? 1000, 'pollMs');
    this.#timeoutMs = positive(options.timeoutMs ?? DEFAULT_DELIVERY_TIMEOUT_MS, 'timeoutMs');
    this.#stopGraceMs = nonNegative(options.stopGraceMs ?? 2000, 'stopGraceMs');
    this.#batchSize = positive(options.batchSize ?? 100, 'batchSize');
    const jitterRatio = options.jitterRatio ?? DEFAULT_WEBHOOK_RETRY_SCHEDULE.jitterRatio;
    if (!(jitterRatio >= 0 && jitterRatio <= 1)) throw new Error(`jitterRatio: must be between 0 and 1, got ${String(jitterRatio)}`);
    this.#retrySchedule = {
      scheduleMs: validateSchedule(options.scheduleMs ?? DEFAULT_WEBHOOK_RETRY_SCHEDULE.scheduleMs),
      jitterRatio,
      maxRetryAfterMs: nonNegative(options.maxRetryAfterMs ?? DEFAULT_WEBHOOK_RETRY_SCHEDULE.maxRetryAfterMs, 'maxRetryAfterMs'),
      random: options.random ?? DEFAULT_WEBHOOK_RETRY_SCHEDULE.random,
    };
    this.#ownsHttp = options.httpDispatcher === undefined;
    this.#http = options.httpDispatcher ?? new Agent({ connect: { timeout: this.#timeoutMs }, keepAliveTimeout: 10_000 });
    this.#onAttempt = options.onAttempt;
    this.#maxAttempts = positive(options.maxAttempts ?? this.#retrySchedule.scheduleMs.length, 'maxAttempts');
    this.#now = options.now ?? (() => new Date());
    this.#fence = options.fence;
    const names = new Set<string>();
    this.#endpoints = options.endpoints.map((endpoint) => {
      if (names.has(endpoint.name)) throw new Error(`webhooks: endpoint name "${endpoint.name}" appears twice; names must be unique`);
      names.add(endpoint.name);
      return {
        name: endpoint.name,
        url: endpoint.url,
        filter: compileEventFilter(endpoint.events, `webhooks.${endpoint.name}.events`),
        signer: signerForEndpoint(endpoint),
        disableAfterMs: positive(endpoint.disableAfterDays ?? DEFAULT_WEBHOOK_DISABLE_AFTER_DAYS, `webhooks.${endpoint.name}.disableAfterDays`) * DAY_MS,
        wakeup: new Wakeup(),
        deliveries: 0,
        failures: 0,
        loop: null,
      };
    });
  }

  /**
   * Registers the endpoints in the database (a new one starts at the current end of the changelog)
   * and starts one delivery loop per endpoint. Resolves once the endpoints are registered and the
   * loops started (it does not wait for deliveries).
   * @throws Error when called twice or after stop(), or when the database cannot be written
   */
  async start(): Promise<void> {
    if (this.#state !== 'new') throw new Error(`WebhookDispatcher.start: already ${this.#state}`);
    this.#state = 'starting';
    try {
      for (const endpoint of this.#endpoints) {
        const { state, created, urlChanged } = await this.#write((executor) => registerEndpoint(executor, endpoint.name, endpoint.url));
        if (created) this.#logger.info({ endpoint: endpoint.name, deliveredSeq: state.deliveredSeq }, 'webhook endpoint registered: it receives changes after this seq (use webhooks replay for history)');
        if (urlChanged) this.#logger.info({ endpoint: endpoint.name, url: safeUrl(endpoint.url) }, 'webhook endpoint URL changed: backoff and 410 disablement cleared');
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
    for (const endpoint of this.#endpoints) endpoint.loop = this.#run(endpoint);
  }

  /** Wakes every loop now (the sync calls this after committing changes). Cheap; never blocks or throws. */
  notify(): void {
    for (const endpoint of this.#endpoints) endpoint.wakeup.wake();
  }

  /**
   * Stops gracefully: loops finish their current step; a request still in flight after
   * `stopGraceMs` is aborted (its event stays undelivered and is sent again, same webhook-id, after
   * restart). All state is already in SQLite. Safe to call twice.
   */
  async stop(): Promise<void> {
    if (this.#state === 'stopped') return;
    const wasRunning = this.#state === 'running';
    this.#state = 'stopped';
    this.#stopRequested.abort();
    const loops = this.#endpoints.map((endpoint) => endpoint.loop ?? Promise.resolve());
    const grace = setTimeout(() => this.#abortInFlight.abort(), this.#stopGraceMs);
    await Promise.allSettled(loops);
    clearTimeout(grace);
    await this.#listening?.close();
    if (this.#ownsHttp) await this.#http.destroy().catch(() => undefined);
    if (wasRunning) this.#logger.debug('webhook dispatcher stopped');
  }

  /**
   * Per-endpoint figures: deliveries and failures since start, cursor, lag in events and seconds.
   * @throws Error when the database is closed (the promise rejects)
   */
  async stats(now: Date = this.#now()): Promise<WebhookEndpointStats[]> {
    const failed = await countFailedDeliveries(this.#connection);
    const stats: WebhookEndpointStats[] = [];
    for (const endpoint of this.#endpoints) {
      const state = await loadEndpoint(this.#connection, endpoint.name);
      const deliveredSeq = state?.deliveredSeq ?? 0;
      const lag = await endpointLag(this.#connection, deliveredSeq, now);
      stats.push({
        name: endpoint.name,
        enabled: state !== undefined && state.disabledAt === null,
        deliveries: endpoint.deliveries,
        failures: endpoint.failures,
        deliveredSeq,
        lagEvents: lag.lagEvents,
        lagSeconds: lag.lagSeconds,
        consecutiveFailures: state?.consecutiveFailures ?? 0,
        failedEvents: failed.get(endpoint.name) ?? 0,
        disabledKind: state?.disabledKind ?? null,
      });
    }
    return stats;
  }

  get #stopping(): boolean {
    return this.#stopRequested.signal.aborted;
  }

  /** One endpoint's loop: deliver what is pending, then wait for a wake-up, the poll, or a retry time. */
  async #run(endpoint: EndpointRuntime): Promise<void> {
    let consecutiveErrors = 0;
    while (!this.#stopping) {
      let waitMs: number;
      try {
        waitMs = await this.#deliverPending(endpoint);
        consecutiveErrors = 0;
      } catch (error) {
        if (error instanceof LeaseLostError) {
          this.#logger.warn({ endpoint: endpoint.name, fence: error.lease.fence }, 'webhook delivery stops: another process took over the webhooks lease');
          return;
        }
        if (connectionClosed(this.#connection)) {
          this.#logger.error({ endpoint: endpoint.name }, 'webhook delivery loop ended: the database connection is closed');
          return;
        }
        consecutiveErrors += 1;
        waitMs = Math.min(this.#pollMs * 2 ** (consecutiveErrors - 1), MAX_ERROR_BACKOFF_MS);
        this.#logger.error({ endpoint: endpoint.name, err: error, retryInMs: waitMs }, 'webhook delivery loop error');
      }
      if (this.#stopping) return;
      if (waitMs <= 0) await yieldToEventLoop();
      else await endpoint.wakeup.wait(waitMs, this.#stopRequested.signal);
    }
  }

  /**
   * Delivers the endpoint's pending events in order, up to one batch.
   * @returns how long to wait before the next round, ms (0: go on at once)
   */
  async #deliverPending(endpoint: EndpointRuntime): Promise<number> {
    const connection = this.#connection;
    let state = await loadEndpoint(connection, endpoint.name);
    if (!state) state = (await this.#write((executor) => registerEndpoint(executor, endpoint.name, endpoint.url))).state; // row removed behind our back
    if (state.disabledAt !== null) return this.#pollMs; // wait for `webhooks enable` or a replay
    if (state.nextAttemptAt !== null) {
      const dueInMs = Date.parse(state.nextAttemptAt) - this.#now().getTime();
      // Re-check at least every poll: a replay from another process clears the backoff.
      if (dueInMs > 0) return Math.min(dueInMs, this.#pollMs);
    }
    const events = await readChanges(connection, { sinceSeq: state.deliveredSeq, limit: this.#batchSize });
    if (events.length === 0) return this.#pollMs;

    let cursor = state.deliveredSeq;
    let failures = state.consecutiveFailures;
    let skippedTo: number | null = null;
    for (const event of events) {
      if (this.#stopping) break;
      if (!endpoint.filter(event.type)) {
        skippedTo = event.seq;
        continue;
      }
      const message = buildWebhookMessage(event);
      const outcome = await deliverWebhook(endpoint.url, message, endpoint.signer, {
        timeoutMs: this.#timeoutMs,
        dispatcher: this.#http,
        signal: this.#abortInFlight.signal,
      });
      if (outcome.ok || !outcome.aborted) {
        this.#report({ endpoint: endpoint.name, seq: event.seq, type: event.type, ok: outcome.ok, status: outcome.status, durationMs: outcome.durationMs });
      }
      if (outcome.ok) {
        if (!(await this.#write((executor) => recordDelivered(executor, endpoint.name, cursor, event.seq, outcome.status)))) return 0; // cursor moved by a replay: re-read
        endpoint.deliveries += 1;
        cursor = event.seq;
        skippedTo = null;
        failures = 0;
        continue;
      }
      if (outcome.aborted) return 0; // stopping: not the receiver's failure, nothing recorded
      endpoint.failures += 1;
      if (skippedTo !== null) {
        const to = skippedTo;
        if (!(await this.#write((executor) => recordSkipped(executor, endpoint.name, cursor, to)))) return 0;
        cursor = skippedTo;
      }
      if (outcome.gone) {
        await this.#disable(endpoint, cursor, { kind: 'gone', reason: outcome.error, goneStatus: 410, safeUrl: safeUrl(endpoint.url) }, event.seq);
        return this.#pollMs;
      }
      const now = this.#now();
      const giveUp = failures + 1 >= this.#maxAttempts;
      const retryInMs = giveUp ? 0 : nextRetryDelayMs(failures + 1, outcome.retryAfterMs, this.#retrySchedule);
      const streak = await this.#write((executor) => recordFailure(executor, endpoint.name, cursor, { status: outcome.status, error: outcome.error, retryInMs }, now));
      if (streak === null) return 0;
      const failingForMs = now.getTime() - Date.parse(streak.failingSince);
      if (failingForMs >= endpoint.disableAfterMs) {
        const reason = `no 2xx for ${formatDays(failingForMs)} (failing since ${streak.failingSince}; disableAfterDays ${formatDays(endpoint.disableAfterMs)}); last: ${outcome.error}`;
        await this.#disable(endpoint, cursor, { kind: 'failing', reason, goneStatus: null, safeUrl: safeUrl(endpoint.url) }, event.seq);
        return this.#pollMs;
      }
      if (!giveUp) {
        this.#logger.warn(
          { endpoint: endpoint.name, seq: event.seq, eventId: event.eventId, status: outcome.status, error: outcome.error, consecutiveFailures: streak.attempts, retryInMs },
          'webhook delivery failed; will retry',
        );
        return Math.min(retryInMs, this.#pollMs);
      }
      const given = await this.#write((executor) =>
        giveUpEvent(
          executor,
          endpoint.name,
        cursor,
          { seq: event.seq, eventId: event.eventId, type: event.type, attempts: streak.attempts, lastStatus: outcome.status, lastError: outcome.error },
          now,
        ),
      );
      if (!given) return 0;
      this.#logger.error(
        { endpoint: endpoint.name, seq: event.seq, eventId: event.eventId, type: event.type, attempts: streak.attempts, status: outcome.status, error: outcome.error },
        'webhook event given up after the last attempt of the retry schedule; the endpoint moves on (webhooks replay --failed re-sends it)',
      );
      cursor = event.seq;
      skippedTo = null;
      failures = 0;
    }
    if (skippedTo !== null) {
      const to = skippedTo;
      await this.#write((executor) => recordSkipped(executor, endpoint.name, cursor, to));
    }
    return 0;
  }

  /**
   * Runs one write of the dispatcher (an endpoint-store function) on its connection; with a `fence`,
   * in one transaction that runs the fence first.
   * @throws LeaseLostError from the fence (the write rolled back)
   */
  #write<T>(write: (executor: SqlExecutor) => Promise<T>): Promise<T> {
    const fence = this.#fence;
    if (!fence) return write(this.#connection);
    return this.#connection.transaction(async (tx) => {
      await fence(tx);
      return write(tx);
    });
  }

  /** Disables the endpoint (appending the `webhook.endpoint_disabled` change) and wakes the others so they deliver it. */
  async #disable(endpoint: EndpointRuntime, cursor: number, disablement: Disablement, seq: number): Promise<void> {
    const changeSeq = await this.#write((executor) => disableEndpoint(executor, endpoint.name, cursor, disablement, this.#now()));
    if (changeSeq === null) return;
    this.#logger.warn(
      { endpoint: endpoint.name, url: safeUrl(endpoint.url), seq, kind: disablement.kind, reason: disablement.reason, changeSeq },
      disablement.kind === 'gone'
        ? 'webhook endpoint disabled: the receiver answered 410 Gone; webhooks enable (or replay) re-enables it'
        : 'webhook endpoint disabled: failing for longer than disableAfterDays; webhooks enable (or replay) re-enables it',
    );
    this.notify();
  }

  #report(attempt: WebhookAttemptRecord): void {
    try {
      this.#onAttempt?.(attempt);
    } catch (error) {
      this.#logger.error({ err: error }, 'webhook onAttempt callback threw');
    }
  }
}

/** The URL without credentials or query string, for logs. */
export function safeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return '[invalid URL]';
  }
}

/**
 * True when the dispatcher's connection was closed under it (the loops cannot go on). Known for
 * SQLite; a PostgreSQL pool's closing is recognised in stage 2 (until then such a loop retries with
 * backoff until `stop()`).
 */
function connectionClosed(executor: SqlExecutor): boolean {
  return executor instanceof SqliteConnection && !executor.sqlite.open;
}

/** `5 days`, `1.5 days`, `0.0001 days` (for reasons shown to operators). */
function formatDays(ms: number): string {
  const days = ms / DAY_MS;
  return `${Number(days.toPrecision(3))} day${days === 1 ? '' : 's'}`;
}

function positive(value: number, field: string): number {
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${field}: must be a positive number, got ${String(value)}`);
  return value;
}

function nonNegative(value: number, field: string): number {
  if (!Number.isFinite(value) || value < 0) throw new Error(`${field}: must be a non-negative number, got ${String(value)}`);
  return value;
}
