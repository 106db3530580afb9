/**
 * Quarantine of invalid list items (docs/sync.md "Invalid records", docs/mirror.md
 * "`rejected_records`"): an item that fails its stream's schema is kept here, with why, instead of
 * failing its page and every later run. The rest of the page commits; the record is read again by
 * every run that lists it (the next one to change it, or the next complete scan), and its row leaves
 * as soon as a run accepts it.
 *
 * Every statement on `rejected_records` is here. Call inside the page's transaction
 * (`MirrorStore.transaction`), together with the records and the checkpoint.
 */
import { createHash } from 'node:crypto';
import { storableCopy, storableText, unstorableTextRule } from '../client/storable-json.ts';
import { maskSecrets } from '../logging/mask.ts';
import { inList, listParameter } from './sql/dialect.ts';
import type { AppendedChange, MirrorStore } from './mirror-store.ts';
import type { StreamDefinition } from '../streams/define-stream.ts';

/** The change type appended when a record is first quarantined, or quarantined again with other content. */
export const RECORD_REJECTED = 'record.rejected';

/** Does `stream` (the one parameter) have any quarantined item? A row when it does, none when not: one probe of the primary key. */
const QUARANTINED_ANY = 'SELECT 1 AS found FROM rejected_records WHERE stream = ? LIMIT 1';

/** Keys whose values never enter the quarantine (nor its change row): secrets a record may carry. */
const SECRET_KEYS = /^(sensitiveData|password|secret|token|accessToken|refreshToken|apiKey|authorization)$/i;

/** One invalid item of a page: as received, and why it failed (the field and the rule). */
export interface InvalidItem {
  raw: unknown;
  error: string;
}

/** One row of `rejected_records`, decoded. Times are ISO 8601. */
export interface RejectedRecord {
  stream: string;
  /** The record's id when the item carries one, else null. */
  recordId: string | null;
  /** The item as received, secrets removed. */
  raw: unknown;
  error: string;
  firstSeenAt: string;
  lastSeenAt: string;
  timesSeen: number;
}

/** A copy of `value` without the keys of `SECRET_KEYS`, at any depth. */
export function withoutSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutSecrets);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .filter(([key]) => !SECRET_KEYS.test(key))
        .map(([key, inner]) => [key, withoutSecrets(inner)]),
    );
  }
  return value;
}

/**
 * The id of a raw list item under `key`: a non-empty string both mirrors can store
 * (src/client/storable-json.ts), or null (none, another type, or text the mirror cannot store: the
 * item is then kept under its content's key).
 */
export function recordIdOf(raw: unknown, key: string): string | null {
  if (!raw || typeof raw !== 'object') return null;
  const id = (raw as Record<string, unknown>)[key];
  return typeof id === 'string' && id !== '' && unstorableTextRule(id) === undefined ? id : null;
}

/**
 * The item as the quarantine keeps it, as JSON text: a storable copy (`storableCopy`: an item the
 * mirror cannot store is kept with U+FFFD in place of each NUL or unpaired surrogate, and a part
 * nested too deep replaced by a marker, so that the quarantine row and its `record.rejected` event
 * are storable and readable anywhere), secrets removed, masked.
 */
function quarantinedText(raw: unknown): string {
  return maskSecrets(JSON.stringify(withoutSecrets(storableCopy(raw))) ?? 'null');
}

/**
 * The key an invalid item is quarantined under (`rejected_records.record_key`): its id when it
 * carries one under `key`, else `raw:<sha256 of the item as kept>`: an item without an id is told
 * apart by its content, so the same one listed again is the same row.
 */
export function quarantineKey(raw: unknown, key: string): string {
  return recordIdOf(raw, key) ?? `raw:${createHash('sha256').update(quarantinedText(raw)).digest('hex')}`;
}

/** Reads and writes `rejected_records` on the mirror of a MirrorStore (joining its transaction when it is bound to one). */
export class RejectedRecords {
  private readonly store: MirrorStore;

  constructor(store: MirrorStore) {
    this.store = store;
  }

