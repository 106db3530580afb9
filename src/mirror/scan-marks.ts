/**
 * Which records a complete scan has listed so far, read from the stream table itself: each row's
 * `last_seen_scan` is the complete scan that last listed it (src/mirror/stream-tables.ts). A scan's
 * bookkeeping asks it instead of holding every id it listed in memory (docs/sync.md "Scan memory").
 */
import { inList, listParameter } from './sql/dialect.ts';
import type { SqlExecutor } from './sql/executor.ts';
import type { StreamDefinition } from '../streams/define-stream.ts';

/**
 * The ids among `ids` whose row in `stream`'s table was listed by complete scan `scanNumber`
 * (`last_seen_scan = scanNumber`, tombstoned rows included): one SELECT on the key.
 * @param ids record keys as the list gives them (strings)
 */
export async function listedInScan(executor: SqlExecutor, stream: Pick<StreamDefinition, 'columns' | 'table'>, scanNumber: number, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const key = stream.columns.find((column) => column.primaryKey)?.column ?? 'id';
  const rows = await executor.all<{ id: string }>(`SELECT ${key} AS id FROM ${stream.table} WHERE last_seen_scan = ? AND ${inList(executor.dialect, key)}`, [
    scanNumber,
    listParameter(executor.dialect, ids),
  ]);
  return new Set(rows.map((row) => String(row.id)));
}
