/**
 * The `webhook_endpoints` table (src/mirror/migrations/002_webhooks.ts, `kind` from 016_sinks.ts):
 * each delivery target's (a webhook endpoint's or a sink's) durable cursor into the changelog and
 * its delivery state. Every function is one SQL statement or one
 * transaction (`executor.transaction`), so each state change is atomic. Every function runs through
 * a `SqlExecutor` (src/mirror/sql/executor.ts), whichever back end holds the mirror; given a
 * transaction's executor, it runs inside that transaction.
 *
 * Cursor writes are compare-and-set on `delivered_seq`: they apply only if the cursor still holds
 * the value the caller read. A `webhooks replay` run by another process while a delivery is in
 * flight therefore wins; the dispatcher sees that nothing changed and re-reads the cursor.
 */
import { maskUrlCredentials } from '../../logging/mask-url.ts';
import { encodeChangeData } from '../../mirror/changelog-format.ts';
import type { SqlExecutor, SqlValue } from '../../mirror/sql/executor.ts';
import { timeOrderedUuid } from '../../mirror/time-ordered-uuid.ts';
import { lastChangeSeq } from '../../mirror/changelog-format.ts';
import { parseSnapshot, startSnapshot, type SnapshotState } from '../snapshot.ts';

/** Why an endpoint is disabled: the receiver answered 410 Gone, or it kept failing for `disableAfterDays`. */
export type DisabledKind = 'gone' | 'failing';

/** The changelog event type appended when an endpoint is disabled (delivered to the other endpoints). */
export const ENDPOINT_DISABLED_EVENT = 'webhook.endpoint_disabled';

/** The changelog event type appended when a sink is disabled (delivered to the endpoints and the other sinks). */
export const SINK_DISABLED_EVENT = 'sink.disabled';

/** The changelog event type appended when a sink is taken for down: its publishes failed `STALL_AFTER_FAILURES` times in a row. */
export const SINK_FAILING_EVENT = 'sink.failing';

/** The changelog event type appended when a sink that was taken for down acknowledged a publish again. */
export const SINK_RECOVERED_EVENT = 'sink.recovered';

/** `data.record` of a `sink.failing` or `sink.recovered` event (docs/events.md, docs/sinks.md "Condition events"). */
export interface SinkConditionRecord {
  sink: string;
  /** `nats`, `rabbitmq` or `redis-stream`. */
  sinkKind: string;
  /** The broker's URL without credentials. */
  url: string;
  /** The condition the sink entered: `failing` (taken for down) or `ok` (acknowledging again). */
  condition: 'failing' | 'ok';
  /** When its failed publishes in a row began (ISO 8601). */
  failingSince: string;
  /** Its failed publishes in a row: so far (`failing`), or before the acknowledgement that ended them (`ok`). */
  consecutiveFailures: number;
  /** The last failed publish's error (one line, no secret), null when none is known. */
  lastError: string | null;
  /** When the condition changed (ISO 8601). */
  at: string;
}

/**
 * Appends a sink's `sink.failing` or `sink.recovered` change (stream `sinks`, record id the sink's
 * name, `data.changes` `{}`) inside the caller's transaction, so it is written with the delivery
 * state that made the condition change, once per transition.
 * @returns the seq of the appended change
 * @throws the driver's error when the mirror cannot be written
 */
export async function appendSinkCondition(tx: SqlExecutor, record: SinkConditionRecord, now: Date): Promise<number> {
  const appended = await tx.get<{ seq: number }>('INSERT INTO changes (event_id, type, stream, record_id, occurred_at, data) VALUES (?, ?, ?, ?, ?, ?) RETURNING seq', [
    `evt_${timeOrderedUuid(now.getTime())}`,
    record.condition === 'failing' ? SINK_FAILING_EVENT : SINK_RECOVERED_EVENT,
    'sinks',
    record.sink,
    record.at,
    encodeChangeData({ record, changes: {} }),
  ]);
  if (!appended) throw new Error(`sink ${record.sink}: the ${record.condition} change returned no seq`);
  await tx.changesAppended();
  return Number(appended.seq);
}

