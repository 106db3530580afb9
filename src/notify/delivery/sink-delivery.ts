/**
 * One target's delivery loop (the dispatcher runs one per webhook endpoint or sink; docs/webhooks.md
 * "Ordering", docs/sinks.md). The target's kind only sends (`SinkSender`, sink-kind.ts): this loop
 * decides what goes when and writes what happened.
 *
 * Events go out by record: up to `maxInFlight` requests at once, the events of one record (its
 * stream and id, its "lane") one at a time in changelog order. A failing event is held back with
 * the later events of its record (`webhook_held_events`, held-events.ts) and retried on the retry
 * schedule; every other record goes on. With `ordering: 'endpoint'` every event is in one lane:
 * one request at a time, in changelog order, a failing event holding back every later one.
 *
 * State, all in the mirror:
 *   - the cursor (`webhook_endpoints.delivered_seq`): every event at or below it is delivered,
 *     filtered out, given up on, or held back. In memory the loop keeps the events after the
 *     cursor it has read (`#active`, at most `MAX_ACTIVE`) and where its reading stands
 *     (`#frontier`); the cursor it writes is the last seq before the oldest event still active.
 *   - the held events, their attempts and retry times;
 *   - the endpoint's failure streak: failed attempts in a row of any event since the last 2xx,
 *     and since when (`failing_since`). After `STALL_AFTER_FAILURES` the endpoint is taken for
 *     down: one request at a time, a probe, when the pause ends (`next_attempt_at`): the oldest
 *     held event whose own retry is due, else the next new event. The pause follows how long the
 *     endpoint has been failing (retry-schedule.ts `probeDelayMs`: 5 s to 30 s), not how many
 *     attempts failed. Any 2xx ends the streak and the pause, and makes every held event due at
 *     once (their failures were the endpoint's, not theirs): a receiver that answers again is
 *     served within the longest pause, without a command. A dead receiver gets one request per
 *     pause, never the whole changelog parked.
 *
 * What a round does: settles the answers that arrived (each attempt kept: attempts.ts),
 * writes them with the new cursor in ONE fenced transaction (compare-and-set on the cursor: a
 * `webhooks replay` from another process wins, and the loop starts again from the stored state),
 * reads more of the changelog when fewer events are ready than requests may be in flight, and
 * starts requests. A crash re-sends at most the events that were active (same webhook-id).
 *
 * Before each request leaves, `mayDeliver()` is asked (the daemon: is the `webhooks` lease known
 * to be unexpired?); when it says no, nothing is sent until it says yes again.
 */
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { Logger } from '../../logging/logger.ts';
import { plantedBug } from '../../logging/planted-bugs.ts';
import { LeaseLostError } from '../../mirror/leases.ts';
import type { SqlExecutor } from '../../mirror/sql/executor.ts';
import { SqliteConnection } from '../../mirror/sql/sqlite.ts';
import { readChanges, type ChangeEvent } from '../changelog-reader.ts';
import type { EventTypeFilter } from '../event-filter/index.ts';
import { insertAttempts, type WebhookAttempt } from './attempts.ts';
import {
  appendSinkCondition,
  disableEndpoint,
  loadEndpoint,
  recordProgress,
  recordSnapshotProgress,
  registerEndpoint,
  SINK_FAILING_EVENT,
  SINK_RECOVERED_EVENT,
  WEBHOOK_KIND,
  type Disablement,
  type SinkConditionRecord,
  type WebhookEndpointState,
} from './endpoint-store.ts';
import { readSnapshotPage, type SnapshotState } from '../snapshot.ts';
import { insertFailedDelivery, type FailedDelivery } from './failed-deliveries.ts';
import { deleteHeldEvents, insertHeldEvents, loadHeldEvents, recordHeldFailure, recordLane, setHeldRetryTimes, type HeldEvent } from './held-events.ts';
import { nextRetryDelayMs, probeDelayMs, type ProbeIntervals, type WebhookRetrySchedule } from './retry-schedule.ts';
import { failedWithoutAnswer, type DeliveryOutcome, type SinkSender } from './sink-kind.ts';
import { Wakeup } from './wakeup.ts';

/** How an endpoint orders its events: by record (default) or all of them (one request at a time). */
export type WebhookOrdering = 'record' | 'endpoint';

/** Failed attempts in a row (any event, no 2xx between) after which the endpoint counts as down. */
export const STALL_AFTER_FAILURES = 5;

/** Most events after the cursor a loop keeps in memory (ready, waiting behind their record, or in flight). */
const MAX_ACTIVE = 2000;

/** The soak's planted bug `webhook-out-of-order` (src/logging/planted-bugs.ts). Off in production. */
const OUT_OF_ORDER = plantedBug('webhook-out-of-order');

/** Settled answers are written at least this often while requests are in flight, ms... */
const FLUSH_EVERY_MS = 250;

/** ...or once this many attempts wait to be written. */
const FLUSH_EVERY_ATTEMPTS = 1000;

/**
 * Longest pause after an unexpected error (database busy, a PostgreSQL session ended or the server
 * restarting, a corrupt row) before the loop tries again, ms. The pause starts at the poll (at most
 * `FIRST_ERROR_BACKOFF_MS`) and doubles. Short, because nothing else ends it once the changelog is
 * quiet: events already recorded would wait out the whole pause after the database answers again.
 */
const MAX_ERROR_BACKOFF_MS = 5_000;

/** The first pause after an unexpected error, ms (the poll when shorter). */
const FIRST_ERROR_BACKOFF_MS = 1000;

/** One target as the loop needs it. */
export interface EndpointSettings {
  name: string;
  /** `webhook` or the sink's kind. */
  kind: string;
  /** The URL kept in the mirror and shown (a sink's without its password). */
  url: string;
  filter: EventTypeFilter;
  /** Sends one event (the target's kind). */
  sender: SinkSender;
  /** Disabled after failing this long without a 2xx, ms. */
  disableAfterMs: number;
  /** Requests at once (1 with `ordering: 'endpoint'`). */
  maxInFlight: number;
  ordering: WebhookOrdering;
  /** Where a new target starts: the changelog's end, or a snapshot of its streams' rows first (src/notify/snapshot.ts). */
  initial: 'end' | 'snapshot';
}

