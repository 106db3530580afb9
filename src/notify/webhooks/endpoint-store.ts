/**
 * The `webhook_endpoints` table (src/mirror/migrations/002_webhooks.ts): each endpoint's durable
 * cursor into the changelog and its delivery state. Every function is one SQL statement, so each
 * state change is atomic.
 *
 * Cursor writes are compare-and-set on `delivered_seq`: they apply only if the cursor still holds
 * the value the caller read. A `webhooks replay` run by another process while a delivery is in
 * flight therefore wins; the dispatcher sees that nothing changed and re-reads the cursor.
 */
import type { Statement } from 'better-sqlite3';
import { lastChangeSeq } from '../../mirror/changelog.ts';
import type { MirrorDatabase } from '../../mirror/database.ts';

/** One endpoint's stored state (times ISO 8601). */
export interface WebhookEndpointState {
  name: string;
  url: string;
  /** The cursor: the last changes.seq delivered with a 2xx or skipped by the endpoint's filter. */
  deliveredSeq: number;
  createdAt: string;
  /** Set when the receiver answered 410 Gone; null while enabled. */
  disabledAt: string | null;
  disabledReason: string | null;
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
}

interface EndpointRow {
  name: string;
  url: string;
  delivered_seq: number;
  created_at: string;
  disabled_at: string | null;
  disabled_reason: string | null;
  attempts: number;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_status: number | null;
  last_success_at: string | null;
  last_error: string | null;
  last_error_at: string | null;
  delivered_count: number;
  failed_count: number;
}

const statements = new WeakMap<MirrorDatabase, Map<string, Statement>>();

/** A prepared statement, cached per connection. */
function statement(db: MirrorDatabase, sql: string): Statement {
  let cache = statements.get(db);
  if (!cache) statements.set(db, (cache = new Map()));
  let prepared = cache.get(sql);
  if (!prepared) cache.set(sql, (prepared = db.prepare(sql)));
  return prepared;
}

/**
 * Ensures a row exists for a configured endpoint.
 *
 * A new endpoint starts at the current end of the changelog (`delivered_seq` = its last seq, read in
 * the same transaction): it receives changes from now on, not the whole history, which could
 * be millions of events the receiver never asked for. `webhooks replay <name> --since <seq>`
 * delivers history on request.
 *
 * When the configured URL differs from the stored one, the URL is updated and the old URL's
 * backoff and 410 disablement are cleared: a new URL is a new receiver. The cursor is kept.
 * @returns the stored state after the change, and whether the row was created or its URL changed
 */
export function registerEndpoint(db: MirrorDatabase, name: string, url: string, now: Date = new Date()): { state: WebhookEndpointState; created: boolean; urlChanged: boolean } {
  const at = now.toISOString();
  const register = db.transaction(() => {
    const created =
      statement(db, 'INSERT INTO webhook_endpoints (name, url, delivered_seq, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (name) DO NOTHING').run(
        name,
        url,
        lastChangeSeq(db),
        at,
      ).changes === 1;
    const urlChanged =
      !created &&
      statement(
        db,
        `UPDATE webhook_endpoints SET url = ?, attempts = 0, next_attempt_at = NULL, disabled_at = NULL, disabled_reason = NULL
         WHERE name = ? AND url <> ?`,
      ).run(url, name, url).changes === 1;
    const state = loadEndpoint(db, name);
    if (!state) throw new Error(`webhook endpoint ${name}: row missing right after registering it`);
    return { state, created, urlChanged };
  });
  return db.inTransaction ? register() : register.immediate();
}

/** The stored state of one endpoint, or undefined when it was never registered. */
export function loadEndpoint(db: MirrorDatabase, name: string): WebhookEndpointState | undefined {
  const row = statement(db, 'SELECT * FROM webhook_endpoints WHERE name = ?').get(name) as EndpointRow | undefined;
  return row ? toState(row) : undefined;
}

/** Every stored endpoint, by name. */
export function loadAllEndpoints(db: MirrorDatabase): WebhookEndpointState[] {
  return (statement(db, 'SELECT * FROM webhook_endpoints ORDER BY name').all() as EndpointRow[]).map(toState);
}

/**
 * Records a 2xx for the event at `seq` and moves the cursor to it, in one statement (the cursor
 * covers any filtered-out events between `expectedSeq` and `seq`).
 * @returns false when the cursor no longer holds `expectedSeq` (moved by a replay): nothing changed
 */
