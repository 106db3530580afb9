/**
 * The changelog's retention (docs/mirror.md "Retention"): change rows older than a cut-off are
 * deleted, oldest first, in small batches, never past what a reader still needs:
 *
 *   - each configured webhook endpoint's cursor, its events held back behind a failing one, and
 *     the events it gave up on (kept until `webhooks replay --failed` delivers them);
 *   - each named consumer's cursor;
 *   - the newest row (the changelog's end stays readable).
 *
 * The changelog is pruned as a prefix: every seq at or below `changelog_pruned.through_seq` is gone,
 * none above it, so a reader asking for a pruned seq is told so exactly (and to re-read the mirror).
 * Delivery attempts (`webhook_attempts`, `webhook_attempt_batches`) older than their own retention go with the same job.
 * Every function runs through a `SqlExecutor` (src/mirror/sql/executor.ts).
 */
import type { SqlExecutor, SqlReaderNow } from '../mirror/sql/executor.ts';
import { lastChangeSeq } from '../mirror/changelog-format.ts';
import { DEFAULT_ATTEMPT_RETAIN_DAYS, pruneAttempts } from './delivery/attempts.ts';

/** Rows deleted per transaction: small, so a sync's commit never waits long for the file's lock. */
export const PRUNE_BATCH_ROWS = 1000;

const DAY_MS = 86_400_000;

const PRUNED_THROUGH_SQL = 'SELECT through_seq FROM changelog_pruned WHERE id = 1';

/** The highest seq pruned so far (0 when nothing was). */
export async function changelogPrunedThrough(executor: SqlExecutor): Promise<number> {
  const row = await executor.get<{ through_seq: number }>(PRUNED_THROUGH_SQL);
  return Number(row?.through_seq ?? 0);
}

/** `changelogPrunedThrough` read at once (a SQLite connection's `readNow`). */
export function changelogPrunedThroughNow(reader: SqlReaderNow): number {
  return Number(reader.getNow<{ through_seq: number }>(PRUNED_THROUGH_SQL)?.through_seq ?? 0);
}

/** The highest seq the retention may prune now, and who holds it there. */
export interface RetentionFloor {
  /** Every seq at or below it may be pruned (if old enough). */
  seq: number;
  /** What stops it going further: `endpoint crm`, `consumer erp`, `the newest change`; null for an empty changelog. */
  heldBy: string | null;
}

/**
 * The floor of the retention (module comment).
 * @param endpoints the configured webhook endpoints' names (stored endpoints no longer configured hold nothing)
 */
export async function retentionFloor(executor: SqlExecutor, endpoints: readonly string[]): Promise<RetentionFloor> {
  const latest = await lastChangeSeq(executor);
  let floor: RetentionFloor = { seq: Math.max(0, latest - 1), heldBy: latest === 0 ? null : 'the newest change' };
  const lower = (seq: number, heldBy: string) => {
    if (seq < floor.seq) floor = { seq: Math.max(0, seq), heldBy };
  };
  for (const name of endpoints) {
    const row = await executor.get<{ delivered_seq: number }>('SELECT delivered_seq FROM webhook_endpoints WHERE name = ?', [name]);
    if (!row) continue; // not registered yet: it will start at the changelog's end
    lower(Number(row.delivered_seq), `webhook endpoint ${name} (its cursor)`);
    const held = await executor.get<{ seq: number | null }>('SELECT MIN(seq) AS seq FROM webhook_held_events WHERE endpoint = ?', [name]);
    if (held?.seq !== null && held?.seq !== undefined) lower(Number(held.seq) - 1, `webhook endpoint ${name} (an event held back)`);
    const failed = await executor.get<{ seq: number | null }>('SELECT MIN(seq) AS seq FROM webhook_failed_deliveries WHERE endpoint = ?', [name]);
    if (failed?.seq !== null && failed?.seq !== undefined) lower(Number(failed.seq) - 1, `webhook endpoint ${name} (an event given up on, not yet replayed)`);
  }
  for (const row of await executor.all<{ name: string; cursor: number }>('SELECT name, cursor FROM consumers')) lower(Number(row.cursor), `consumer ${row.name}`);
  return floor;
}

/** What `pruneChangelog` did. */
export interface PruneResult {
  /** Change rows deleted. */
  rows: number;
  /** Bytes of those rows' text (data, ids, type, stream, time): what the changelog shrank by. */
  bytes: number;
  /** Every seq at or below it is now pruned (0 when nothing ever was). */
  prunedThrough: number;
  /** The oldest seq kept. */
  oldestSeq: number;
  /** Why pruning stopped short of the cut-off, when it did (`consumer erp`, ...); null when it reached it. */
  heldBy: string | null;
  /** Delivery attempts deleted (older than their retention). */
  attempts: number;
}