/** What every endpoint's loop shares (the dispatcher's). */
export interface DeliveryEnvironment {
  connection: SqlExecutor;
  logger: Logger;
  pollMs: number;
  batchSize: number;
  retrySchedule: WebhookRetrySchedule;
  /** How often a target taken for down is probed. */
  probeIntervals: ProbeIntervals;
  maxAttempts: number;
  now(): Date;
  /** Runs a write in a fenced transaction (dispatcher `#write`). @throws LeaseLostError */
  write<T>(work: (executor: SqlExecutor) => Promise<T>): Promise<T>;
  /** Asked right before each request leaves; false: send nothing now. */
  mayDeliver(): boolean;
  /** Reports an attempt (metrics). Never throws. */
  report(attempt: { endpoint: string; kind: string; seq: number; type: string; ok: boolean; status: number | null; durationMs: number }): void;
  /** Aborted by the dispatcher's stop(): the loop ends. */
  stopSignal: AbortSignal;
  /** Aborted after stop()'s grace period: requests still in flight are cancelled. */
  abortSignal: AbortSignal;
  /** Wakes every endpoint (after a `webhook.endpoint_disabled` change was appended). */
  notifyAll(): void;
}

/** An event after the cursor, in memory: waiting for its turn, or in flight. */
interface ActiveEvent {
  event: ChangeEvent;
  lane: string;
  sending: boolean;
  /** Delivered or given up on: leaves `#active` at the end of the settling (one pass, not one search per event). */
  done: boolean;
}

/** An answer that arrived, settled by the loop in its next round. */
interface Arrival {
  generation: number;
  attemptedAt: string;
  outcome: DeliveryOutcome;
  /** The event sent: from the window (`active`) or a held one. */
  source: { kind: 'active'; entry: ActiveEvent } | { kind: 'held'; held: HeldEvent; event: ChangeEvent | null };
}

/** What the loop has settled and not yet written (`#flush`). */
class PendingWrites {
  attempts: WebhookAttempt[] = [];
  holds: HeldEvent[] = [];
  heldFailures: { seq: number; attempts: number; nextAttemptAt: string; status: number | null; error: string }[] = [];
  releases: number[] = [];
  /** Held events made due at once (the endpoint answered again): their retry time as it stands when written. */
  madeDue: HeldEvent[] = [];
  givenUp: FailedDelivery[] = [];
  delivered = 0;
  failed = 0;
  lastAttempt: { at: string; status: number | null } | undefined;
  lastError: { at: string; error: string } | undefined;
  lastSuccessAt: string | undefined;

  get empty(): boolean {
    return this.attempts.length === 0 && this.holds.length === 0 && this.heldFailures.length === 0 && this.releases.length === 0 && this.madeDue.length === 0 && this.givenUp.length === 0;
  }
}

/** The cursor moved under the loop (a replay): roll the write back and start again from the stored state. */
class CursorMovedError extends Error {}

/** One endpoint's loop; see the module comment. */
export class EndpointDelivery {
  readonly settings: EndpointSettings;
  /** Events delivered with a 2xx since start. */
  deliveries = 0;
  /** Failed attempts since start. */
  failures = 0;
  readonly #env: DeliveryEnvironment;
  readonly #wakeup = new Wakeup();
  readonly #inFlightRequests = new Set<Promise<void>>();
  #cursor = 0;
  #frontier = 0;
  #active: ActiveEvent[] = [];
  /** Entries of `#active` marked done and not yet removed. */
  #doneActive = 0;
  /** Held events by lane, each lane in seq order (its head first). */
  #held = new Map<string, HeldEvent[]>();
  /** Held events whose request is in flight. */
  readonly #heldSending = new Set<number>();
  #inFlight = 0;
  #arrivals: Arrival[] = [];
  #pending = new PendingWrites();
  #streak = { failures: 0, failingSince: null as string | null, pausedUntil: null as string | null };
  /** The snapshot being sent before the changelog (`initial: "snapshot"`), as stored; null when none. */
  #snapshot: SnapshotState | null = null;
  /** The pause as the mirror holds it (`next_attempt_at`), as last read or written: a NULL there instead is a retry asked for. */
  #storedPause: string | null = null;
  /** The failure streak as the mirror holds it (`consecutive_failures`), as last read or written: a sink's condition events say when it crosses `STALL_AFTER_FAILURES`. */
  #storedFailures = 0;
  /** The last failed attempt's error, for a sink's condition events. */
  #lastFailure: string | null = null;
  /** A streak of at least `STALL_AFTER_FAILURES` that an acknowledgement ended since the last write (for `sink.recovered`). */
  #endedStreak: { failingSince: string; failures: number; lastError: string | null } | null = null;
  #disabled = false;
  #disabling: Disablement | null = null;
  #generation = 0;
  #loaded = false;
  /** When the stored state was last read (ms, local clock). */
  #stateReadAt = 0;
  /** True when the changelog may hold events past `#frontier` (a notify, a poll, or a full read). */
  #mayHaveMore = true;
  /** When the changelog was last read (ms, local clock): it is read again at least every poll. */
  #lastReadAt = 0;
  /** When settled answers were last written (ms, local clock). */
  #flushedAt = 0;

  constructor(settings: EndpointSettings, env: DeliveryEnvironment) {
    this.settings = settings;
    this.#env = env;
  }

  /** Wakes the loop (new changes); cheap, never throws. */
  notify(): void {
    this.#mayHaveMore = true;
    this.#wakeup.wake();
  }