/** The kind of a webhook endpoint's row; a sink's row holds its kind (`nats`, `rabbitmq`, `redis-stream`). */
export const WEBHOOK_KIND = 'webhook';

/** One endpoint's stored state (times ISO 8601). */
export interface WebhookEndpointState {
  name: string;
  /** `webhook`, or the sink's kind. */
  kind: string;
  /** The URL as stored: its credentials masked (`maskUrlCredentials`); delivery uses the configured one. */
  url: string;
  /** The cursor: the last changes.seq delivered with a 2xx or skipped by the endpoint's filter. */
  deliveredSeq: number;
  createdAt: string;
  /** Set when the endpoint was disabled (410 Gone, or failing for `disableAfterDays`); null while enabled. */
  disabledAt: string | null;
  disabledReason: string | null;
  /** Why, for metrics labels: `gone` (410) or `failing`; null while enabled. */
  disabledKind: DisabledKind | null;
  /** First failed attempt since the last 2xx; null while the endpoint answers. */
  failingSince: string | null;
  /** Failed attempts in a row for the next event to deliver (column `attempts`). */
  consecutiveFailures: number;
  /** Earliest time of the next attempt; null means now. */
  nextAttemptAt: string | null;
  lastAttemptAt: string | null;
  lastStatus: number | null;
  lastSuccessAt: string | null;
  lastError: string | null;
  lastErrorAt: string | null;
  /** Events delivered with a 2xx, all time. */
  deliveredCount: number;
  /** Failed attempts, all time. */
  failedCount: number;
  /** The snapshot it is sending before the changelog (src/notify/snapshot.ts); null when none (or done). */
  snapshot: SnapshotState | null;
}

interface EndpointRow {
  name: string;
  kind: string;
  url: string;
  delivered_seq: number;
  created_at: string;
  disabled_at: string | null;
  disabled_reason: string | null;
  disabled_kind: string | null;
  failing_since: string | null;
  attempts: number;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_status: number | null;
  last_success_at: string | null;
  last_error: string | null;
  last_error_at: string | null;
  delivered_count: number;
  failed_count: number;
  snapshot: string | null;
}


/**
 * Ensures a row exists for a configured endpoint.
 *
 * A new endpoint starts at the current end of the changelog (`delivered_seq` = its last seq, read in
 * the same transaction): it receives changes from now on, not the whole history, which could
 * be millions of events the receiver never asked for. `webhooks replay <name> --since <seq>`
 * delivers history on request.
 *
 * The row keeps the URL without its credentials (`maskUrlCredentials`: user, password, query values
 * and fragment masked); the full URL stays in the configuration, in memory, and delivery uses it.
 * The masked URL is the endpoint's identity: a new credential (a rotated `?token=`) is the same
 * receiver and keeps its state. When the masked URL differs from the stored one (another host, path
 * or parameter), or the kind differs, the URL is updated and the old URL's backoff and 410 disablement are cleared: a new
 * URL is a new receiver. The cursor is kept.
 * @param configuredUrl the configured URL, credentials included (never stored)
 * @param kind `webhook` (default) or the sink's kind
 * @returns the stored state after the change, and whether the row was created or its URL changed
 */
