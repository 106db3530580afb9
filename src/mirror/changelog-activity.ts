/**
 * What touched a stream lately, read from the changelog (docs/sync.md "Adaptive polling"): the
 * scheduler asks it on a tick that would rest a quiet stream, so that a write-through (a write's
 * response written into the stream's table, by this process or any other on the same mirror) or
 * any other change row of the stream brings the stream back to its schedule.
 *
 * One statement per question, on the changes table's primary key (`seq`): only the rows appended
 * since the last question are read.
 */
import type { SqlExecutor } from './sql/executor.ts';

/** The changelog as the scheduler reads it. */
export interface ChangelogActivity {
  /** The changelog's position now: its last `seq` (0 when empty). */
  position(): Promise<number>;
  /**
   * Whether a change row of `stream` was appended after `after` (a position from `position()` or
   * from an earlier answer), and the changelog's position now.
   */
  touchedSince(stream: string, after: number): Promise<{ touched: boolean; position: number }>;
}

/** The changelog activity of the mirror behind `executor` (SQLite or PostgreSQL). */
export function changelogActivity(executor: SqlExecutor): ChangelogActivity {
  return {
    async position() {
      const row = await executor.get<{ last: number | string | null }>('SELECT MAX(seq) AS last FROM changes');
      return Number(row?.last ?? 0);
    },
    async touchedSince(stream, after) {
      const row = await executor.get<{ last: number | string | null; touched: number | string | null }>(
        'SELECT MAX(seq) AS last, MAX(CASE WHEN stream = ? THEN 1 ELSE 0 END) AS touched FROM changes WHERE seq > ?',
        [stream, after],
      );
      return { touched: Number(row?.touched ?? 0) > 0, position: row?.last === null || row?.last === undefined ? after : Number(row.last) };
    },
  };
}