  /**
   * Quarantines the invalid items of one page. A record not quarantined before, or quarantined with
   * other content, gets one `record.rejected` change row; one seen again unchanged only counts.
   * A quarantined record already in the mirror is marked seen by the complete scan `scanNumber`, so
   * the two-scan rule does not tombstone a record that is still listed.
   * @returns the change rows appended
   */
  quarantine(stream: StreamDefinition, items: readonly InvalidItem[], options: { scanNumber?: number; now?: string; partition?: string } = {}): Promise<AppendedChange[]> {
    const partition = options.partition ?? '';
    const now = options.now ?? new Date().toISOString();
    const key = stream.columns.find((column) => column.primaryKey)?.column ?? 'id';
    return this.store.transaction(async (store) => {
      const sql = store.executor;
      const appended: AppendedChange[] = [];
      for (const item of items) {
        const rawText = quarantinedText(item.raw);
        const recordId = recordIdOf(item.raw, stream.key);
        const recordKey = quarantineKey(item.raw, stream.key);
        const error = storableText(maskSecrets(item.error));
        const previous = await sql.get<{ raw: string }>('SELECT raw FROM rejected_records WHERE stream = ? AND record_key = ?', [stream.name, recordKey]);
        await sql.run(
          `INSERT INTO rejected_records (stream, record_key, record_id, raw, error, first_seen_at, last_seen_at, times_seen, partition_value)
           VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?)
           ON CONFLICT (stream, record_key) DO UPDATE SET raw = excluded.raw, error = excluded.error, last_seen_at = excluded.last_seen_at,
             times_seen = rejected_records.times_seen + 1, partition_value = excluded.partition_value`,
          [stream.name, recordKey, recordId, rawText, error, now, now, partition],
        );
        if (recordId !== null && options.scanNumber !== undefined) {
          await sql.run(`UPDATE ${stream.table} SET last_seen_scan = ?, missed_scans = 0 WHERE ${key} = ? AND deleted_at IS NULL`, [options.scanNumber, recordId]);
        }
        if (previous?.raw === rawText) continue;
        appended.push(
          await store.appendChange({
            type: RECORD_REJECTED,
            stream: stream.name,
            recordId: recordKey,
            occurredAt: now,
            data: { record: JSON.parse(rawText) as unknown, changes: {}, error },
            ...(partition ? { partition } : {}),
          }),
        );
      }
      return appended;
    });
  }

  /**
   * True when `stream` has quarantined items (one probe of the primary key's first column). A run
   * asks once (`StreamRun`): only the runs holding the stream's lease quarantine its items, so the
   * answer holds for the rest of the run until the run itself quarantines one.
   */
  async anyQuarantined(stream: string): Promise<boolean> {
    return (await this.store.executor.get(QUARANTINED_ANY, [stream])) !== undefined;
  }

  /** Removes the quarantine rows of records a run just accepted. @returns how many rows left */
  async release(stream: string, recordIds: readonly string[]): Promise<number> {
    if (recordIds.length === 0) return 0;
    // One statement per page whatever its size (usually deleting nothing).
    const sql = this.store.executor;
    return (await sql.run(`DELETE FROM rejected_records WHERE stream = ? AND ${inList(sql.dialect, 'record_key')}`, [stream, listParameter(sql.dialect, recordIds)])).changes;
  }

  /**
   * `release`, sent with the transaction's COMMIT on PostgreSQL (executor.ts `runAtCommit`: no round
   * trip of its own; at once on SQLite). Only when no later statement of the transaction writes
   * `rejected_records` (a page with rejected items quarantines them after: use `release`).
   */
  async releaseAtCommit(stream: string, recordIds: readonly string[]): Promise<void> {
    if (recordIds.length === 0) return;
    const sql = this.store.executor;
    // SQLite: one probe of the primary key's first column first; the DELETE (the page's ids parsed
    // from JSON, each looked up) only when the stream has quarantined records at all, which it
    // seldom has. PostgreSQL sends the DELETE with the COMMIT: a probe would cost a round trip.
    if (sql.dialect === 'sqlite' && (await sql.get(QUARANTINED_ANY, [stream])) === undefined) return;
    await sql.runAtCommit(`DELETE FROM rejected_records WHERE stream = ? AND ${inList(sql.dialect, 'record_key')}`, [stream, listParameter(sql.dialect, recordIds)]);
  }

  /**
   * How many quarantined items of `stream` were listed at or after `sinceIso` (a run's start) and
   * have no live row in the mirror: those with an id the mirror does not hold, and those without an
   * id (each distinct item once). A complete scan listed them, though its seen marks (on mirror
   * rows) cannot count them (docs/sync.md "Scan completeness"). With `partition`, only the items that
   * partition listed.
   */
  async countListedOutsideMirror(stream: StreamDefinition, sinceIso: string, partition = ''): Promise<number> {
    const key = stream.columns.find((column) => column.primaryKey)?.column ?? 'id';
    const row = await this.store.executor.get<{ n: number }>(
      `SELECT COUNT(*) AS n FROM rejected_records r
        WHERE r.stream = ? AND r.partition_value = ? AND r.last_seen_at >= ?
          AND (r.record_id IS NULL OR NOT EXISTS (SELECT 1 FROM ${stream.table} t WHERE t.${key} = r.record_id AND t.deleted_at IS NULL))`,
      [stream.name, partition, sinceIso],
    );
    return Number(row!.n);
  }

