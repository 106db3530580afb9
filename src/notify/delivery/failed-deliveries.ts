/**
 * The `webhook_failed_deliveries` table (src/mirror/migrations/006_webhook_failures.ts): events an
 * endpoint gave up on after the last attempt of the retry schedule (rows are written by
 * endpoint-store.ts `giveUpEvent`). `webhooks replay --failed` reads them, re-sends each, and
 * deletes a row on its 2xx. Every function runs one statement through a `SqlExecutor`
 * (src/mirror/sql/executor.ts), whichever back end holds the mirror.
 */
import type { SqlExecutor } from '../../mirror/sql/executor.ts';

/** One event an endpoint gave up on (times ISO 8601). */
export interface FailedDelivery {
  endpoint: string;
  /** changes.seq of the event. */
  seq: number;
  /** The event's event_id, the webhook-id of every attempt and of the replay. */
  eventId: string;
  type: string;
  /** Attempts made so far (the schedule's, plus failed replays). */
  attempts: number;
  lastStatus: number | null;
  lastError: string;
  failedAt: string;
}

interface FailedDeliveryRow {
  endpoint: string;
  seq: number;
  event_id: string;
  type: string;
  attempts: number;
  last_status: number | null;
  last_error: string;
  failed_at: string;
}

/** Failed deliveries, by endpoint then seq; only `endpoint`'s when given. */
export async function listFailedDeliveries(executor: SqlExecutor, endpoint?: string): Promise<FailedDelivery[]> {
  const rows =
    endpoint === undefined
      ? await executor.all<FailedDeliveryRow>('SELECT * FROM webhook_failed_deliveries ORDER BY endpoint, seq')
      : await executor.all<FailedDeliveryRow>('SELECT * FROM webhook_failed_deliveries WHERE endpoint = ? ORDER BY seq', [endpoint]);
  return rows.map((row) => ({
    endpoint: row.endpoint,
    seq: row.seq,
    eventId: row.event_id,
    type: row.type,
    attempts: row.attempts,
    lastStatus: row.last_status,
    lastError: row.last_error,
    failedAt: row.failed_at,
  }));
}

/** How many events each endpoint gave up on (endpoints with none are absent). */
export async function countFailedDeliveries(executor: SqlExecutor): Promise<Map<string, number>> {
  const rows = await executor.all<{ endpoint: string; n: number | string }>('SELECT endpoint, COUNT(*) AS n FROM webhook_failed_deliveries GROUP BY endpoint');
  // Number(): PostgreSQL's COUNT is a bigint, which drivers may hand back as text.
  return new Map(rows.map((row) => [row.endpoint, Number(row.n)]));
}

/** Deletes the row of an event re-sent with a 2xx. @returns false when it was already gone */
export async function clearFailedDelivery(executor: SqlExecutor, endpoint: string, seq: number): Promise<boolean> {
  return (await executor.run('DELETE FROM webhook_failed_deliveries WHERE endpoint = ? AND seq = ?', [endpoint, seq])).changes === 1;
}

/** Records one more failed attempt (a replay that did not get a 2xx) on a failed delivery. */
export async function recordReplayFailure(executor: SqlExecutor, endpoint: string, seq: number, status: number | null, error: string, now: Date = new Date()): Promise<void> {
  await executor.run('UPDATE webhook_failed_deliveries SET attempts = attempts + 1, last_status = ?, last_error = ?, failed_at = ? WHERE endpoint = ? AND seq = ?', [
    status,
    error,
    now.toISOString(),
    endpoint,
    seq,
  ]);
}

/**
 * Records an event given up on after the last attempt of the retry schedule (a row already there,
 * from an earlier give-up of the same event, adds the attempts and takes the latest answer).
 */
export async function insertFailedDelivery(executor: SqlExecutor, failed: FailedDelivery): Promise<void> {
  // The table is named in `attempts + excluded.attempts`: PostgreSQL finds a bare column ambiguous there.
  await executor.run(
    `INSERT INTO webhook_failed_deliveries (endpoint, seq, event_id, type, attempts, last_status, last_error, failed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (endpoint, seq) DO UPDATE SET attempts = webhook_failed_deliveries.attempts + excluded.attempts, last_status = excluded.last_status,
       last_error = excluded.last_error, failed_at = excluded.failed_at`,
    [failed.endpoint, failed.seq, failed.eventId, failed.type, failed.attempts, failed.lastStatus, failed.lastError, failed.failedAt],
  );
}
