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
import { writtenNotAfter, type AppendedChange, type MirrorStore } from './mirror-store.ts';
import type { StreamDefinition } from '../streams/define-stream.ts';

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

/**
 * The rows of a stream's table a verification scanned: those whose `column` holds one of `values`
 * (the partitions of a partitioned stream it read); absent: the whole table.
 */
export interface UnlistedScope {
  column: string;
  values: readonly string[];
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
 * The ids one verification of one stream listed, in `verify_listed` under a fresh random id: one
 * listing per scan (a partitioned stream: one per partition, `part()`), so that each scan counts its
 * own distinct ids, while the extras are the rows no scan of the verification listed. Call `clear()`
 * when the verification ends (also when it fails): it deletes the rows of its parts too.
 */
export class VerifyListing {
  readonly executor: SqlExecutor;
  /** This listing's key in `verify_listed`. */
  readonly verification: string;
  /** The listings of the same verification made by `part()`. */
  private readonly parts: VerifyListing[] = [];
  /**
   * The changelog's last `seq` when the verification began, once set: a row a write-through wrote
   * after it is never unlisted (not an extra, no miss, no tombstone; docs/sync.md "Write-throughs
   * during a run"). Undefined: no such condition.
   */
  writtenAfter: number | undefined;

  constructor(executor: SqlExecutor, verification = `ver_${randomUUID()}`) {
    this.executor = executor;
    this.verification = verification;
  }

  /** A listing of its own for one more scan of the same verification (a partition), counted with this one by the extras' queries. */
  part(): VerifyListing {
    const part = new VerifyListing(this.executor, `${this.verification}/${this.parts.length + 1}`);
    this.parts.push(part);
    return part;
  }

  /** Every key of the verification: this listing's and its parts'. */
  private keys(): string[] {
    return [this.verification, ...this.parts.map((part) => part.verification)];
  }

  /** Deletes the scratch rows of verifications that died more than a day ago (none of a running one). */
  async dropAbandoned(now = Date.now()): Promise<void> {
    await this.executor.run('DELETE FROM verify_listed WHERE listed_at < ?', [new Date(now - ABANDONED_AFTER_MS).toISOString()]);
  }

  /** Of `ids`, those this listing holds already (one SELECT). */
  async listed(ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.executor.all<{ record_id: string }>(
      `SELECT record_id FROM verify_listed WHERE verification = ? AND record_id IN ${jsonArrayValues(this.executor.dialect)}`,
      [this.verification, JSON.stringify(ids)],
    );
    return new Set(rows.map((row) => String(row.record_id)));
  }

  /** Records ids as listed, each with the position it was first listed at (ids listed before are left as they were). */
  async note(listings: ReadonlyMap<string, number>, now = new Date().toISOString()): Promise<void> {
    const entries = [...listings];
    for (let start = 0; start < entries.length; start += ROWS_PER_INSERT) {
      const chunk = entries.slice(start, start + ROWS_PER_INSERT);
      const parameters: SqlValue[] = chunk.flatMap(([id, position]) => [this.verification, id, position, 0, 0, now]);
      await this.executor.run(
        `INSERT INTO verify_listed (verification, record_id, position, removed, added, listed_at) VALUES ${chunk.map(() => '(?, ?, ?, ?, ?, ?)').join(', ')}
         ON CONFLICT (verification, record_id) DO NOTHING`,
        parameters,
      );
    }
  }

  /** Distinct ids this listing holds. */
  async count(): Promise<number> {
    const row = await this.executor.get<{ n: number }>('SELECT COUNT(*) AS n FROM verify_listed WHERE verification = ?', [this.verification]);
    return Number(row!.n);
  }

