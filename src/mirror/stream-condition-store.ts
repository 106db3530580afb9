/**
 * The `stream_conditions` table (migration 14): each stream's operational condition, read and
 * written by src/sync/stream-conditions.ts inside the transaction that appends its event.
 */
import type { SqlExecutor } from './sql/executor.ts';
import type { StreamName } from '../streams/definitions.ts';

/** A stream's operational condition (docs/operations.md "Operational events"). */
export type StreamCondition = 'ok' | 'failing' | 'stale' | 'unsupported';

/** Every condition, in the order the metrics list them. */
export const STREAM_CONDITIONS: readonly StreamCondition[] = ['ok', 'failing', 'stale', 'unsupported'];

/** One stream's row: its condition, failed runs in a row, and when the condition began (ISO 8601; null for a stream never out of `ok`). */
export interface StreamConditionState {
  condition: StreamCondition;
  failedRuns: number;
  since: string | null;
}

/** Reads and writes `stream_conditions` on `executor` (a connection, or a transaction's executor). */
export class StreamConditionStore {
  private readonly executor: SqlExecutor;

  constructor(executor: SqlExecutor) {
    this.executor = executor;
  }

  /** The stream's row; `ok` with no failures for a stream without one. */
  async read(stream: StreamName): Promise<StreamConditionState> {
    const row = await this.executor.get<{ condition: string; failed_runs: number; since: string | null }>('SELECT condition, failed_runs, since FROM stream_conditions WHERE stream = ?', [stream]);
    if (!row) return { condition: 'ok', failedRuns: 0, since: null };
    return { condition: row.condition as StreamCondition, failedRuns: Number(row.failed_runs), since: row.since };
  }

  /** Writes the stream's row (inserted or replaced). */
  async write(stream: StreamName, state: StreamConditionState, at: string): Promise<void> {
    await this.executor.run(
      `INSERT INTO stream_conditions (stream, condition, failed_runs, since, updated_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (stream) DO UPDATE SET condition = excluded.condition, failed_runs = excluded.failed_runs, since = excluded.since, updated_at = excluded.updated_at`,
      [stream, state.condition, state.failedRuns, state.since, at],
    );
  }
}