/** What `pruneChangelog` prunes. */
export interface PruneOptions {
  /** Prune changes recorded before this time. */
  before: Date;
  /** The configured webhook endpoints' names (their cursors and held events bound the pruning). */
  endpoints: readonly string[];
  /** Prune delivery attempts made before this time. Default: 7 days before now. */
  attemptsBefore?: Date;
  /** Rows per transaction. Default 1000. */
  batchRows?: number;
  /** Ends the pruning between batches (the daemon stopping). */
  signal?: AbortSignal;
}

/**
 * Prunes the changelog's prefix recorded before `options.before`, never past the retention floor,
 * in transactions of `batchRows` rows (each re-checks the floor), then the old delivery attempts.
 */
export async function pruneChangelog(executor: SqlExecutor, options: PruneOptions): Promise<PruneResult> {
  const batchRows = options.batchRows ?? PRUNE_BATCH_ROWS;
  const before = options.before.toISOString();
  let rows = 0;
  let bytes = 0;
  let heldBy: string | null = null;
  for (;;) {
    if (options.signal?.aborted) break;
    const batch = await executor.transaction(async (tx) => {
      const floor = await retentionFloor(tx, options.endpoints);
      // The first change recorded at or after the cut-off: the prefix ends before it.
      const young = await tx.get<{ seq: number }>('SELECT seq FROM changes WHERE occurred_at >= ? ORDER BY seq LIMIT 1', [before]);
      const cut = young ? Math.min(floor.seq, Number(young.seq) - 1) : floor.seq;
      const held = young === undefined || floor.seq < Number(young.seq) - 1 ? floor.heldBy : null;
      const prunedThrough = await changelogPrunedThrough(tx);
      const last = await tx.get<{ seq: number | null; n: number; bytes: number | null }>(
        `SELECT MAX(seq) AS seq, COUNT(*) AS n,
           SUM(LENGTH(data) + LENGTH(event_id) + LENGTH(type) + LENGTH(stream) + LENGTH(record_id) + LENGTH(occurred_at)) AS bytes
         FROM (SELECT * FROM changes WHERE seq <= ? ORDER BY seq LIMIT ?) AS batch`,
        [cut, batchRows],
      );
      const count = Number(last?.n ?? 0);
      if (count === 0) {
        // Nothing left at or below the cut: the watermark still moves up to it (gaps of seqs never written).
        if (cut > prunedThrough) await recordPruned(tx, cut, 0);
        return { count: 0, bytes: 0, held };
      }
      const through = Number(last!.seq);
      await tx.run('DELETE FROM changes WHERE seq <= ?', [through]);
      await recordPruned(tx, Math.max(through, count < batchRows ? cut : through), count);
      return { count, bytes: Number(last!.bytes ?? 0), held };
    });
    rows += batch.count;
    bytes += batch.bytes;
    heldBy = batch.held;
    if (batch.count < batchRows) break;
  }
  const attemptsBefore = (options.attemptsBefore ?? new Date(Date.now() - DEFAULT_ATTEMPT_RETAIN_DAYS * DAY_MS)).toISOString();
  let attempts = 0;
  for (;;) {
    if (options.signal?.aborted) break;
    const deleted = await pruneAttempts(executor, attemptsBefore, batchRows);
    attempts += deleted.attempts;
    if (deleted.rows < batchRows) break;
  }
  const prunedThrough = await changelogPrunedThrough(executor);
  return { rows, bytes, prunedThrough, oldestSeq: prunedThrough + 1, heldBy, attempts };
}

/** Raises the pruned watermark to `through` (never lowers it) and adds `rows` to the count. */
async function recordPruned(tx: SqlExecutor, through: number, rows: number): Promise<void> {
  await tx.run(
    `INSERT INTO changelog_pruned (id, through_seq, pruned_at, rows_pruned) VALUES (1, ?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET through_seq = CASE WHEN excluded.through_seq > changelog_pruned.through_seq THEN excluded.through_seq ELSE changelog_pruned.through_seq END,
       pruned_at = excluded.pruned_at, rows_pruned = changelog_pruned.rows_pruned + excluded.rows_pruned`,
    [through, new Date().toISOString(), rows],
  );
}

/** The cut-off of `retainDays` days before `now`; undefined for 0 (keep everything). */
export function retentionCutoff(retainDays: number, now: Date = new Date()): Date | undefined {
  return retainDays > 0 ? new Date(now.getTime() - retainDays * DAY_MS) : undefined;
}
