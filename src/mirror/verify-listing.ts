/**
 * What `bizops-sync verify` keeps in the mirror's database while it scans one stream
 * (docs/sync.md "Verify"): the ids its scan listed (`verify_listed`, migration 13), so that its
 * memory stays bounded by a page; and the reads that compare the mirror with the API: the stored
 * rows of a page's ids, and the live rows the scan never listed (the extras). With `--repair`, the
 * extras are tombstoned here with the stream's gone event, as the two-scan rule tombstones
 * (src/mirror/mirror-store.ts `recordMisses`).
 *
 * Every method runs through a `SqlExecutor` (src/mirror/sql/executor.ts): SQLite or PostgreSQL.
 */
import { randomUUID } from 'node:crypto';
import { jsonArrayValues } from './sql/dialect.ts';
import type { SqlExecutor, SqlValue } from './sql/executor.ts';
import type { AppendedChange, MirrorStore } from './mirror-store.ts';
import type { StreamDefinition } from '../streams/define-stream.ts';

/** Where an id was first listed: its position, and how many records had left and entered the list by then. */
export interface FirstListing {
  position: number;
  removed: number;
  added: number;
}

/**
 * A stored row as verify compares it: its record as last stored (`raw`), its typed columns as
 * stored (column name to value), its content hash, and whether it is tombstoned.
 */
export interface StoredRow {
  raw: string;
  columns: Record<string, unknown>;
  contentHash: string;
  deleted: boolean;
}

/** A part of a stream's table: the rows whose `column` holds `value` (a partitioned stream's partition). */
export interface UnlistedScope {
  column: string;
  value: string;
}

/** Scratch rows of a verification that died are deleted by the next one after this long, ms. */
const ABANDONED_AFTER_MS = 24 * 60 * 60 * 1000;

/** Most rows per INSERT into `verify_listed` (6 parameters each). */
const ROWS_PER_INSERT = 500;

/** The column holding a stream's record key. */
function keyColumn(stream: Pick<StreamDefinition, 'columns'>): string {
  return stream.columns.find((column) => column.primaryKey)?.column ?? 'id';
}

/**
 * The ids one verification of one stream listed, in `verify_listed` under a fresh random id. Call
 * `clear()` when the verification ends (also when it fails).
 */
export class VerifyListing {
  readonly executor: SqlExecutor;
  /** This verification's key in `verify_listed`. */
  readonly verification = `ver_${randomUUID()}`;

  constructor(executor: SqlExecutor) {
    this.executor = executor;
  }

  /** Deletes the scratch rows of verifications that died more than a day ago (none of a running one). */
  async dropAbandoned(now = Date.now()): Promise<void> {
    await this.executor.run('DELETE FROM verify_listed WHERE listed_at < ?', [new Date(now - ABANDONED_AFTER_MS).toISOString()]);
  }

  /** Where each of `ids` this verification listed before was first listed (one SELECT); ids not listed yet are absent. */
  async firstListings(ids: readonly string[]): Promise<Map<string, FirstListing>> {
    const found = new Map<string, FirstListing>();
    if (ids.length === 0) return found;
    const rows = await this.executor.all<{ record_id: string; position: number; removed: number; added: number }>(
      `SELECT record_id, position, removed, added FROM verify_listed WHERE verification = ? AND record_id IN ${jsonArrayValues(this.executor.dialect)}`,
      [this.verification, JSON.stringify(ids)],
    );
    for (const row of rows) found.set(row.record_id, { position: Number(row.position), removed: Number(row.removed), added: Number(row.added) });
    return found;
  }

  /** Records ids as listed (ids listed before are left as they were). */
  async note(listings: ReadonlyMap<string, FirstListing>, now = new Date().toISOString()): Promise<void> {
    const entries = [...listings];
    for (let start = 0; start < entries.length; start += ROWS_PER_INSERT) {
      const chunk = entries.slice(start, start + ROWS_PER_INSERT);
      const parameters: SqlValue[] = chunk.flatMap(([id, first]) => [this.verification, id, first.position, first.removed, first.added, now]);
      await this.executor.run(
        `INSERT INTO verify_listed (verification, record_id, position, removed, added, listed_at) VALUES ${chunk.map(() => '(?, ?, ?, ?, ?, ?)').join(', ')}
         ON CONFLICT (verification, record_id) DO NOTHING`,
        parameters,
      );
    }
  }

  /** Distinct ids this verification listed. */
  async count(): Promise<number> {
    const row = await this.executor.get<{ n: number }>('SELECT COUNT(*) AS n FROM verify_listed WHERE verification = ?', [this.verification]);
    return Number(row!.n);
  }

  /** Deletes this verification's rows. */
  async clear(): Promise<void> {
    await this.executor.run('DELETE FROM verify_listed WHERE verification = ?', [this.verification]);
  }

