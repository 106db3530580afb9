/**
 * The `stream_conditions` table (migrations 14, 16): each stream's operational condition, and each
 * partition's of a partitioned stream (keyed by (stream, partition value), '' for the stream's own),
 * read and written by src/sync/stream-conditions.ts inside the transaction that appends its event.
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

  /**
   * The stream's row (or its partition's); `ok` with no failures for one without a row.
   * @param partition a partition's value; '' (default) for the stream's own condition
   */
  async read(stream: StreamName, partition = ''): Promise<StreamConditionState> {
    const row = await this.executor.get<{ condition: string; failed_runs: number; since: string | null }>('SELECT condition, failed_runs, since FROM stream_conditions WHERE stream = ? AND partition_value = ?', [
      stream,
      partition,
    ]);
    if (!row) return { condition: 'ok', failedRuns: 0, since: null };
    return { condition: row.condition as StreamCondition, failedRuns: Number(row.failed_runs), since: row.since };
  }

  /**
   * Writes the stream's row (or its partition's), inserted or replaced.
   * @param partition a partition's value; '' (default) for the stream's own condition
   */
  async write(stream: StreamName, state: StreamConditionState, at: string, partition = ''): Promise<void> {
    await this.executor.run(
      `INSERT INTO stream_conditions (stream, partition_value, condition, failed_runs, since, updated_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (stream, partition_value) DO UPDATE SET condition = excluded.condition, failed_runs = excluded.failed_runs, since = excluded.since, updated_at = excluded.updated_at`,
      [stream, partition, state.condition, state.failedRuns, state.since, at],
    );
  }

  /** The partitions of `stream` whose condition is not `ok`, by value (none for an unpartitioned stream). */
  async listPartitions(stream: StreamName): Promise<(StreamConditionState & { partition: string })[]> {
    const rows = await this.executor.all<{ partition_value: string; condition: string; failed_runs: number; since: string | null }>(
      "SELECT partition_value, condition, failed_runs, since FROM stream_conditions WHERE stream = ? AND partition_value <> '' AND condition <> 'ok' ORDER BY partition_value",
      [stream],
    );
    return rows.map((row) => ({ partition: row.partition_value, condition: row.condition as StreamCondition, failedRuns: Number(row.failed_runs), since: row.since }));
  }
}