export async function registerEndpoint(
  executor: SqlExecutor,
  name: string,
  configuredUrl: string,
  now: Date = new Date(),
  kind: string = WEBHOOK_KIND,
  snapshotStreams: readonly string[] | null = null,
): Promise<{ state: WebhookEndpointState; created: boolean; urlChanged: boolean }> {
  const at = now.toISOString();
  const url = maskUrlCredentials(configuredUrl);
  return executor.transaction(async (tx) => {
    const created =
      (
        await tx.run('INSERT INTO webhook_endpoints (name, kind, url, delivered_seq, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING', [
          name,
          kind,
          url,
          await lastChangeSeq(tx),
          at,
        ])
      ).changes === 1;
    const urlChanged =
      !created &&
      (
        await tx.run(
          `UPDATE webhook_endpoints SET url = ?, kind = ?, attempts = 0, next_attempt_at = NULL, disabled_at = NULL, disabled_reason = NULL,
             disabled_kind = NULL, failing_since = NULL
           WHERE name = ? AND (url <> ? OR kind <> ?)`,
          [url, kind, name, url, kind],
        )
      ).changes === 1;
    const state = await loadEndpoint(tx, name);
    if (!state) throw new Error(`webhook endpoint ${name}: row missing right after registering it`);
    if (created && snapshotStreams !== null) {
      // `initial: "snapshot"`: the current rows first, then the changes after this boundary (src/notify/snapshot.ts).
      const snapshot = await startSnapshot(tx, snapshotStreams);
      await tx.run('UPDATE webhook_endpoints SET delivered_seq = ?, snapshot = ? WHERE name = ?', [snapshot.boundary, JSON.stringify(snapshot), name]);
      return { state: { ...state, deliveredSeq: snapshot.boundary, snapshot }, created, urlChanged };
    }
    return { state, created, urlChanged };
  });
}

/** The stored state of one endpoint, or undefined when it was never registered. */
export async function loadEndpoint(executor: SqlExecutor, name: string): Promise<WebhookEndpointState | undefined> {
  const row = await executor.get<EndpointRow>('SELECT * FROM webhook_endpoints WHERE name = ?', [name]);
  return row ? toState(row) : undefined;
}

/** Every stored endpoint, by name. */
export async function loadAllEndpoints(executor: SqlExecutor): Promise<WebhookEndpointState[]> {
  return (await executor.all<EndpointRow>('SELECT * FROM webhook_endpoints ORDER BY name')).map(toState);
}

/**
 * What the dispatcher learned since its last write for one endpoint (`recordProgress`): the new
 * cursor, the attempts' counts, the last attempt, and the endpoint's failure streak as it now stands.
 */
export interface EndpointProgress {
  /** The new cursor: every event at or below it is delivered, filtered out, given up on or held back. */
  deliveredSeq: number;
  /** 2xx answers since the last write. */
  delivered: number;
  /** Failed attempts since the last write. */
  failed: number;
  /** The latest attempt since the last write, if any (its status: null without an answer). */
  lastAttempt?: { at: string; status: number | null };
  /** The latest failed attempt since the last write, if any. */
  lastError?: { at: string; error: string };
  /** The latest 2xx since the last write (ISO 8601). */
  lastSuccessAt?: string;
  /** Failed attempts in a row, any event, since the last 2xx (the endpoint's streak). */
  consecutiveFailures: number;
  /** First failed attempt since the last 2xx; null while the endpoint answers. */
  failingSince: string | null;
  /** Until when the endpoint sends no new event (a streak of failures pauses it); null: no pause. */
  nextAttemptAt: string | null;
}

/**
 * Writes an endpoint's progress (module `EndpointProgress`) in one statement, compare-and-set on
 * the cursor.
 * @returns false when the cursor no longer holds `expectedSeq` (moved by a replay): nothing changed
 */
export async function recordProgress(executor: SqlExecutor, name: string, expectedSeq: number, progress: EndpointProgress): Promise<boolean> {
  const sets = [
    'delivered_seq = ?',
    'delivered_count = delivered_count + ?',
    'failed_count = failed_count + ?',
    'attempts = ?',
    'failing_since = ?',
    'next_attempt_at = ?',
  ];
  const values: SqlValue[] = [progress.deliveredSeq, progress.delivered, progress.failed, progress.consecutiveFailures, progress.failingSince, progress.nextAttemptAt];
  if (progress.lastAttempt) {
    sets.push('last_attempt_at = ?', 'last_status = ?');
    values.push(progress.lastAttempt.at, progress.lastAttempt.status);
  }
  if (progress.lastError) {
    sets.push('last_error = ?', 'last_error_at = ?');
    values.push(progress.lastError.error, progress.lastError.at);
  }
  if (progress.lastSuccessAt !== undefined) {
    sets.push('last_success_at = ?');
    values.push(progress.lastSuccessAt);
  }
  const result = await executor.run(`UPDATE webhook_endpoints SET ${sets.join(', ')} WHERE name = ? AND delivered_seq = ?`, [...values, name, expectedSeq]);
  return result.changes === 1;
}