  /** Deletes this listing's rows and its parts'. */
  async clear(): Promise<void> {
    await this.executor.run(`DELETE FROM verify_listed WHERE verification IN ${jsonArrayValues(this.executor.dialect)}`, [JSON.stringify(this.keys())]);
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
   * The condition of a live row of the stream that no scan of the verification listed, first seen
   * at or before the verification began, and its parameters after the statement's own. `where`:
   * `inside` the scanned scope (the extras), `outside` it (rows of no scanned partition: their
   * column holds another value, or none), or `unconfirmed`: inside it and not missed by the
   * previous complete scan (`missed_scans = 0`), `confirmed`: inside it and missed by it too. A row
   * written through after `writtenAfter` is none of them.
   */
  private unlistedWhere(stream: StreamDefinition, since: string, scope: UnlistedScope | undefined, where: 'inside' | 'outside' | 'confirmed' | 'unconfirmed'): { sql: string; parameters: SqlValue[] } {
    const key = keyColumn(stream);
    const values = jsonArrayValues(this.executor.dialect);
    let inScope = '';
    const scopeParameters: SqlValue[] = [];
    if (scope) {
      inScope = where === 'outside' ? ` AND (t.${scope.column} IS NULL OR t.${scope.column} NOT IN ${values})` : ` AND t.${scope.column} IN ${values}`;
      scopeParameters.push(JSON.stringify(scope.values));
    } else if (where === 'outside') inScope = ' AND 1 = 0';
    const missed = where === 'confirmed' ? ' AND t.missed_scans > 0' : where === 'unconfirmed' ? ' AND t.missed_scans = 0' : '';
    const written = writtenNotAfter(this.writtenAfter, 't.');
    return {
      sql: `t.deleted_at IS NULL AND t.first_seen_at <= ?${inScope}${missed}${written.sql} AND NOT EXISTS (SELECT 1 FROM verify_listed v WHERE v.verification IN ${values} AND v.record_id = t.${key})`,
      parameters: [since, ...scopeParameters, ...written.params, JSON.stringify(this.keys())],
    };
  }

  /**
   * Live records of the stream no scan of the verification listed, counting only those the mirror
   * held when it began (`since`, ISO: a record written through meanwhile could not be listed):
   * `inside` the scanned scope (the extras; default), `outside` it (rows of no partition scanned),
   * or, inside it, `confirmed` (the previous complete scan missed them too) and `unconfirmed`.
   * @returns how many, and the first `sample` of their ids in key order
   */
  async unlisted(stream: StreamDefinition, since: string, sample: number, scope?: UnlistedScope, where: 'inside' | 'outside' | 'confirmed' | 'unconfirmed' = 'inside'): Promise<{ count: number; ids: string[] }> {
    const key = keyColumn(stream);
    const condition = this.unlistedWhere(stream, since, scope, where);
    const counted = await this.executor.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${stream.table} t WHERE ${condition.sql}`, condition.parameters);
    const ids = await this.executor.all<{ id: string }>(`SELECT t.${key} AS id FROM ${stream.table} t WHERE ${condition.sql} ORDER BY t.${key} LIMIT ?`, [...condition.parameters, sample]);
    return { count: Number(counted!.n), ids: ids.map((row) => String(row.id)) };
  }

  /** How many of `ids` are live records of the scanned scope the mirror held when the verification began (`since`, ISO), as `liveAtStart` counts them. */
  async liveAtStartAmong(stream: StreamDefinition, since: string, ids: readonly string[], scope?: UnlistedScope): Promise<number> {
    if (ids.length === 0) return 0;
    const values = jsonArrayValues(this.executor.dialect);
    const inScope = scope ? ` AND ${scope.column} IN ${values}` : '';
    const row = await this.executor.get<{ n: number }>(
      `SELECT COUNT(*) AS n FROM ${stream.table} WHERE deleted_at IS NULL AND first_seen_at <= ?${inScope} AND ${keyColumn(stream)} IN ${values}`,
      [since, ...(scope ? [JSON.stringify(scope.values)] : []), JSON.stringify(ids)],
    );
    return Number(row!.n);
  }

  /** Live records of the scanned scope the mirror held when the verification began (`since`, ISO): what the lists' totals must account for. */
  async liveAtStart(stream: StreamDefinition, since: string, scope?: UnlistedScope): Promise<number> {
    const inScope = scope ? ` AND ${scope.column} IN ${jsonArrayValues(this.executor.dialect)}` : '';
    const row = await this.executor.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${stream.table} WHERE deleted_at IS NULL AND first_seen_at <= ?${inScope}`, [
      since,
      ...(scope ? [JSON.stringify(scope.values)] : []),
    ]);
    return Number(row!.n);
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
   * Counts one more miss for each unconfirmed extra (`unlisted(..., 'unconfirmed')`) on `store` (the
   * caller's transaction), as a complete scan of the two-scan rule counts one (src/mirror/mirror-store.ts
   * `recordMisses`): the next complete scan that misses them too tombstones them.
   * @returns rows counted
   */
  async countMisses(store: MirrorStore, stream: StreamDefinition, since: string, scope?: UnlistedScope): Promise<number> {
    const key = keyColumn(stream);
    const condition = this.unlistedWhere(stream, since, scope, 'unconfirmed');
    const rows = await store.executor.all<{ id: string }>(`SELECT t.${key} AS id FROM ${stream.table} t WHERE ${condition.sql}`, condition.parameters);
    if (rows.length === 0) return 0;
    await store.executor.run(`UPDATE ${stream.table} SET missed_scans = missed_scans + 1 WHERE ${key} IN ${jsonArrayValues(store.executor.dialect)}`, [
      JSON.stringify(rows.map((row) => String(row.id))),
    ]);
    return rows.length;
  }

  /**
   * Tombstones up to `limit` of the extras (`unlisted`: `inside` the scope, or only the `confirmed`
   * ones) on `store` (bound to the caller's transaction): sets `deleted_at` and appends the stream's
   * gone change for each, in key order, as the two-scan rule does; with `namePartition` (a
   * partitioned stream), each change names the record's partition (its `scope` column's value).
   * @returns the changes appended (none when no extra is left)
   */
  async tombstoneUnlisted(
    store: MirrorStore,
    stream: StreamDefinition,
    since: string,
    limit: number,
    scope?: UnlistedScope,
    options: { where?: 'inside' | 'confirmed'; namePartition?: boolean } = {},
    now = new Date().toISOString(),
  ): Promise<AppendedChange[]> {
    const where = options.where ?? 'inside';
    const key = keyColumn(stream);
    const condition = this.unlistedWhere(stream, since, scope, where);
    const partitionOf = scope && options.namePartition ? `, t.${scope.column} AS partition_value` : '';
    const rows = await store.executor.all<{ id: string; raw: string; partition_value?: unknown }>(
      `SELECT t.${key} AS id, t.raw${partitionOf} FROM ${stream.table} t WHERE ${condition.sql} ORDER BY t.${key} LIMIT ?`,
      [...condition.parameters, limit],
    );
    if (rows.length === 0) return [];
    await store.executor.run(`UPDATE ${stream.table} SET deleted_at = ? WHERE ${key} IN ${jsonArrayValues(store.executor.dialect)}`, [now, JSON.stringify(rows.map((row) => String(row.id)))]);
    return store.appendChanges(
      rows.map((row) => ({
        type: stream.changes.gone,
        stream: stream.name,
        recordId: String(row.id),
        occurredAt: now,
        data: { record: JSON.parse(row.raw) as unknown, changes: { deletedAt: { old: null, new: now } } },
        ...(row.partition_value !== undefined && row.partition_value !== null ? { partition: String(row.partition_value) } : {}),
      })),
    );
  }
}