  /**
   * True when a quarantined item of `stream` (of `partition`) was last listed after `afterIso` and
   * before `beforeIso` (a complete scan's start): one SELECT of one row. A scan that did not list it
   * asks about its frozen set's second before releasing it (src/sync/stream-run.ts `listedInBoundSecond`).
   */
  async listedBetween(stream: string, afterIso: string, beforeIso: string, partition = ''): Promise<boolean> {
    const row = await this.store.executor.get('SELECT 1 AS listed FROM rejected_records WHERE stream = ? AND partition_value = ? AND last_seen_at > ? AND last_seen_at < ? LIMIT 1', [
      stream,
      partition,
      afterIso,
      beforeIso,
    ]);
    return row !== undefined;
  }

  /**
   * Marks the quarantined items of `recordKeys` (`quarantineKey`) listed at `atIso` (`last_seen_at`),
   * so that `releaseUnlisted` with that time keeps them: items served, though in no page of the scan
   * (its frozen set's second). Keys not quarantined are left alone.
   */
  async markListed(stream: string, recordKeys: readonly string[], atIso: string): Promise<void> {
    if (recordKeys.length === 0) return;
    const sql = this.store.executor;
    await sql.run(`UPDATE rejected_records SET last_seen_at = ? WHERE stream = ? AND last_seen_at < ? AND ${inList(sql.dialect, 'record_key')}`, [
      atIso,
      stream,
      atIso,
      listParameter(sql.dialect, recordKeys),
    ]);
  }

  /**
   * Releases the quarantine rows of `stream` a complete scan did not list (last seen before
   * `sinceIso`, its start): the item is no longer served, with an id or without one, so there is
   * nothing left to fix (docs/sync.md "Invalid records"). Call only for a scan that was complete;
   * with `partition`, a partition's scan releases only the items that partition listed.
   * @returns how many rows left
   */
  async releaseUnlisted(stream: string, sinceIso: string, partition = ''): Promise<number> {
    return (await this.store.executor.run('DELETE FROM rejected_records WHERE stream = ? AND partition_value = ? AND last_seen_at < ?', [stream, partition, sinceIso])).changes;
  }

  /**
   * How many records of `stream` are quarantined now; with `partition`, only those that partition
   * listed ('' for an unpartitioned stream's).
   */
  async count(stream: string, partition?: string): Promise<number> {
    const row =
      partition === undefined
        ? await this.store.executor.get<{ n: number }>('SELECT COUNT(*) AS n FROM rejected_records WHERE stream = ?', [stream])
        : await this.store.executor.get<{ n: number }>('SELECT COUNT(*) AS n FROM rejected_records WHERE stream = ? AND partition_value = ?', [stream, partition]);
    return Number(row!.n);
  }

  /** The quarantined records of a partitioned stream per partition that listed them (partitions with none left out). */
  async countByPartition(stream: string): Promise<Map<string, number>> {
    const rows = await this.store.executor.all<{ partition_value: string; n: number }>(
      "SELECT partition_value, COUNT(*) AS n FROM rejected_records WHERE stream = ? AND partition_value <> '' GROUP BY partition_value",
      [stream],
    );
    return new Map(rows.map((row) => [row.partition_value, Number(row.n)]));
  }

  /** The quarantined records, of one stream or all, oldest first. */
  async list(stream?: string): Promise<RejectedRecord[]> {
    type Row = { stream: string; record_id: string | null; raw: string; error: string; first_seen_at: string; last_seen_at: string; times_seen: number };
    const rows =
      stream === undefined
        ? await this.store.executor.all<Row>('SELECT * FROM rejected_records ORDER BY first_seen_at, stream, record_key')
        : await this.store.executor.all<Row>('SELECT * FROM rejected_records WHERE stream = ? ORDER BY first_seen_at, record_key', [stream]);
    return rows.map((row) => ({
      stream: row.stream,
      recordId: row.record_id,
      raw: JSON.parse(row.raw) as unknown,
      error: row.error,
      firstSeenAt: row.first_seen_at,
      lastSeenAt: row.last_seen_at,
      timesSeen: Number(row.times_seen),
    }));
  }
}