/** Why `disableEndpoint` disables an endpoint. */
export interface Disablement {
  kind: DisabledKind;
  /** One line for `webhooks list` and the event, e.g. `HTTP 410 Gone: ...` or `no 2xx for 5 days (since ...)`. */
  reason: string;
  /** For a 410, the attempt that answered it: counted as a failed attempt. Null when disabling after a recorded failure. */
  goneStatus: number | null;
  /** The endpoint's URL without credentials or query, for the event's data. */
  safeUrl: string;
}

/**
 * Disables an endpoint (410 Gone, or failing for `disableAfterDays`) and appends a
 * `webhook.endpoint_disabled` change (a sink: `sink.disabled`) to the changelog, in one transaction,
 * so every other target (and `bizops-sync changes`) learns of it. The cursor stays where it is:
 * `webhooks enable` (`sinks enable`) or a replay resumes with the event that was failing. Change data:
 * `{ record: { endpoint, url, kind, reason, failingSince, disabledAt }, changes: { enabled: { old: true, new: false } } }`,
 * a sink's `{ record: { sink, sinkKind, url, kind, reason, failingSince, disabledAt }, ... }` in stream `sinks`.
 * @param targetKind `webhook` (default) or the sink's kind
 * @returns the seq of the appended change, or null when the cursor no longer holds `expectedSeq`
 *   or the endpoint is already disabled (nothing changed)
 */
export async function disableEndpoint(
  executor: SqlExecutor,
  name: string,
  expectedSeq: number,
  disablement: Disablement,
  now: Date = new Date(),
  targetKind: string = WEBHOOK_KIND,
): Promise<number | null> {
  const at = now.toISOString();
  return executor.transaction(async (tx): Promise<number | null> => {
    const before = await loadEndpoint(tx, name);
    const changed =
      (
        await tx.run(
          `UPDATE webhook_endpoints
           SET disabled_at = ?, disabled_reason = ?, disabled_kind = ?, next_attempt_at = NULL
           WHERE name = ? AND delivered_seq = ? AND disabled_at IS NULL`,
          [at, disablement.reason, disablement.kind, name, expectedSeq],
        )
      ).changes === 1;
    if (!changed) return null;
    if (disablement.goneStatus !== null) {
      await tx.run(
        `UPDATE webhook_endpoints SET last_attempt_at = ?, last_status = ?, last_error = ?, last_error_at = ?, failed_count = failed_count + 1,
           failing_since = COALESCE(failing_since, ?) WHERE name = ?`,
        [at, disablement.goneStatus, disablement.reason, at, at, name],
      );
    }
    const sink = targetKind !== WEBHOOK_KIND;
    const record = {
      ...(sink ? { sink: name, sinkKind: targetKind } : { endpoint: name }),
      url: disablement.safeUrl,
      kind: disablement.kind,
      reason: disablement.reason,
      failingSince: before?.failingSince ?? at,
      disabledAt: at,
    };
    // Plain SQL, as MirrorStore.appendChange writes a change: same columns, same `data` format.
    const appended = await tx.get<{ seq: number }>('INSERT INTO changes (event_id, type, stream, record_id, occurred_at, data) VALUES (?, ?, ?, ?, ?, ?) RETURNING seq', [
      `evt_${timeOrderedUuid(now.getTime())}`,
      sink ? SINK_DISABLED_EVENT : ENDPOINT_DISABLED_EVENT,
      sink ? 'sinks' : 'webhooks',
      name,
      at,
      encodeChangeData({ record, changes: { enabled: { old: true, new: false } } }),
    ]);
    if (!appended) throw new Error(`${sink ? 'sink' : 'webhook endpoint'} ${name}: the disabled change returned no seq`);
    await tx.changesAppended();
    return Number(appended.seq);
  });
}