  /** The stored rows of `ids` in the stream's table (one SELECT); ids the table lacks are absent. */
  async storedRows(stream: StreamDefinition, ids: readonly string[]): Promise<Map<string, StoredRow>> {
    const rows = new Map<string, StoredRow>();
    if (ids.length === 0) return rows;
    const key = keyColumn(stream);
    const found = await this.executor.all<Record<string, unknown> & { raw: string; content_hash: string; deleted_at: string | null }>(
      `SELECT * FROM ${stream.table} WHERE ${key} IN ${jsonArrayValues(this.executor.dialect)}`,
      [JSON.stringify(ids)],
    );
    for (const row of found) rows.set(String(row[key]), { raw: row.raw, columns: row, contentHash: row.content_hash, deleted: row.deleted_at !== null });
    return rows;
  }

  /**
   * The condition of a live row of the stream the scan never listed, first seen at or before the
   * scan began, inside `scope` when given (a partition: its column holds the value), and its
   * parameters after the statement's own.
   */
  private unlistedWhere(stream: StreamDefinition, since: string, scope: UnlistedScope | undefined): { sql: string; parameters: SqlValue[] } {
    const key = keyColumn(stream);
    const inScope = scope ? ` AND t.${scope.column} = ?` : '';
    return {
      sql: `t.deleted_at IS NULL AND t.first_seen_at <= ?${inScope} AND NOT EXISTS (SELECT 1 FROM verify_listed v WHERE v.verification = ? AND v.record_id = t.${key})`,
      parameters: [since, ...(scope ? [scope.value] : []), this.verification],
    };
  }

  /**
   * Live records of the stream the scan never listed (the extras), counting only those the mirror
   * held when the scan began (`since`, ISO: a record written through meanwhile could not be listed),
   * and only inside `scope` when given (the partition the scan read).
   * @returns how many, and the first `sample` of their ids in key order
   */
  async unlisted(stream: StreamDefinition, since: string, sample: number, scope?: UnlistedScope): Promise<{ count: number; ids: string[] }> {
    const key = keyColumn(stream);
    const where = this.unlistedWhere(stream, since, scope);
    const counted = await this.executor.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${stream.table} t WHERE ${where.sql}`, where.parameters);
    const ids = await this.executor.all<{ id: string }>(`SELECT t.${key} AS id FROM ${stream.table} t WHERE ${where.sql} ORDER BY t.${key} LIMIT ?`, [...where.parameters, sample]);
    return { count: Number(counted!.n), ids: ids.map((row) => String(row.id)) };
  }

  /**
   * Makes the stored rows of `ids` look changed to change detection (their content hash cleared), on
   * `store` (the caller's transaction): the records applied next are then diffed and rewritten even
   * when the row's hash still matches the API's item (a row edited in place: its `raw` or a typed
   * column). Call right before `MirrorStore.applyRecords` of those records, in the same transaction.
   */
  async forgetHashes(store: MirrorStore, stream: StreamDefinition, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    const key = keyColumn(stream);
    await store.executor.run(`UPDATE ${stream.table} SET content_hash = '' WHERE ${key} IN ${jsonArrayValues(store.executor.dialect)}`, [JSON.stringify(ids)]);
  }

  /**
   * Tombstones up to `limit` of the extras (`unlisted`, inside `scope` when given) on `store` (bound
   * to the caller's transaction): sets `deleted_at` and appends the stream's gone change for each,
   * in key order, as the two-scan rule does.
   * @returns the changes appended (none when no extra is left)
   */
  async tombstoneUnlisted(store: MirrorStore, stream: StreamDefinition, since: string, limit: number, scope?: UnlistedScope, now = new Date().toISOString()): Promise<AppendedChange[]> {
    const key = keyColumn(stream);
    const where = this.unlistedWhere(stream, since, scope);
    const rows = await store.executor.all<{ id: string; raw: string }>(`SELECT t.${key} AS id, t.raw FROM ${stream.table} t WHERE ${where.sql} ORDER BY t.${key} LIMIT ?`, [...where.parameters, limit]);
    if (rows.length === 0) return [];
    await store.executor.run(`UPDATE ${stream.table} SET deleted_at = ? WHERE ${key} IN ${jsonArrayValues(store.executor.dialect)}`, [now, JSON.stringify(rows.map((row) => String(row.id)))]);
    return store.appendChanges(
      rows.map((row) => ({
        type: stream.changes.gone,
        stream: stream.name,
        recordId: String(row.id),
        occurredAt: now,
        data: { record: JSON.parse(row.raw) as unknown, changes: { deletedAt: { old: null, new: now } } },
      })),
    );
  }
}
