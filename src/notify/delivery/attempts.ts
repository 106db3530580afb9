/**
 * The `webhook_attempts` table (src/mirror/migrations/009_webhook_delivery.ts): every delivery
 * attempt, kept for `DEFAULT_ATTEMPT_RETAIN_DAYS` (pruned by age with the changelog's retention,
 * src/notify/retention.ts): when it left, the answer's status, the latency and the first 1 KiB of
 * the answer's body. `bizops-sync webhooks attempts EVENT_ID` and `webhooks list` read it. Every
 * function runs through a `SqlExecutor` (src/mirror/sql/executor.ts).
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
 * The SQLite INSERT of `rows` attempts that share their endpoint, attempt number, time, outcome,
 * status and error: those 6 bound once, then 5 parameters a row (seq, event id, type, latency,
 * response). The rows get their ids in the order of the VALUES list (the CROSS JOIN keeps it the
 * outer loop). Binding is most of what a row costs: 5 a row instead of 11 takes about a third off
 * each row's insert.
 */
function sharedInsertSql(rows: number): string {
  return `INSERT INTO webhook_attempts (endpoint, seq, event_id, type, attempt, attempted_at, outcome, status, latency_ms, error, response)
       SELECT s.endpoint, v.column1, v.column2, v.column3, s.attempt, s.attempted_at, s.outcome, s.status, v.column4, s.error, v.column5
       FROM (VALUES ${Array.from({ length: rows }, () => '(?, ?, ?, ?, ?)').join(', ')}) AS v
       CROSS JOIN (SELECT ? AS endpoint, ? AS attempt, ? AS attempted_at, ? AS outcome, ? AS status, ? AS error) AS s`;
}

const SHARED_INSERT_SQL = new Map<number, string>(ROWS_PER_INSERT.map((rows) => [rows, sharedInsertSql(rows)]));

/**
 * Shortest run of consecutive attempts sharing endpoint, attempt number, time, outcome, status and
 * error that is written with `sharedInsertSql` (a batch a sink sent at once, acknowledged: one run
 * of up to `maxInFlight`); shorter runs go in the 11-parameter rows.
 */
const MIN_SHARED_RUN = 10;

function sameShared(a: WebhookAttempt, b: WebhookAttempt): boolean {
  return a.endpoint === b.endpoint && a.attempt === b.attempt && a.attemptedAt === b.attemptedAt && a.outcome === b.outcome && a.status === b.status && a.error === b.error;
}

/**
 * Stores attempts, in the order given (ids ascending in that order), in statements of
 * `ROWS_PER_INSERT` rows. On SQLite a run of at least `MIN_SHARED_RUN` attempts that share endpoint,
 * attempt number, time, outcome, status and error (a sink's batch, acknowledged) binds those once
 * per statement (`sharedInsertSql`); PostgreSQL gets every row's 11 parameters.
 */
export async function insertAttempts(executor: SqlExecutor, attempts: readonly WebhookAttempt[]): Promise<void> {
  if (executor.dialect !== 'sqlite') {
    await insertRows(executor, attempts, 0, attempts.length);
    return;
  }
  let written = 0;
  let start = 0;
  while (start < attempts.length) {
    const first = attempts[start]!;
    let end = start + 1;
    while (end < attempts.length && sameShared(first, attempts[end]!)) end += 1;
    if (end - start >= MIN_SHARED_RUN) {
      await insertRows(executor, attempts, written, start);
      await insertSharedRun(executor, attempts, start, end);
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

/** `attempts[from..to)`, which share what `sameShared` compares (SQLite, `sharedInsertSql`). */
async function insertSharedRun(executor: SqlExecutor, attempts: readonly WebhookAttempt[], from: number, to: number): Promise<void> {
  const shared = attempts[from]!;
  let start = from;
  for (const rows of ROWS_PER_INSERT) {
    const sql = SHARED_INSERT_SQL.get(rows)!;
    for (; start + rows <= to; start += rows) {
      const parameters: SqlValue[] = [];
      for (let index = start; index < start + rows; index += 1) {
        const attempt = attempts[index]!;
        parameters.push(attempt.seq, attempt.eventId, attempt.type, attempt.latencyMs, attempt.response);
      }
      parameters.push(shared.endpoint, shared.attempt, shared.attemptedAt, shared.outcome, shared.status, shared.error);
      await executor.run(sql, parameters);
    }
  }
}

/** Every kept attempt of one event (its `event_id`), by endpoint then time. */
export async function listAttemptsOfEvent(executor: SqlExecutor, eventId: string): Promise<WebhookAttempt[]> {
  const rows = await executor.all<AttemptRow>('SELECT * FROM webhook_attempts WHERE event_id = ? ORDER BY endpoint, id', [eventId]);
  return rows.map(toAttempt);
}

/** The latest `limit` attempts of one endpoint, newest first. */
export async function latestAttempts(executor: SqlExecutor, endpoint: string, limit: number): Promise<WebhookAttempt[]> {
  const rows = await executor.all<AttemptRow>('SELECT * FROM webhook_attempts WHERE endpoint = ? ORDER BY id DESC LIMIT ?', [endpoint, limit]);
  return rows.map(toAttempt);
}

/**
 * Deletes attempts made before `before` (ISO 8601), at most `limit` rows (small batches keep the
 * writer's lock short).
 * @returns how many were deleted
 */
export async function pruneAttempts(executor: SqlExecutor, before: string, limit: number): Promise<number> {
  return (await executor.run('DELETE FROM webhook_attempts WHERE id IN (SELECT id FROM webhook_attempts WHERE attempted_at < ? ORDER BY id LIMIT ?)', [before, limit])).changes;
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
