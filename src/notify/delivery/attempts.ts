/**
 * Delivery attempts: every attempt, kept for `DEFAULT_ATTEMPT_RETAIN_DAYS` (pruned by age with the
 * changelog's retention, src/notify/retention.ts): when it left, the answer's status, the latency
 * and the first 1 KiB of the answer's body. `bizops-sync webhooks attempts EVENT_ID`, `webhooks
 * list` and `sinks list --attempts N` read it. Two tables hold them: `webhook_attempts` (migration
 * 9), a row per attempt, and `webhook_attempt_batches` (migration 20), a row per batch a sink sent
 * at once and the broker answered alike; the functions here read both as one list of attempts.
 * Every function runs through a `SqlExecutor` (src/mirror/sql/executor.ts).
 */
import type { SqlExecutor, SqlValue } from '../../mirror/sql/executor.ts';

/** How long attempts are kept, days: longer than the retry schedule (about 27.5 h), with a week to look into a failure. */
export const DEFAULT_ATTEMPT_RETAIN_DAYS = 7;

/** What became of one attempt: a 2xx, another answer or none (retried), or a 410 (the endpoint disabled). */
export type AttemptOutcome = 'delivered' | 'failed' | 'gone';

/** One delivery attempt (times ISO 8601). */
export interface WebhookAttempt {
  endpoint: string;
  /** changes.seq; null for a `webhook.test`. */
  seq: number | null;
  /** The webhook-id sent (the event's `event_id`). */
  eventId: string;
  type: string;
  /** 1 for the first attempt of this event at this endpoint. */
  attempt: number;
  /** When the request left. */
  attemptedAt: string;
  outcome: AttemptOutcome;
  /** HTTP status; null without an answer (refused, reset, timeout). */
  status: number | null;
  latencyMs: number;
  /** One line for a failure; null on a 2xx. */
  error: string | null;
  /** The first 1 KiB of the answer's body; null without an answer. */
  response: string | null;
}

interface AttemptRow {
  endpoint: string;
  seq: number | null;
  event_id: string;
  type: string;
  attempt: number;
  attempted_at: string;
  outcome: string;
  status: number | null;
  latency_ms: number;
  error: string | null;
  response: string | null;
}

/**
 * Rows per multi-row INSERT, largest first: a write of any length runs as statements of these fixed
 * sizes (each compiled once per connection and reused), never as one statement of its own length
 * (compiled afresh for each length, and each kept in the connection's statement cache).
 */
const ROWS_PER_INSERT = [100, 10, 1] as const;

/** The INSERT of `rows` attempts (11 parameters each). */
function insertSql(rows: number): string {
  return `INSERT INTO webhook_attempts (endpoint, seq, event_id, type, attempt, attempted_at, outcome, status, latency_ms, error, response)
       VALUES ${Array.from({ length: rows }, () => '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`;
}

const INSERT_SQL = new Map<number, string>(ROWS_PER_INSERT.map((rows) => [rows, insertSql(rows)]));

/**
 * Shortest run of consecutive attempts sharing endpoint, attempt number, time, outcome, status and
 * error (a batch a sink sent at once and the broker answered alike: one run of up to
 * `maxInFlight`) that is kept as one row of `webhook_attempt_batches` (migration 20); shorter runs,
 * and attempts without a seq (`webhook.test`), are rows of `webhook_attempts`.
 */
const MIN_BATCH_RUN = 10;

function sameShared(a: WebhookAttempt, b: WebhookAttempt): boolean {
  return a.endpoint === b.endpoint && a.attempt === b.attempt && a.attemptedAt === b.attemptedAt && a.outcome === b.outcome && a.status === b.status && a.error === b.error && b.seq !== null;
}

/** What a batch row's `events` holds per attempt: `[seq, event_id, type, latency_ms, response]`. */
type BatchEntry = [seq: number, eventId: string, type: string, latencyMs: number, response: string | null];