/**
 * Re-enables a disabled endpoint where its cursor stands (the event that was failing comes next),
 * clearing its backoff and failure streak.
 * @returns the state before, or undefined when the endpoint was never registered
 */
export async function enableEndpoint(executor: SqlExecutor, name: string): Promise<WebhookEndpointState | undefined> {
  return executor.transaction(async (tx) => {
    const before = await loadEndpoint(tx, name);
    if (!before) return undefined;
    await tx.run(
      `UPDATE webhook_endpoints SET disabled_at = NULL, disabled_reason = NULL, disabled_kind = NULL, failing_since = NULL, attempts = 0, next_attempt_at = NULL
       WHERE name = ?`,
      [name],
    );
    return before;
  });
}

/**
 * Records where an endpoint's snapshot stands (null: done, the changelog after its boundary comes
 * next) and the streak of its attempts, compare-and-set on the stored snapshot's position.
 * @returns false when the stored snapshot is not `expected` any more (a replay or reset): nothing changed
 */
export async function recordSnapshotProgress(
  executor: SqlExecutor,
  name: string,
  expected: SnapshotState,
  next: SnapshotState | null,
  streak: { consecutiveFailures: number; failingSince: string | null; nextAttemptAt: string | null; delivered: number; failed: number; lastAttempt?: { at: string; status: number | null }; lastError?: { at: string; error: string }; lastSuccessAt?: string },
): Promise<boolean> {
  const stored = await loadEndpoint(executor, name);
  if (!stored?.snapshot || JSON.stringify(stored.snapshot) !== JSON.stringify(expected)) return false;
  const sets = ['snapshot = ?', 'attempts = ?', 'failing_since = ?', 'next_attempt_at = ?', 'delivered_count = delivered_count + ?', 'failed_count = failed_count + ?'];
  const values: SqlValue[] = [next === null ? null : JSON.stringify(next), streak.consecutiveFailures, streak.failingSince, streak.nextAttemptAt, streak.delivered, streak.failed];
  if (streak.lastAttempt) {
    sets.push('last_attempt_at = ?', 'last_status = ?');
    values.push(streak.lastAttempt.at, streak.lastAttempt.status);
  }
  if (streak.lastError) {
    sets.push('last_error = ?', 'last_error_at = ?');
    values.push(streak.lastError.error, streak.lastError.at);
  }
  if (streak.lastSuccessAt) {
    sets.push('last_success_at = ?');
    values.push(streak.lastSuccessAt);
  }
  await executor.run(`UPDATE webhook_endpoints SET ${sets.join(', ')} WHERE name = ?`, [...values, name]);
  return true;
}

/**
 * Ends an endpoint's pause now (`webhooks retry`, `sinks retry`, the console's "Retry now"): its next
 * event goes out at once as a probe, and its held events are due at once (attempts kept). A
 * disabled endpoint is left as it is (`enableEndpoint` re-enables).
 * @returns the state before, or undefined when the endpoint was never registered
 */
export async function endPause(executor: SqlExecutor, name: string): Promise<WebhookEndpointState | undefined> {
  return executor.transaction(async (tx) => {
    const before = await loadEndpoint(tx, name);
    if (!before || before.disabledAt !== null) return before;
    await tx.run('UPDATE webhook_endpoints SET next_attempt_at = NULL WHERE name = ?', [name]);
    await tx.run('UPDATE webhook_held_events SET next_attempt_at = NULL WHERE endpoint = ? AND next_attempt_at IS NOT NULL', [name]);
    return before;
  });
}

/**
 * Moves the cursor to `seq` (back, for a replay), clears the backoff and re-enables the endpoint.
 * Callers that check the current cursor first wrap both in one transaction.
 * @returns false when the endpoint was never registered
 */
export async function resetCursor(executor: SqlExecutor, name: string, seq: number): Promise<boolean> {
  const result = await executor.run(
    `UPDATE webhook_endpoints SET delivered_seq = ?, attempts = 0, next_attempt_at = NULL, disabled_at = NULL, disabled_reason = NULL,
       disabled_kind = NULL, failing_since = NULL
     WHERE name = ?`,
    [seq, name],
  );
  return result.changes === 1;
}

