/**
 * The `webhook_held_events` table (src/mirror/migrations/009_webhook_delivery.ts): per target (a
 * webhook endpoint or a sink), the
 * events held back behind a failing event of the same record (docs/webhooks.md "Ordering"). The
 * endpoint's cursor moves past them; each leaves the table when delivered or given up on. Every
 * function runs through a `SqlExecutor` (src/mirror/sql/executor.ts), whichever back end holds the
 * mirror; given a transaction's executor, it runs inside that transaction.
 *
 * A record is `stream` + `record_id`; its held events go out one at a time in seq order: the lowest
 * seq of a record is its head (retried at `next_attempt_at`), the others wait (`next_attempt_at`
 * null) until the head is delivered or given up on.
 */
import type { SqlExecutor, SqlValue } from '../../mirror/sql/executor.ts';

/** One held event (times ISO 8601). */
export interface HeldEvent {
  endpoint: string;
  seq: number;
  eventId: string;
  type: string;
  stream: string;
  recordId: string;
  /** Failed attempts of this event so far (0 for one waiting behind its record's head). */
  attempts: number;
  /** When to retry it; null: as soon as the earlier held events of its record are done. */
  nextAttemptAt: string | null;
  heldAt: string;
  lastStatus: number | null;
  lastError: string | null;
}

interface HeldRow {
  endpoint: string;
  seq: number;
  event_id: string;
  type: string;
  stream: string;
  record_id: string;
  attempts: number;
  next_attempt_at: string | null;
  held_at: string;
  last_status: number | null;
  last_error: string | null;
}

/** The key of a record's lane of events: its stream and id. */
export function recordLane(stream: string, recordId: string): string {
  return `${stream}\u0000${recordId}`;
}

/** Every held event of `endpoint`, in seq order. */
export async function loadHeldEvents(executor: SqlExecutor, endpoint: string): Promise<HeldEvent[]> {
  const rows = await executor.all<HeldRow>('SELECT * FROM webhook_held_events WHERE endpoint = ? ORDER BY seq', [endpoint]);
  return rows.map(toHeld);
}

/** How many events each endpoint holds back (endpoints with none are absent). */
export async function countHeldEvents(executor: SqlExecutor): Promise<Map<string, number>> {
  const rows = await executor.all<{ endpoint: string; n: number | string }>('SELECT endpoint, COUNT(*) AS n FROM webhook_held_events GROUP BY endpoint');
  return new Map(rows.map((row) => [row.endpoint, Number(row.n)]));
}

/** The smallest seq any endpoint holds back, or null when none: retention keeps the changelog from there. */
export async function oldestHeldSeq(executor: SqlExecutor): Promise<number | null> {
  const row = await executor.get<{ seq: number | string | null }>('SELECT MIN(seq) AS seq FROM webhook_held_events');
  return row?.seq === null || row?.seq === undefined ? null : Number(row.seq);
}

/** Most held rows in one multi-row INSERT (11 parameters each). */
const ROWS_PER_INSERT = 500;

/** Holds events back (a failing head with its retry time and count, or events waiting behind one). Existing rows are left as they are. */
export async function insertHeldEvents(executor: SqlExecutor, events: readonly HeldEvent[]): Promise<void> {
  for (let start = 0; start < events.length; start += ROWS_PER_INSERT) {
    const chunk = events.slice(start, start + ROWS_PER_INSERT);
    const parameters: SqlValue[] = [];
    for (const event of chunk) {
      parameters.push(event.endpoint, event.seq, event.eventId, event.type, event.stream, event.recordId, event.attempts, event.nextAttemptAt, event.heldAt, event.lastStatus, event.lastError);
    }
    await executor.run(
      `INSERT INTO webhook_held_events (endpoint, seq, event_id, type, stream, record_id, attempts, next_attempt_at, held_at, last_status, last_error)
       VALUES ${chunk.map(() => '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')} ON CONFLICT (endpoint, seq) DO NOTHING`,
      parameters,
    );
  }
}

/** Records another failed attempt of a held event and when to retry it. */
export async function recordHeldFailure(executor: SqlExecutor, endpoint: string, seq: number, attempt: { attempts: number; nextAttemptAt: string; status: number | null; error: string }): Promise<void> {
  await executor.run('UPDATE webhook_held_events SET attempts = ?, next_attempt_at = ?, last_status = ?, last_error = ? WHERE endpoint = ? AND seq = ?', [
    attempt.attempts,
    attempt.nextAttemptAt,
    attempt.status,
    attempt.error,
    endpoint,
    seq,
  ]);
}

/** Writes the retry time each of `events` holds now (null: due at once), keeping its attempts. */
export async function setHeldRetryTimes(executor: SqlExecutor, endpoint: string, events: readonly { seq: number; nextAttemptAt: string | null }[]): Promise<void> {
  for (const event of events) await executor.run('UPDATE webhook_held_events SET next_attempt_at = ? WHERE endpoint = ? AND seq = ?', [event.nextAttemptAt, endpoint, event.seq]);
}

/** Makes every held event of `endpoint` whose retry waits due at once, its attempts kept (`webhooks retry`, `sinks retry`). @returns how many */
export async function retryHeldEventsNowKeepingAttempts(executor: SqlExecutor, endpoint: string): Promise<number> {
  return (await executor.run('UPDATE webhook_held_events SET next_attempt_at = NULL WHERE endpoint = ? AND next_attempt_at IS NOT NULL', [endpoint])).changes;
}

/** Releases held events (delivered or given up on). */
export async function deleteHeldEvents(executor: SqlExecutor, endpoint: string, seqs: readonly number[]): Promise<void> {
  for (let start = 0; start < seqs.length; start += ROWS_PER_INSERT) {
    const chunk = seqs.slice(start, start + ROWS_PER_INSERT);
    await executor.run(`DELETE FROM webhook_held_events WHERE endpoint = ? AND seq IN (${chunk.map(() => '?').join(', ')})`, [endpoint, ...chunk]);
  }
}

/** Drops an endpoint's held events after `seq` (a replay from `seq` sends them again in order). */
export async function dropHeldEventsAfter(executor: SqlExecutor, endpoint: string, seq: number): Promise<number> {
  return (await executor.run('DELETE FROM webhook_held_events WHERE endpoint = ? AND seq > ?', [endpoint, seq])).changes;
}

/** Makes every held event of `endpoint` due at once, its attempt count cleared (`webhooks enable`). */
export async function retryHeldEventsNow(executor: SqlExecutor, endpoint: string): Promise<void> {
  await executor.run('UPDATE webhook_held_events SET attempts = 0, next_attempt_at = NULL WHERE endpoint = ?', [endpoint]);
}

function toHeld(row: HeldRow): HeldEvent {
  return {
    endpoint: row.endpoint,
    seq: Number(row.seq),
    eventId: row.event_id,
    type: row.type,
    stream: row.stream,
    recordId: row.record_id,
    attempts: Number(row.attempts),
    nextAttemptAt: row.next_attempt_at,
    heldAt: row.held_at,
    lastStatus: row.last_status === null ? null : Number(row.last_status),
    lastError: row.last_error,
  };
}