export function recordDelivered(db: MirrorDatabase, name: string, expectedSeq: number, seq: number, status: number, now: Date = new Date()): boolean {
  const at = now.toISOString();
  return (
    statement(
      db,
      `UPDATE webhook_endpoints
       SET delivered_seq = ?, attempts = 0, next_attempt_at = NULL, last_attempt_at = ?, last_status = ?, last_success_at = ?,
           delivered_count = delivered_count + 1
       WHERE name = ? AND delivered_seq = ?`,
    ).run(seq, at, status, at, name, expectedSeq).changes === 1
  );
}

/**
 * Moves the cursor past events the endpoint's filter excludes (no delivery, no counters).
 * @returns false when the cursor no longer holds `expectedSeq`
 */
export function recordSkipped(db: MirrorDatabase, name: string, expectedSeq: number, seq: number): boolean {
  return statement(db, 'UPDATE webhook_endpoints SET delivered_seq = ? WHERE name = ? AND delivered_seq = ?').run(seq, name, expectedSeq).changes === 1;
}

/** A failed delivery attempt as `recordFailure` stores it: the answer (or none) and when to retry. */
export interface FailedAttempt {
  status: number | null;
  error: string;
  /** ms from `now` until the next attempt. */
  retryInMs: number;
}

/**
 * Records a failed attempt for the next event after `expectedSeq` and when to retry it.
 * @returns the endpoint's consecutive failures after this one, or null when the cursor no longer
 *   holds `expectedSeq` (nothing recorded)
 */
export function recordFailure(db: MirrorDatabase, name: string, expectedSeq: number, attempt: FailedAttempt, now: Date = new Date()): number | null {
  const at = now.toISOString();
  const row = statement(
    db,
    `UPDATE webhook_endpoints
     SET attempts = attempts + 1, next_attempt_at = ?, last_attempt_at = ?, last_status = ?, last_error = ?, last_error_at = ?,
         failed_count = failed_count + 1
     WHERE name = ? AND delivered_seq = ?
     RETURNING attempts`,
  ).get(new Date(now.getTime() + attempt.retryInMs).toISOString(), at, attempt.status, attempt.error, at, name, expectedSeq) as { attempts: number } | undefined;
  return row ? row.attempts : null;
}

/**
 * Disables an endpoint after 410 Gone; the cursor stays where it is, so a replay or re-enable
 * resumes with the event that was refused.
 * @returns false when the cursor no longer holds `expectedSeq`
 */
export function disableEndpoint(db: MirrorDatabase, name: string, expectedSeq: number, status: number, reason: string, now: Date = new Date()): boolean {
  const at = now.toISOString();
  return (
    statement(
      db,
      `UPDATE webhook_endpoints
       SET disabled_at = ?, disabled_reason = ?, next_attempt_at = NULL, last_attempt_at = ?, last_status = ?, last_error = ?, last_error_at = ?,
           failed_count = failed_count + 1
       WHERE name = ? AND delivered_seq = ?`,
    ).run(at, reason, at, status, reason, at, name, expectedSeq).changes === 1
  );
}

/**
 * Moves the cursor to `seq` (back, for a replay), clears the backoff and re-enables the endpoint.
 * Callers that check the current cursor first wrap both in one transaction.
 * @returns false when the endpoint was never registered
 */
export function resetCursor(db: MirrorDatabase, name: string, seq: number): boolean {
  return (
    statement(
      db,
      `UPDATE webhook_endpoints SET delivered_seq = ?, attempts = 0, next_attempt_at = NULL, disabled_at = NULL, disabled_reason = NULL
       WHERE name = ?`,
    ).run(seq, name).changes === 1
  );
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

/** The lag of a cursor at `deliveredSeq`. */
export function endpointLag(db: MirrorDatabase, deliveredSeq: number, now: Date = new Date()): EndpointLag {
  const latestSeq = lastChangeSeq(db);
  const oldest = statement(db, 'SELECT occurred_at FROM changes WHERE seq > ? ORDER BY seq LIMIT 1').get(deliveredSeq) as { occurred_at: string } | undefined;
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
    url: row.url,
    deliveredSeq: row.delivered_seq,
    createdAt: row.created_at,
    disabledAt: row.disabled_at,
    disabledReason: row.disabled_reason,
    consecutiveFailures: row.attempts,
    nextAttemptAt: row.next_attempt_at,
    lastAttemptAt: row.last_attempt_at,
    lastStatus: row.last_status,
    lastSuccessAt: row.last_success_at,
    lastError: row.last_error,
    lastErrorAt: row.last_error_at,
    deliveredCount: row.delivered_count,
    failedCount: row.failed_count,
  };
}
