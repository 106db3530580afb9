/**
 * The record clock of each stream, and of each partition of a partitioned stream (docs/sync.md
 * "Record clock"): how far its records' timestamps (`updatedAt`, `createdAt`) lag the clock the
 * cursor is taken from (the server's `Date` header, or this host's clock when the server sends
 * none), its high water, the window its last incremental run listed, and the records its own probe
 * found that the incremental runs had not listed. Keyed by (stream, partition_value), '' for an
 * unpartitioned stream. Every statement on `record_clock` is here; src/sync/record-clock-lags.ts
 * makes the observations and the engine widens its overlap by the lag.
 */
import { planOnce, type SqlExecutor } from './sql/executor.ts';

/** The record clock of one stream or partition. */
export interface RecordClockLag {
  /** The largest lag observed, seconds (>= 0; 0 when none was observed). */
  lagSeconds: number;
  /** Observations that measured a lag. */
  observations: number;
  /** ISO 8601 (local clock) of the last observation that measured a lag, null when none. */
  lastObservedAt: string | null;
  /**
   * What measured the largest lag: `list` (a record of one of the stream's pages), `write` (a
   * write's response) or `probe` (the stream's own probe: records the list held that its
   * incremental runs had not listed), null when none.
   */
  source: RecordClockSource | null;
  /**
   * The last high water (`record_clock.probe_at`, `probe_high_water`), null before the first: at
   * `at` (ISO 8601, the cursor's clock: the run's first page) the stream (or partition) held no
   * record stamped later than `updatedAt` (ISO 8601, the records' clock). A record stamped later
   * was stamped after `at`.
   */
  highWater: { at: string; updatedAt: string } | null;
  /**
   * The window of the last incremental run: its `updatedAfter` (ISO 8601, the cursor's clock) and
   * the lag it allowed for (seconds); null before the first.
   */
  window: { from: string; lagSeconds: number } | null;
  /**
   * Records the stream's own probe found in the list that its incremental runs had not listed, and
   * when (ISO 8601, local clock); null when none is pending. The next run is then a complete scan.
   */
  unlisted: { records: number; at: string } | null;
}

/** What measured a lag (`RecordClockLag.source`). */
export type RecordClockSource = 'list' | 'write' | 'probe';

/** A stream, or one partition of it ('' for an unpartitioned stream). */
export interface RecordClockKey {
  stream: string;
  partition?: string;
}

interface Row {
  lag_seconds: number;
  observations: number;
  last_observed_at: string | null;
  source: RecordClockSource | null;
  probe_at: string | null;
  probe_high_water: string | null;
  window_from: string | null;
  window_lag_seconds: number | null;
  unlisted_records: number | null;
  unlisted_at: string | null;
}

/** A stream's or partition's record clock before anything was observed. */
const NOTHING_OBSERVED: RecordClockLag = { lagSeconds: 0, observations: 0, lastObservedAt: null, source: null, highWater: null, window: null, unlisted: null };

/** `RecordClockStore.read`'s lookup by the whole key: planned once in a transaction (executor.ts `planOnce`). */
const RECORD_CLOCK_READ = planOnce(
  'SELECT lag_seconds, observations, last_observed_at, source, probe_at, probe_high_water, window_from, window_lag_seconds, unlisted_records, unlisted_at FROM record_clock WHERE stream = ? AND partition_value = ?',
);

/** Reads and records the record clock of each stream and partition. */
export class RecordClockStore {
  private readonly executor: SqlExecutor;

  /** @param executor a connection, or a transaction's executor (the statements then join it) */
  constructor(executor: SqlExecutor) {
    this.executor = executor;
  }

  /** The record clock of a stream or one partition of it (`NOTHING_OBSERVED` when there is no row). */
  async read(key: RecordClockKey): Promise<RecordClockLag> {
    const row = await this.executor.get<Row>(RECORD_CLOCK_READ, [key.stream, key.partition ?? '']);
    if (!row) return NOTHING_OBSERVED;
    return {
      lagSeconds: Number(row.lag_seconds),
      observations: Number(row.observations),
      lastObservedAt: row.last_observed_at,
      source: row.source,
      highWater: row.probe_at !== null && row.probe_high_water !== null ? { at: row.probe_at, updatedAt: row.probe_high_water } : null,
      window: row.window_from !== null ? { from: row.window_from, lagSeconds: Number(row.window_lag_seconds ?? 0) } : null,
      unlisted: row.unlisted_records !== null && Number(row.unlisted_records) > 0 ? { records: Number(row.unlisted_records), at: row.unlisted_at ?? '' } : null,
    };
  }

  /** The largest lag of a stream over its partitions (its own row included), seconds (0 when none). */
  async streamLag(stream: string): Promise<number> {
    const row = await this.executor.get<{ lag: number | null }>('SELECT MAX(lag_seconds) AS lag FROM record_clock WHERE stream = ?', [stream]);
    return Number(row?.lag ?? 0);
  }