/** How far an endpoint is behind the changelog. */
export interface EndpointLag {
  /** MAX(changes.seq) − delivered_seq (events not yet delivered or skipped). */
  lagEvents: number;
  /** now − occurred_at of the oldest event after the cursor, seconds; 0 when caught up. */
  lagSeconds: number;
  /** MAX(changes.seq). */
  latestSeq: number;
}

/**
 * Events an endpoint has still to deliver: those after its cursor plus those it holds back at or before
 * it (a held event after the cursor is already among the first; counting it twice overstated the lag
 * while a failing record's events were being held and the cursor had not yet moved past them).
 * @param held the seqs of the endpoint's held-back events
 */
export function undeliveredEvents(lag: EndpointLag, deliveredSeq: number, held: readonly { seq: number }[]): number {
  return lag.lagEvents + held.filter((event) => event.seq <= deliveredSeq).length;
}

/**
 * The lag of a cursor at `deliveredSeq`.
 * @param oldestHeldSeq the endpoint's oldest held-back event, if any: the lag in seconds counts from it when it is older
 */
export async function endpointLag(executor: SqlExecutor, deliveredSeq: number, now: Date = new Date(), oldestHeldSeq?: number): Promise<EndpointLag> {
  const latestSeq = await lastChangeSeq(executor);
  const from = oldestHeldSeq === undefined ? deliveredSeq : Math.min(deliveredSeq, oldestHeldSeq - 1);
  const oldest = await executor.get<{ occurred_at: string }>('SELECT occurred_at FROM changes WHERE seq > ? ORDER BY seq LIMIT 1', [from]);
  const occurred = oldest ? Date.parse(oldest.occurred_at) : Number.NaN;
  return {
    lagEvents: Math.max(0, latestSeq - deliveredSeq),
    lagSeconds: Number.isNaN(occurred) ? 0 : Math.max(0, Math.round((now.getTime() - occurred) / 100) / 10),
    latestSeq,
  };
}

function toState(row: EndpointRow): WebhookEndpointState {
  return {
    name: row.name,
    kind: row.kind ?? WEBHOOK_KIND,
    url: row.url,
    deliveredSeq: row.delivered_seq,
    createdAt: row.created_at,
    disabledAt: row.disabled_at,
    disabledReason: row.disabled_reason,
    disabledKind: row.disabled_kind === 'gone' || row.disabled_kind === 'failing' ? row.disabled_kind : row.disabled_at === null ? null : 'gone',
    failingSince: row.failing_since,
    consecutiveFailures: row.attempts,
    nextAttemptAt: row.next_attempt_at,
    lastAttemptAt: row.last_attempt_at,
    lastStatus: row.last_status,
    lastSuccessAt: row.last_success_at,
    lastError: row.last_error,
    lastErrorAt: row.last_error_at,
    deliveredCount: row.delivered_count,
    failedCount: row.failed_count,
    snapshot: parseSnapshot(row.snapshot ?? null),
  };
}

/**
 * Replaces every stored URL that still holds credentials (a user, a password, query values, a
 * fragment) by its masked form (`maskUrlCredentials`), endpoints no longer configured included,
 * keeping each endpoint's state; then `registerEndpoint` finds a rotated credential the same URL.
 * The dispatcher calls it at start, before registering its endpoints.
 * @returns how many rows changed
 */
export async function forgetStoredCredentials(executor: SqlExecutor): Promise<number> {
  return executor.transaction(async (tx) => {
    let changed = 0;
    for (const row of await tx.all<{ name: string; url: string }>('SELECT name, url FROM webhook_endpoints')) {
      const masked = maskUrlCredentials(row.url);
      if (masked !== row.url) changed += (await tx.run('UPDATE webhook_endpoints SET url = ? WHERE name = ? AND url = ?', [masked, row.name, row.url])).changes;
    }
    return changed;
  });
}