const INSERT_BATCH_SQL = `INSERT INTO webhook_attempt_batches (endpoint, attempt, attempted_at, outcome, status, error, min_seq, max_seq, attempts, events)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

/**
 * Stores attempts. A run of at least `MIN_BATCH_RUN` consecutive attempts sharing endpoint,
 * attempt number, time, outcome, status and error (a sink's batch) is one row of
 * `webhook_attempt_batches`: one INSERT and one JSON text instead of a row and two index entries
 * per attempt, most of what keeping every attempt cost a sink. The others are rows of
 * `webhook_attempts`, in statements of `ROWS_PER_INSERT` rows. The readers below return both alike.
 * @throws the driver's error (the caller's transaction rolls back)
 */
export async function insertAttempts(executor: SqlExecutor, attempts: readonly WebhookAttempt[]): Promise<void> {
  let written = 0;
  let start = 0;
  while (start < attempts.length) {
    const first = attempts[start]!;
    let end = start + 1;
    if (first.seq !== null) while (end < attempts.length && sameShared(first, attempts[end]!)) end += 1;
    if (end - start >= MIN_BATCH_RUN) {
      await insertRows(executor, attempts, written, start);
      await insertBatch(executor, attempts, start, end);
      written = end;
    }
    start = end;
  }
  await insertRows(executor, attempts, written, attempts.length);
}

/** `attempts[from..to)`, 11 parameters a row. */
async function insertRows(executor: SqlExecutor, attempts: readonly WebhookAttempt[], from: number, to: number): Promise<void> {
  let start = from;
  for (const rows of ROWS_PER_INSERT) {
    const sql = INSERT_SQL.get(rows)!;
    for (; start + rows <= to; start += rows) {
      const parameters: SqlValue[] = [];
      for (let index = start; index < start + rows; index += 1) {
        const attempt = attempts[index]!;
        parameters.push(
          attempt.endpoint,
          attempt.seq,
          attempt.eventId,
          attempt.type,
          attempt.attempt,
          attempt.attemptedAt,
          attempt.outcome,
          attempt.status,
          attempt.latencyMs,
          attempt.error,
          attempt.response,
        );
      }
      await executor.run(sql, parameters);
    }
  }
}

/** `attempts[from..to)`, which share what `sameShared` compares and all have a seq: one batch row. */
async function insertBatch(executor: SqlExecutor, attempts: readonly WebhookAttempt[], from: number, to: number): Promise<void> {
  const shared = attempts[from]!;
  const entries: BatchEntry[] = [];
  let minSeq = Number.POSITIVE_INFINITY;
  let maxSeq = Number.NEGATIVE_INFINITY;
  for (let index = from; index < to; index += 1) {
    const attempt = attempts[index]!;
    const seq = attempt.seq!;
    if (seq < minSeq) minSeq = seq;
    if (seq > maxSeq) maxSeq = seq;
    entries.push([seq, attempt.eventId, attempt.type, attempt.latencyMs, attempt.response]);
  }
  await executor.run(INSERT_BATCH_SQL, [shared.endpoint, shared.attempt, shared.attemptedAt, shared.outcome, shared.status, shared.error, minSeq, maxSeq, to - from, JSON.stringify(entries)]);
}

interface BatchRow {
  id: number;
  endpoint: string;
  attempt: number;
  attempted_at: string;
  outcome: string;
  status: number | null;
  error: string | null;
  events: string;
}

const BATCH_COLUMNS = 'id, endpoint, attempt, attempted_at, outcome, status, error, events';

/** A batch row's attempts, in the order they were settled. */
function batchAttempts(row: BatchRow): WebhookAttempt[] {
  const entries = JSON.parse(row.events) as BatchEntry[];
  return entries.map(([seq, eventId, type, latencyMs, response]) => ({
    endpoint: row.endpoint,
    seq,
    eventId,
    type,
    attempt: Number(row.attempt),
    attemptedAt: row.attempted_at,
    outcome: row.outcome as AttemptOutcome,
    status: row.status === null ? null : Number(row.status),
    latencyMs,
    error: row.error,
    response,
  }));
}

/**
 * Every kept attempt of one event (its `event_id`), by endpoint then time (then attempt number).
 * Its batched attempts are found from its seq (`changes.event_id`, then the batches whose seq range
 * holds it); an event no longer in the changelog (pruned) by the batches whose `events` text holds
 * its id (a scan of the batch table: an operator's lookup, not a hot path). A snapshot's attempts
 * carry no seq and are never batched: rows, found by the event id's index.
 */
export async function listAttemptsOfEvent(executor: SqlExecutor, eventId: string): Promise<WebhookAttempt[]> {
  const rows = (await executor.all<AttemptRow>('SELECT * FROM webhook_attempts WHERE event_id = ? ORDER BY endpoint, id', [eventId])).map(toAttempt);
  const change = await executor.get<{ seq: number }>('SELECT seq FROM changes WHERE event_id = ?', [eventId]);
  const batches = change
    ? await executor.all<BatchRow>(`SELECT ${BATCH_COLUMNS} FROM webhook_attempt_batches WHERE min_seq <= ? AND max_seq >= ? ORDER BY id`, [Number(change.seq), Number(change.seq)])
    : await executor.all<BatchRow>(`SELECT ${BATCH_COLUMNS} FROM webhook_attempt_batches WHERE events LIKE ? ESCAPE '!' ORDER BY id`, [`%${JSON.stringify(eventId).replace(/[!%_]/g, '!$&')}%`]);
  const batched = batches.flatMap((batch) => batchAttempts(batch).filter((attempt) => attempt.eventId === eventId));
  if (batched.length === 0) return rows;
  return [...rows, ...batched].sort((a, b) => (a.endpoint < b.endpoint ? -1 : a.endpoint > b.endpoint ? 1 : a.attemptedAt < b.attemptedAt ? -1 : a.attemptedAt > b.attemptedAt ? 1 : a.attempt - b.attempt));
}

/**
 * The latest `limit` attempts of one endpoint, newest first: the later of its rows and of its
 * batches' attempts by time (the same time: the higher seq first), each side newest first as stored.
 */
export async function latestAttempts(executor: SqlExecutor, endpoint: string, limit: number): Promise<WebhookAttempt[]> {
  const rows = (await executor.all<AttemptRow>('SELECT * FROM webhook_attempts WHERE endpoint = ? ORDER BY id DESC LIMIT ?', [endpoint, limit])).map(toAttempt);
  const batched: WebhookAttempt[] = [];
  // Newest batches first until `limit` attempts are in hand (each batch holds at least MIN_BATCH_RUN).
  let before = Number.MAX_SAFE_INTEGER;
  while (batched.length < limit) {
    const page = await executor.all<BatchRow>(`SELECT ${BATCH_COLUMNS} FROM webhook_attempt_batches WHERE endpoint = ? AND id < ? ORDER BY id DESC LIMIT ?`, [endpoint, before, BATCHES_PER_READ]);
    for (const batch of page) batched.push(...batchAttempts(batch).reverse());
    if (page.length < BATCHES_PER_READ) break;
    before = Number(page.at(-1)!.id);
  }
  if (batched.length === 0) return rows;
  const merged: WebhookAttempt[] = [];
  let r = 0;
  let b = 0;
  while (merged.length < limit && (r < rows.length || b < batched.length)) {
    const row = rows[r];
    const fromBatch = batched[b];
    const takeRow = fromBatch === undefined || (row !== undefined && (row.attemptedAt > fromBatch.attemptedAt || (row.attemptedAt === fromBatch.attemptedAt && (row.seq ?? 0) > (fromBatch.seq ?? 0))));
    if (takeRow) {
      merged.push(row!);
      r += 1;
    } else {
      merged.push(fromBatch);
      b += 1;
    }
  }
  return merged;
}

/** Batch rows read at a time by `latestAttempts`. */
const BATCHES_PER_READ = 20;

/** What `pruneAttempts` deleted. */
export interface PrunedAttempts {
  /** Rows deleted (`webhook_attempts` and `webhook_attempt_batches`): fewer than the limit when nothing older is left. */
  rows: number;
  /** Attempts they held (a batch row holds many). */
  attempts: number;
}

/**
 * Deletes attempts made before `before` (ISO 8601), at most `limit` rows of the two tables (small
 * batches keep the writer's lock short): the single rows first, then the batches.
 */
export async function pruneAttempts(executor: SqlExecutor, before: string, limit: number): Promise<PrunedAttempts> {
  const single = (await executor.run('DELETE FROM webhook_attempts WHERE id IN (SELECT id FROM webhook_attempts WHERE attempted_at < ? ORDER BY id LIMIT ?)', [before, limit])).changes;
  if (single >= limit) return { rows: single, attempts: single };
  const batches = await executor.all<{ id: number; attempts: number }>('SELECT id, attempts FROM webhook_attempt_batches WHERE attempted_at < ? ORDER BY id LIMIT ?', [before, limit - single]);
  if (batches.length === 0) return { rows: single, attempts: single };
  const ids = batches.map((batch) => Number(batch.id));
  await executor.run(`DELETE FROM webhook_attempt_batches WHERE id IN (${ids.map(() => '?').join(', ')})`, ids);
  return { rows: single + batches.length, attempts: single + batches.reduce((sum, batch) => sum + Number(batch.attempts), 0) };
}

function toAttempt(row: AttemptRow): WebhookAttempt {
  return {
    endpoint: row.endpoint,
    seq: row.seq === null ? null : Number(row.seq),
    eventId: row.event_id,
    type: row.type,
    attempt: Number(row.attempt),
    attemptedAt: row.attempted_at,
    outcome: row.outcome as AttemptOutcome,
    status: row.status === null ? null : Number(row.status),
    latencyMs: Number(row.latency_ms),
    error: row.error,
    response: row.response,
  };
}