  /**
   * Keeps the high water of a stream or partition (`RecordClockLag.highWater`), replacing the previous one.
   * @param at ISO 8601, the cursor's clock
   * @param updatedAt ISO 8601, the records' clock: no record of it was stamped later at `at`
   */
  async saveHighWater(key: RecordClockKey, at: string, updatedAt: string): Promise<void> {
    await this.executor.run(
      `INSERT INTO record_clock (stream, partition_value, probe_at, probe_high_water) VALUES (?, ?, ?, ?)
       ON CONFLICT (stream, partition_value) DO UPDATE SET probe_at = excluded.probe_at, probe_high_water = excluded.probe_high_water`,
      [key.stream, key.partition ?? '', at, updatedAt],
    );
  }

  /**
   * Keeps the window of an incremental run that moved the cursor (`RecordClockLag.window`), or
   * clears it (`from` null: a complete scan listed everything).
   * @param from the run's `updatedAfter`, ISO 8601 (the cursor's clock)
   * @param lagSeconds the lag it allowed for, seconds
   */
  async saveWindow(key: RecordClockKey, from: string | null, lagSeconds: number): Promise<void> {
    await this.executor.run(
      `INSERT INTO record_clock (stream, partition_value, window_from, window_lag_seconds) VALUES (?, ?, ?, ?)
       ON CONFLICT (stream, partition_value) DO UPDATE SET window_from = excluded.window_from, window_lag_seconds = excluded.window_lag_seconds`,
      [key.stream, key.partition ?? '', from, from === null ? null : lagSeconds],
    );
  }

  /**
   * Records what the stream's own probe found (`RecordClockLag.unlisted`): `records` the list held
   * that the incremental runs had not listed (> 0), or clears it (0: a complete scan listed them).
   * @param at ISO 8601, local clock
   */
  async noteUnlisted(key: RecordClockKey, records: number, at = new Date().toISOString()): Promise<void> {
    await this.executor.run(
      `INSERT INTO record_clock (stream, partition_value, unlisted_records, unlisted_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (stream, partition_value) DO UPDATE SET unlisted_records = excluded.unlisted_records, unlisted_at = excluded.unlisted_at`,
      [key.stream, key.partition ?? '', records > 0 ? records : null, records > 0 ? at : null],
    );
  }

  /**
   * Lowers every lag above `ceilingSeconds` to it: an upper bound measured now (a record stamped
   * `ceilingSeconds` before the cursor's clock was listed, so the records' clock is at most that far
   * behind), which holds for every stream and partition, since one server stamps them all (as
   * `largest`). Observations and sources stay.
   * @returns the lag of `key` after, seconds
   */
  async cap(key: RecordClockKey, ceilingSeconds: number): Promise<number> {
    const ceiling = Math.max(0, Math.round(ceilingSeconds * 1000) / 1000);
    await this.executor.run('UPDATE record_clock SET lag_seconds = ? WHERE lag_seconds > ?', [ceiling, ceiling]);
    return (await this.read(key)).lagSeconds;
  }

  /**
   * The largest lag measured on any stream or partition, seconds (0 when none): every stream's
   * records are stamped by the same server, so a lag seen on one (deals carry `updatedAt`) holds for
   * the others (transaction list items carry no timestamps to measure it).
   */
  async largest(): Promise<number> {
    const row = await this.executor.get<{ lag: number | null }>('SELECT MAX(lag_seconds) AS lag FROM record_clock');
    return Number(row?.lag ?? 0);
  }

  /**
   * Records observed lags (seconds, each > 0) of a stream or partition: its lag becomes the largest
   * observed (each a lower bound of the true lag, or, from the stream's own probe, an upper one;
   * widening the overlap by too much costs re-reads, never events) until an upper bound lowers it (`cap`).
   * @returns its lag after this observation, seconds
   */
  async observe(key: RecordClockKey, lagsSeconds: readonly number[], source: RecordClockSource, now = new Date().toISOString()): Promise<number> {
    const positive = lagsSeconds.filter((lag) => Number.isFinite(lag) && lag > 0);
    if (positive.length === 0) return (await this.read(key)).lagSeconds;
    const largest = Math.round(Math.max(...positive) * 1000) / 1000;
    // The stored row is named by its table (record_clock.x): PostgreSQL finds a bare name ambiguous with `excluded`.
    const row = await this.executor.get<{ lag_seconds: number }>(
      `INSERT INTO record_clock (stream, partition_value, lag_seconds, observations, last_observed_at, source) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (stream, partition_value) DO UPDATE SET
         source = CASE WHEN excluded.lag_seconds > record_clock.lag_seconds THEN excluded.source ELSE record_clock.source END,
         lag_seconds = CASE WHEN excluded.lag_seconds > record_clock.lag_seconds THEN excluded.lag_seconds ELSE record_clock.lag_seconds END,
         observations = record_clock.observations + excluded.observations,
         last_observed_at = excluded.last_observed_at
       RETURNING lag_seconds`,
      [key.stream, key.partition ?? '', largest, positive.length, now, source],
    );
    return Number(row!.lag_seconds);
  }
}