  /** Requests in flight now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /**
   * Runs until the dispatcher stops (then lets the requests in flight end, within the dispatcher's
   * grace, and writes what they settled) or the lease is lost.
   */
  async run(): Promise<void> {
    const env = this.#env;
    let consecutiveErrors = 0;
    let leaseLost = false;
    while (!env.stopSignal.aborted) {
      let waitMs: number;
      try {
        waitMs = await this.#round();
        consecutiveErrors = 0;
      } catch (error) {
        if (error instanceof LeaseLostError) {
          env.logger.warn({ endpoint: this.settings.name, fence: error.lease.fence }, 'webhook delivery stops: another process took over the webhooks lease');
          leaseLost = true;
          break;
        }
        if (connectionClosed(env.connection)) {
          env.logger.error({ endpoint: this.settings.name }, 'webhook delivery loop ended: the database connection is closed');
          return;
        }
        consecutiveErrors += 1;
        waitMs = Math.min(Math.min(env.pollMs, FIRST_ERROR_BACKOFF_MS) * 2 ** (consecutiveErrors - 1), MAX_ERROR_BACKOFF_MS);
        this.#loaded = false; // read the stored state again
        env.logger.error({ endpoint: this.settings.name, err: error, retryInMs: waitMs }, 'webhook delivery loop error');
      }
      if (env.stopSignal.aborted) break;
      if (waitMs <= 0) await yieldToEventLoop();
      else await this.#wakeup.wait(waitMs, env.stopSignal);
    }
    // Stopping: the requests in flight end (aborted after the grace period); what they settled is written.
    await Promise.allSettled([...this.#inFlightRequests]);
    if (leaseLost || !this.#loaded) return;
    try {
      this.#settleArrivals();
      if (!this.#pending.empty || this.#nextCursor() !== this.#cursor) await this.#flush();
    } catch (error) {
      if (!(error instanceof LeaseLostError) && !(error instanceof CursorMovedError)) env.logger.warn({ endpoint: this.settings.name, err: error }, 'could not record the last webhook deliveries; they are sent again');
    }
  }

  /** One round (module comment). @returns how long to wait before the next, ms (0: at once) */
  async #round(): Promise<number> {
    const env = this.#env;
    if (!this.#loaded) await this.#load();
    this.#settleArrivals();
    // While events flow (only deliveries settled: none held back, given up on or released, no
    // disabling), what was settled is written after the next requests left: the write overlaps
    // their round trip. With several requests at once (`maxInFlight` > 1) also when the answers of
    // every request in flight just arrived, if this round goes on to send: a round that stops
    // before sending (disabled, a snapshot, the lease, a pause, the stored state to read again)
    // writes first. One request at a time, each answer is written (its fence checked) before the
    // next request leaves.
    const stateReadDue = this.#stateReadDue();
    const flowing =
      this.#pending.holds.length === 0 &&
      this.#pending.heldFailures.length === 0 &&
      this.#pending.releases.length === 0 &&
      this.#pending.madeDue.length === 0 &&
      this.#pending.givenUp.length === 0 &&
      this.#disabling === null &&
      (this.#inFlight > 0 || (this.settings.maxInFlight > 1 && !this.#disabled && this.#snapshot === null && this.#streak.failures < STALL_AFTER_FAILURES && !stateReadDue && env.mayDeliver()));
    if (!flowing && this.#flushDue()) {
      if (!(await this.#flush())) return 0;
    }
    if (this.#disabling) {
      const disablement = this.#disabling;
      this.#disabling = null;
      await this.#disable(disablement);
    }
    // The stored state, at most once per poll: a replay, `webhooks enable` or the other process's view.
    if (stateReadDue) {
      if (!(await this.#refreshState())) return 0;
    }
    if (this.#disabled) return env.pollMs;
    if (this.#arrivals.length > 0) return 0;
    if (this.#snapshot) return this.#snapshotRound(this.#snapshot);

    const nowMs = env.now().getTime();
    if (!env.mayDeliver()) return Math.min(env.pollMs, 100);
    if (this.#streak.failures >= STALL_AFTER_FAILURES) {
      // Taken for down: one probe at a time when the pause ends, the oldest due held event first.
      const pausedMs = this.#pausedForMs(nowMs);
      if (pausedMs > 0 || this.#inFlight > 0) return Math.max(1, Math.min(pausedMs > 0 ? pausedMs : env.pollMs, env.pollMs));
      const nextHeldMs = await this.#startHeld(nowMs, 1);
      if (this.#inFlight === 0) {
        await this.#refill();
        this.#startActive(1);
      }
      if (this.#arrivals.length > 0) return 0;
      return Math.max(1, Math.min(nextHeldMs, env.pollMs));
    }
    const limit = this.settings.maxInFlight;
    const nextHeldMs = await this.#startHeld(nowMs, limit);
    await this.#refill();
    this.#startActive(limit);
    if (flowing && this.#flushDue() && !(await this.#flush())) return 0;
    // Room for more and more to read: go on at once.
    if (this.#inFlight < limit && this.#mayHaveMore && this.#active.length < MAX_ACTIVE && !(this.settings.ordering === 'endpoint' && this.#held.size > 0)) return 0;
    if (this.#arrivals.length > 0) return 0;
    // Answers in flight wake the loop; otherwise the next retry or the poll.
    return Math.max(1, Math.min(nextHeldMs, env.pollMs));
  }

  /** True when the stored state is to be read again now: a poll since the last read, nothing in flight or unsettled. */
  #stateReadDue(): boolean {
    return Date.now() - this.#stateReadAt >= this.#env.pollMs && this.#inFlight === 0 && this.#arrivals.length === 0;
  }

  /**
   * One page of the snapshot (src/notify/snapshot.ts): up to `maxInFlight` of its events sent at
   * once (each a different record), every attempt kept; when every one was acknowledged the
   * snapshot's position moves past them (done: the changelog after the boundary comes next),
   * otherwise the page goes again after the pause a failing target gets (the acknowledged ones
   * again too, with the same ids). Nothing of the changelog goes out before the snapshot is done.
   * @returns how long to wait before the next round, ms
   */
  async #snapshotRound(snapshot: SnapshotState): Promise<number> {
    const env = this.#env;
    const nowMs = env.now().getTime();
    if (!env.mayDeliver()) return Math.min(env.pollMs, 100);
    const pausedMs = this.#streak.failures >= STALL_AFTER_FAILURES && this.#streak.pausedUntil !== null ? Math.max(0, Date.parse(this.#streak.pausedUntil) - nowMs) : 0;
    if (pausedMs > 0) return Math.min(pausedMs, env.pollMs);
    const page = await readSnapshotPage(env.connection, snapshot, this.settings.maxInFlight);
    const attemptedAt = env.now().toISOString();
    const outcomes = await Promise.all(page.events.map((event) => this.settings.sender.send(event, env.abortSignal)));
    if (outcomes.some((outcome) => !outcome.ok && outcome.aborted)) return 0; // stopping
    const attempts: WebhookAttempt[] = [];
    let delivered = 0;
    let failed = 0;
    let lastError: { at: string; error: string } | undefined;
    page.events.forEach((event, index) => {
      const outcome = outcomes[index]!;
      env.report({ endpoint: this.settings.name, kind: this.settings.kind, seq: event.seq, type: event.type, ok: outcome.ok, status: outcome.status, durationMs: outcome.durationMs });
      attempts.push({ endpoint: this.settings.name, seq: null, eventId: event.eventId, type: event.type, attempt: 1, attemptedAt, outcome: outcome.ok ? 'delivered' : 'failed', status: outcome.status, latencyMs: outcome.durationMs, error: outcome.ok ? null : outcome.error, response: outcome.response });
      if (outcome.ok) delivered += 1;
      else {
        failed += 1;
        lastError = { at: attemptedAt, error: outcome.error };
      }
    });
    if (failed === 0) {
      this.deliveries += delivered;
      if (delivered > 0 && this.#streak.failures >= STALL_AFTER_FAILURES) this.#streakEnded(attemptedAt);
      this.#streak = { failures: 0, failingSince: null, pausedUntil: null };
    } else {
      this.#lastFailure = lastError?.error ?? this.#lastFailure;
      this.deliveries += delivered;
      this.failures += failed;
      this.#streak.failures += failed;
      this.#streak.failingSince ??= attemptedAt;
      const failingForMs = nowMs - Date.parse(this.#streak.failingSince);
      this.#streak.pausedUntil = new Date(nowMs + probeDelayMs(failingForMs, null, env.probeIntervals, env.retrySchedule)).toISOString();
      this.#streak.failures = Math.max(this.#streak.failures, STALL_AFTER_FAILURES); // the whole page waits: paused as a target that is down
      env.logger.warn({ endpoint: this.settings.name, failed, error: lastError?.error }, 'snapshot page not acknowledged whole; it is sent again after a pause');
    }
    const next = failed === 0 ? (page.next.stream === null ? null : page.next) : snapshot;
    const condition = this.#conditionChange();
    const moved = await env.write(async (tx) => {
      await insertAttempts(tx, attempts);
      if (condition) await appendSinkCondition(tx, condition, env.now());
      return recordSnapshotProgress(tx, this.settings.name, snapshot, next, {
        consecutiveFailures: this.#streak.failures,
        failingSince: this.#streak.failingSince,
        nextAttemptAt: failed === 0 ? null : this.#streak.pausedUntil,
        delivered,
        failed,
        ...(attempts.length > 0 ? { lastAttempt: { at: attemptedAt, status: outcomes.at(-1)!.status } } : {}),
        ...(lastError ? { lastError } : {}),
        ...(failed === 0 && delivered > 0 ? { lastSuccessAt: attemptedAt } : {}),
      });
    });
    if (!moved) {
      await this.#load();
      return 0;
    }
    this.#snapshot = next;
    this.#storedPause = failed === 0 ? null : this.#streak.pausedUntil;
    this.#conditionWritten(condition);
    this.#stateReadAt = Date.now();
    if (next === null) env.logger.info({ endpoint: this.settings.name, boundary: snapshot.boundary }, 'snapshot sent: the changes after its boundary follow');
    return failed === 0 ? 0 : Math.min(env.pollMs, Math.max(1, Date.parse(this.#streak.pausedUntil!) - env.now().getTime()));
  }

  /** Reads the stored state afresh: the cursor, the streak, the held events; forgets what is in memory. */
  async #load(): Promise<void> {
    const env = this.#env;
    let state = await loadEndpoint(env.connection, this.settings.name);
    if (!state) state = (await env.write((executor) => registerEndpoint(executor, this.settings.name, this.settings.url))).state; // row removed behind our back
    this.#adopt(state);
    this.#held = new Map();
    for (const held of await loadHeldEvents(env.connection, this.settings.name)) this.#holdInMemory(held);
    this.#loaded = true;
  }

  #adopt(state: WebhookEndpointState): void {
    this.#generation += 1; // answers to requests sent before are ignored
    this.#cursor = state.deliveredSeq;
    this.#frontier = state.deliveredSeq;
    this.#active = [];
    this.#doneActive = 0;
    this.#heldSending.clear();
    this.#arrivals = [];
    this.#pending = new PendingWrites();
    this.#streak = { failures: state.consecutiveFailures, failingSince: state.failingSince, pausedUntil: state.nextAttemptAt };
    this.#storedPause = state.nextAttemptAt;
    this.#storedFailures = state.consecutiveFailures;
    this.#lastFailure = state.lastError;
    this.#endedStreak = null;
    this.#snapshot = state.snapshot;
    this.#disabled = state.disabledAt !== null;
    this.#mayHaveMore = true;
    this.#stateReadAt = Date.now();
  }

  /**
   * Re-reads the endpoint's row: a moved cursor (replay), a cleared pause or disablement (enable)
   * makes the loop start again from the stored state. Called with nothing in flight or unwritten.
   * @returns false when the loop started again
   */
  async #refreshState(): Promise<boolean> {
    const env = this.#env;
    const state = await loadEndpoint(env.connection, this.settings.name);
    this.#stateReadAt = Date.now();
    if (
      !state ||
      state.deliveredSeq !== this.#cursor ||
      (state.disabledAt !== null) !== this.#disabled ||
      state.consecutiveFailures !== this.#streak.failures ||
      state.nextAttemptAt !== this.#streak.pausedUntil ||
      JSON.stringify(state.snapshot) !== JSON.stringify(this.#snapshot)
    ) {
      await this.#load();
      return false;
    }
    // Held events: retry times cleared by `webhooks enable`, rows dropped by a replay.
    this.#held = new Map();
    for (const held of await loadHeldEvents(env.connection, this.settings.name)) this.#holdInMemory(held);
    return true;
  }

  /** ms until the endpoint's pause ends (taken for down), 0 when not paused. */
  #pausedForMs(nowMs: number): number {
    if (this.#streak.failures < STALL_AFTER_FAILURES || this.#streak.pausedUntil === null) return 0;
    return Math.max(0, Date.parse(this.#streak.pausedUntil) - nowMs);
  }

  /** Reads more of the changelog when fewer events are ready than may be in flight. */
  async #refill(): Promise<void> {
    const env = this.#env;
    if (this.settings.ordering === 'endpoint' && this.#held.size > 0) return; // everything waits behind the held event
    const ready = this.#readyCount(this.settings.maxInFlight);
    if (ready >= this.settings.maxInFlight || this.#active.length >= MAX_ACTIVE) return;
    if (!this.#mayHaveMore && Date.now() - this.#lastReadAt < env.pollMs) return;
    const limit = Math.min(env.batchSize, MAX_ACTIVE - this.#active.length);
    const events = await readChanges(env.connection, { sinceSeq: this.#frontier, limit, dataJson: true });
    this.#lastReadAt = Date.now();
    this.#mayHaveMore = events.length === limit;
    const heldAt = env.now().toISOString();
    for (const event of events) {
      this.#frontier = event.seq;
      if (!this.settings.filter(event.type)) continue; // filtered out: the cursor passes it
      if (this.#ownCondition(event)) continue; // a sink's own condition events go to the other targets only
      const lane = this.#laneOf(event);
      if (this.settings.ordering === 'record' && this.#held.has(lane)) {
        this.#hold(event, lane, heldAt);
        continue;
      }
      this.#active.push({ event, lane, sending: false, done: false });
    }
  }

  /** True for this sink's own `sink.failing` / `sink.recovered` events: never sent to it (they would reach its consumers only once it recovered, and could feed its own streak). */
  #ownCondition(event: ChangeEvent): boolean {
    return event.stream === 'sinks' && event.recordId === this.settings.name && this.settings.kind !== WEBHOOK_KIND && (event.type === SINK_FAILING_EVENT || event.type === SINK_RECOVERED_EVENT);
  }

  /**
   * Events that could go out now (the first active event of each lane, not in flight, its lane not
   * held), counted up to `enough`: the scan stops there instead of going through the whole window.
   */
  #readyCount(enough: number): number {
    const seen = new Set<string>();
    let ready = 0;
    for (const entry of this.#active) {
      if (seen.has(entry.lane)) continue;
      seen.add(entry.lane);
      if (!entry.sending && !this.#held.has(entry.lane) && (ready += 1) >= enough) break;
    }
    return ready;
  }

  #laneOf(event: { stream: string; recordId: string; seq: number }): string {
    if (this.settings.ordering === 'endpoint') return '';
    // The soak's planted bug (src/logging/planted-bugs.ts): every event a lane of its own, so a record's events overtake each other.
    return OUT_OF_ORDER ? `${recordLane(event.stream, event.recordId)}#${event.seq}` : recordLane(event.stream, event.recordId);
  }

  /** Holds `event` back behind its lane's held events (written with the next flush). */
  #hold(event: ChangeEvent, lane: string, heldAt: string): void {
    const held: HeldEvent = {
      endpoint: this.settings.name,
      seq: event.seq,
      eventId: event.eventId,
      type: event.type,
      stream: event.stream,
      recordId: event.recordId,
      attempts: 0,
      nextAttemptAt: null,
      heldAt,
      lastStatus: null,
      lastError: null,
    };
    this.#pending.holds.push(held);
    this.#holdInMemory(held, lane);
  }

  #holdInMemory(held: HeldEvent, lane = this.#laneOf(held)): void {
    let rows = this.#held.get(lane);
    if (!rows) this.#held.set(lane, (rows = []));
    rows.push(held);
    rows.sort((a, b) => a.seq - b.seq);
  }

  /** Starts the held events that are due (each lane's head) while fewer than `limit` requests are in flight. @returns ms until the next one is due */
  async #startHeld(nowMs: number, limit: number): Promise<number> {
    let nextDueMs = Number.POSITIVE_INFINITY;
    const due: HeldEvent[] = [];
    for (const rows of this.#held.values()) {
      const head = rows[0]!;
      if (this.#heldSending.has(head.seq)) continue;
      const at = head.nextAttemptAt === null ? nowMs : Date.parse(head.nextAttemptAt);
      if (at > nowMs) nextDueMs = Math.min(nextDueMs, at - nowMs);
      else due.push(head);
    }
    due.sort((a, b) => a.seq - b.seq);
    for (const held of due) {
      if (this.#inFlight >= limit) break;
      const [event] = await readChanges(this.#env.connection, { sinceSeq: held.seq - 1, limit: 1, dataJson: true });
      this.#send({ kind: 'held', held, event: event?.seq === held.seq ? event : null });
    }
    return nextDueMs;
  }

  /**
   * Starts ready active events, oldest first, while fewer than `limit` requests are in flight: in
   * one batch when the kind sends batches (`SinkSender.sendBatch`, each event of a different record),
   * else one request each.
   */
  #startActive(limit: number): void {
    const seen = new Set<string>();
    const ready: ActiveEvent[] = [];
    for (const entry of this.#active) {
      if (this.#inFlight + ready.length >= limit) break;
      if (seen.has(entry.lane)) continue; // an earlier event of its record goes first
      seen.add(entry.lane);
      if (entry.sending || this.#held.has(entry.lane)) continue;
      ready.push(entry);
    }
    if (ready.length > 1 && this.settings.sender.sendBatch) this.#sendBatch(ready);
    else for (const entry of ready) this.#send({ kind: 'active', entry });
  }

  /** Sends ready active events (each of a different record) in one batch unless the lease says no; their answers arrive in `#arrivals`. */
  #sendBatch(entries: readonly ActiveEvent[]): void {
    const env = this.#env;
    if (!env.mayDeliver()) return; // checked right before the batch leaves
    const generation = this.#generation;
    const attemptedAt = env.now().toISOString();
    for (const entry of entries) entry.sending = true;
    this.#inFlight += entries.length;
    const started = performance.now();
    const request = this.settings.sender.sendBatch!(
      entries.map((entry) => entry.event),
      env.abortSignal,
    ).then((outcomes) => {
      this.#inFlight -= entries.length;
      this.#inFlightRequests.delete(request);
      entries.forEach((entry, index) => {
        const outcome = outcomes[index] ?? failedWithoutAnswer('the sink gave no outcome for this event of its batch', started);
        this.#arrivals.push({ generation, attemptedAt, outcome, source: { kind: 'active', entry } });
      });
      this.#wakeup.wake();
    });
    this.#inFlightRequests.add(request);
  }

  /** Sends one event unless the lease says no; its answer arrives in `#arrivals`. */
  #send(source: Arrival['source']): void {
    const env = this.#env;
    const event = source.kind === 'active' ? source.entry.event : source.event;
    const generation = this.#generation;
    const attemptedAt = env.now().toISOString();
    if (event === null) {
      // A held event no longer in the changelog: nothing to send; it is given up on.
      const outcome: DeliveryOutcome = { ok: false, status: null, error: 'the event is no longer in the changelog', retryAfterMs: null, gone: false, aborted: false, durationMs: 0, response: null };
      this.#arrivals.push({ generation, attemptedAt, outcome, source });
      return;
    }
    if (!env.mayDeliver()) return; // checked right before the request leaves
    if (source.kind === 'active') source.entry.sending = true;
    else this.#heldSending.add(source.held.seq);
    this.#inFlight += 1;
    const request = this.settings.sender.send(event, env.abortSignal).then(
      (outcome) => {
        this.#inFlight -= 1;
        this.#inFlightRequests.delete(request);
        this.#arrivals.push({ generation, attemptedAt, outcome, source });
        this.#wakeup.wake();
      },
    );
    this.#inFlightRequests.add(request);
  }

  /** Settles the answers that arrived, in arrival order (module comment). */
  #settleArrivals(): void {
    const arrivals = this.#arrivals;
    this.#arrivals = [];
    for (const arrival of arrivals) this.#settle(arrival);
    if (this.#doneActive > 0) {
      this.#active = this.#active.filter((entry) => !entry.done);
      this.#doneActive = 0;
    }
  }

  /** Settles one answer: its attempt, the streak, and what becomes of its event. */
  #settle(arrival: Arrival): void {
    if (arrival.generation !== this.#generation) return; // sent before the loop started again
    const { outcome, source } = arrival;
    if (source.kind === 'active') source.entry.sending = false;
    else this.#heldSending.delete(source.held.seq);
    if (!outcome.ok && outcome.aborted) return; // stopping: not the receiver's failure, nothing recorded
    const event = source.kind === 'active' ? source.entry.event : source.held;
    const seq = event.seq;
    const attempt = source.kind === 'active' ? 1 : source.held.attempts + 1;
    const noEvent = source.kind === 'held' && source.event === null;
    if (!noEvent) {
      this.#env.report({ endpoint: this.settings.name, kind: this.settings.kind, seq, type: event.type, ok: outcome.ok, status: outcome.status, durationMs: outcome.durationMs });
      this.#pending.attempts.push({
        endpoint: this.settings.name,
        seq,
        eventId: event.eventId,
        type: event.type,
        attempt,
        attemptedAt: arrival.attemptedAt,
        outcome: outcome.ok ? 'delivered' : outcome.gone ? 'gone' : 'failed',
        status: outcome.status,
        latencyMs: outcome.durationMs,
        error: outcome.ok ? null : outcome.error,
        response: outcome.response,
      });
      this.#pending.lastAttempt = { at: arrival.attemptedAt, status: outcome.status };
    }
    if (outcome.ok) {
      this.deliveries += 1;
      this.#pending.delivered += 1;
      this.#pending.lastSuccessAt = arrival.attemptedAt;
      if (this.#streak.failures >= STALL_AFTER_FAILURES) {
        this.#makeHeldDue();
        this.#streakEnded(arrival.attemptedAt);
      }
      this.#streak = { failures: 0, failingSince: null, pausedUntil: null };
      this.#done(source);
      return;
    }
    const now = this.#env.now();
    if (!noEvent) {
      this.failures += 1;
      this.#pending.failed += 1;
      this.#pending.lastError = { at: arrival.attemptedAt, error: outcome.error };
      this.#lastFailure = outcome.error;
      this.#streak.failures += 1;
      this.#streak.failingSince ??= arrival.attemptedAt;
    }
    if (outcome.gone) {
      // Disabled at once; the event stays where it is (the cursor before it), as do the others.
      this.#disabling ??= { kind: 'gone', reason: outcome.error, goneStatus: null, safeUrl: safeUrl(this.settings.url) };
      return;
    }
    const giveUp = noEvent || attempt >= this.#env.maxAttempts;
    const retryInMs = giveUp ? 0 : nextRetryDelayMs(attempt, outcome.retryAfterMs, this.#env.retrySchedule);
    const failingForMs = this.#streak.failingSince === null ? 0 : now.getTime() - Date.parse(this.#streak.failingSince);
    if (this.#streak.failures >= STALL_AFTER_FAILURES) {
      // Down: the pause follows how long the endpoint has been failing, not how many attempts failed.
      const pauseMs = probeDelayMs(failingForMs, outcome.retryAfterMs, this.#env.probeIntervals, this.#env.retrySchedule);
      this.#streak.pausedUntil = new Date(now.getTime() + pauseMs).toISOString();
    }
    if (giveUp) {
      this.#giveUp(source, attempt, outcome.status, outcome.error, now);
    } else {
      this.#retryLater(source, arrival.attemptedAt, attempt, new Date(now.getTime() + retryInMs).toISOString(), outcome.status, outcome.error);
      this.#env.logger.warn(
        { endpoint: this.settings.name, seq, eventId: event.eventId, status: outcome.status, error: outcome.error, attempt, consecutiveFailures: this.#streak.failures, retryInMs },
        'webhook delivery failed; will retry',
      );
    }
    if (failingForMs >= this.settings.disableAfterMs) {
      const reason = `no 2xx for ${formatDays(failingForMs)} (failing since ${this.#streak.failingSince}; disableAfterDays ${formatDays(this.settings.disableAfterMs)}); last: ${outcome.error}`;
      this.#disabling ??= { kind: 'failing', reason, goneStatus: null, safeUrl: safeUrl(this.settings.url) };
    }
  }

  /** An acknowledgement ended a streak of at least `STALL_AFTER_FAILURES` (the sink was taken for down): kept for `sink.recovered`. */
  #streakEnded(at: string): void {
    this.#endedStreak ??= { failingSince: this.#streak.failingSince ?? at, failures: this.#streak.failures, lastError: this.#lastFailure };
  }

  /**
   * A sink's condition event to write with the state about to be written (docs/sinks.md "Condition
   * events"): `sink.failing` when its streak reaches `STALL_AFTER_FAILURES` (taken for down) where
   * the mirror's is below, `sink.recovered` when an acknowledgement ended such a streak the mirror
   * holds. Null for a webhook endpoint and when the condition stays.
   */
  #conditionChange(): SinkConditionRecord | null {
    if (this.settings.kind === WEBHOOK_KIND) return null;
    const wasDown = this.#storedFailures >= STALL_AFTER_FAILURES;
    const isDown = this.#streak.failures >= STALL_AFTER_FAILURES;
    const base = { sink: this.settings.name, sinkKind: this.settings.kind, url: safeUrl(this.settings.url), at: this.#env.now().toISOString() };
    if (!wasDown && isDown) {
      return { ...base, condition: 'failing', failingSince: this.#streak.failingSince ?? base.at, consecutiveFailures: this.#streak.failures, lastError: this.#lastFailure };
    }
    if (wasDown && !isDown && this.#endedStreak) {
      return { ...base, condition: 'ok', failingSince: this.#endedStreak.failingSince, consecutiveFailures: this.#endedStreak.failures, lastError: this.#endedStreak.lastError };
    }
    return null;
  }

  /** After a write: the stored streak is the loop's; a condition event written is logged and the other targets woken to deliver it. */
  #conditionWritten(condition: SinkConditionRecord | null): void {
    this.#storedFailures = this.#streak.failures;
    this.#endedStreak = null;
    if (!condition) return;
    const fields = { endpoint: condition.sink, sinkKind: condition.sinkKind, url: condition.url, failingSince: condition.failingSince, consecutiveFailures: condition.consecutiveFailures, lastError: condition.lastError };
    if (condition.condition === 'failing') this.#env.logger.warn(fields, `${condition.sinkKind} sink failing: ${STALL_AFTER_FAILURES} publishes in a row failed; it is probed until it acknowledges again (sink.failing appended)`);
    else this.#env.logger.info(fields, `${condition.sinkKind} sink recovered: the broker acknowledged again (sink.recovered appended)`);
    this.#env.notifyAll();
  }

  /**
   * The endpoint answered again after it was taken for down: every held event is due at once (its
   * failures were the endpoint's), its attempts kept.
   */
  #makeHeldDue(): void {
    for (const rows of this.#held.values()) {
      const head = rows[0]!;
      if (head.nextAttemptAt === null) continue;
      head.nextAttemptAt = null;
      this.#pending.madeDue.push(head);
    }
  }

  /** An operator ended the pause (endpoint-store.ts `endPause`, which also made the held events due): probe now. */
  #retryAsked(): void {
    this.#streak.pausedUntil = null;
    for (const rows of this.#held.values()) rows[0]!.nextAttemptAt = null;
  }

  /** The event is delivered (or given up on): it leaves the window, or its lane's held events. */
  #done(source: Arrival['source']): void {
    if (source.kind === 'active') {
      source.entry.done = true;
      this.#doneActive += 1;
      return;
    }
    this.#pending.releases.push(source.held.seq);
    const lane = this.#laneOf(source.held);
    const rows = (this.#held.get(lane) ?? []).filter((held) => held.seq !== source.held.seq);
    if (rows.length === 0) this.#held.delete(lane);
    else this.#held.set(lane, rows);
  }

  #giveUp(source: Arrival['source'], attempts: number, status: number | null, error: string, now: Date): void {
    const event = source.kind === 'active' ? source.entry.event : source.held;
    this.#pending.givenUp.push({ endpoint: this.settings.name, seq: event.seq, eventId: event.eventId, type: event.type, attempts, lastStatus: status, lastError: error, failedAt: now.toISOString() });
    this.#env.logger.error(
      { endpoint: this.settings.name, seq: event.seq, eventId: event.eventId, type: event.type, attempts, status, error },
      'webhook event given up after the last attempt of the retry schedule; its record moves on (webhooks replay --failed re-sends it)',
    );
    this.#done(source);
  }

  /** Holds a failed event back until `nextAttemptAt`, with the later active events of its record. */
  #retryLater(source: Arrival['source'], heldAt: string, attempts: number, nextAttemptAt: string, status: number | null, error: string): void {
    if (source.kind === 'held') {
      source.held.attempts = attempts;
      source.held.nextAttemptAt = nextAttemptAt;
      source.held.lastStatus = status;
      source.held.lastError = error;
      this.#pending.heldFailures.push({ seq: source.held.seq, attempts, nextAttemptAt, status, error });
      return;
    }
    const { entry } = source;
    this.#active.splice(this.#active.indexOf(entry), 1);
    const head: HeldEvent = {
      endpoint: this.settings.name,
      seq: entry.event.seq,
      eventId: entry.event.eventId,
      type: entry.event.type,
      stream: entry.event.stream,
      recordId: entry.event.recordId,
      attempts,
      nextAttemptAt,
      heldAt,
      lastStatus: status,
      lastError: error,
    };
    this.#pending.holds.push(head);
    this.#holdInMemory(head, entry.lane);
    // By record: the later events of the record wait in the table too, so the cursor passes them.
    // By endpoint: every later event waits in memory (the lane is held: nothing more is read).
    if (this.settings.ordering === 'record') {
      const followers = this.#active.filter((other) => other.lane === entry.lane && !other.done);
      this.#active = this.#active.filter((other) => other.lane !== entry.lane);
      for (const follower of followers) this.#hold(follower.event, follower.lane, heldAt);
    }
  }

  /**
   * True when what was settled should be written now: a held event or a give-up (state a restart
   * must find), a disablement to follow, nothing in flight (idle), `FLUSH_EVERY_ATTEMPTS` attempts
   * waiting, or `FLUSH_EVERY_MS` since the last write. Otherwise the writes of several answers go
   * in one transaction: a crash then re-sends at most those answers' events (at-least-once).
   */
  #flushDue(): boolean {
    const pending = this.#pending;
    if (pending.empty && this.#nextCursor() === this.#cursor) return false;
    return (
      pending.holds.length > 0 ||
      pending.heldFailures.length > 0 ||
      pending.releases.length > 0 ||
      pending.madeDue.length > 0 ||
      pending.givenUp.length > 0 ||
      this.#disabling !== null ||
      this.#inFlight === 0 ||
      pending.attempts.length >= FLUSH_EVERY_ATTEMPTS ||
      Date.now() - this.#flushedAt >= FLUSH_EVERY_MS
    );
  }

  /** The cursor to write: the last seq before the oldest active event, or the frontier when none is. */
  #nextCursor(): number {
    return this.#active.length > 0 ? this.#active[0]!.event.seq - 1 : this.#frontier;
  }

  /**
   * Writes what was settled, with the new cursor and the streak, in one fenced transaction.
   * @returns false when the cursor had moved (a replay): the loop starts again from the stored state
   */
  async #flush(): Promise<boolean> {
    const pending = this.#pending;
    this.#pending = new PendingWrites();
    const cursor = this.#nextCursor();
    const name = this.settings.name;
    const condition = this.#conditionChange();
    try {
      await this.#env.write(async (tx) => {
        // A pause cleared in the mirror since it was written (`webhooks retry`, the console) wins over this write.
        if (this.#storedPause !== null && (await loadEndpoint(tx, name))?.nextAttemptAt === null) this.#retryAsked();
        await insertHeldEvents(tx, pending.holds);
        for (const failure of pending.heldFailures) await recordHeldFailure(tx, name, failure.seq, failure);
        // After the failures: each made-due event's retry time as it stands now (a later failure set it again).
        await setHeldRetryTimes(tx, name, pending.madeDue);
        for (const failed of pending.givenUp) await insertFailedDelivery(tx, failed);
        await deleteHeldEvents(tx, name, [...pending.releases, ...pending.givenUp.map((failed) => failed.seq)]);
        await insertAttempts(tx, pending.attempts);
        const moved = await recordProgress(tx, name, this.#cursor, {
          deliveredSeq: cursor,
          delivered: pending.delivered,
          failed: pending.failed,
          ...(pending.lastAttempt ? { lastAttempt: pending.lastAttempt } : {}),
          ...(pending.lastError ? { lastError: pending.lastError } : {}),
          ...(pending.lastSuccessAt ? { lastSuccessAt: pending.lastSuccessAt } : {}),
          consecutiveFailures: this.#streak.failures,
          failingSince: this.#streak.failingSince,
          nextAttemptAt: this.#streak.failures >= STALL_AFTER_FAILURES ? this.#streak.pausedUntil : null,
        });
        if (!moved) throw new CursorMovedError();
        if (condition) await appendSinkCondition(tx, condition, this.#env.now());
      });
    } catch (error) {
      if (!(error instanceof CursorMovedError)) {
        this.#restore(pending);
        throw error;
      }
      this.#env.logger.info({ endpoint: name }, 'webhook endpoint cursor moved by another process (a replay): delivery resumes from it');
      await this.#load();
      return false;
    }
    this.#cursor = cursor;
    this.#storedPause = this.#streak.failures >= STALL_AFTER_FAILURES ? this.#streak.pausedUntil : null;
    this.#conditionWritten(condition);
    this.#flushedAt = Date.now();
    if (this.#streak.failures < STALL_AFTER_FAILURES) this.#streak.pausedUntil = null;
    return true;
  }

  /** A write that failed (database busy): what it held is written with the next one. */
  #restore(pending: PendingWrites): void {
    const next = this.#pending;
    pending.attempts.push(...next.attempts);
    pending.holds.push(...next.holds);
    pending.heldFailures.push(...next.heldFailures);
    pending.releases.push(...next.releases);
    pending.madeDue.push(...next.madeDue);
    pending.givenUp.push(...next.givenUp);
    pending.delivered += next.delivered;
    pending.failed += next.failed;
    pending.lastAttempt = next.lastAttempt ?? pending.lastAttempt;
    pending.lastError = next.lastError ?? pending.lastError;
    pending.lastSuccessAt = next.lastSuccessAt ?? pending.lastSuccessAt;
    this.#pending = pending;
  }

  /** Disables the endpoint (appending the `webhook.endpoint_disabled` change) and wakes the others so they deliver it. */
  async #disable(disablement: Disablement): Promise<void> {
    const env = this.#env;
    const changeSeq = await env.write((executor) => disableEndpoint(executor, this.settings.name, this.#cursor, disablement, env.now(), this.settings.kind));
    this.#disabled = true;
    if (changeSeq === null) return;
    const commands = this.settings.kind === 'webhook' ? 'webhooks enable (or replay)' : 'sinks enable (or replay)';
    env.logger.warn(
      { endpoint: this.settings.name, sinkKind: this.settings.kind, url: safeUrl(this.settings.url), kind: disablement.kind, reason: disablement.reason, changeSeq },
      disablement.kind === 'gone'
        ? `webhook endpoint disabled: the receiver answered 410 Gone; ${commands} re-enables it`
        : `${this.settings.kind === 'webhook' ? 'webhook endpoint' : `${this.settings.kind} sink`} disabled: failing for longer than disableAfterDays; ${commands} re-enables it`,
    );
    env.notifyAll();
  }
}

/** The URL without credentials or query string, for logs. */
export function safeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    // A broker's URL (nats:, amqp:, redis:) has no origin: its scheme and host stand for it.
    return `${parsed.origin === 'null' ? `${parsed.protocol}//${parsed.host}` : parsed.origin}${parsed.pathname}`;
  } catch {
    return '[invalid URL]';
  }
}

const DAY_MS = 86_400_000;

/** `5 days`, `1.5 days`, `0.0001 days` (for reasons shown to operators). */
function formatDays(ms: number): string {
  const days = ms / DAY_MS;
  return `${Number(days.toPrecision(3))} day${days === 1 ? '' : 's'}`;
}

/**
 * True when the loop's connection was closed under it (the loop cannot go on). Known for SQLite
 * (`sqlite.open`); a PostgreSQL pool's closing is not recognised (such a loop retries with backoff
 * until `stop()`).
 */
function connectionClosed(executor: SqlExecutor): boolean {
  return executor instanceof SqliteConnection && !executor.sqlite.open;
}
