/**
 * The record clock of each stream (docs/sync.md "Record clock"): how far its records' timestamps
 * (`updatedAt`, `createdAt`) lag the clock the stream's cursor is taken from (the server's `Date`
 * header, or this host's clock when the server sends none). Every statement on `record_clock` is
 * here; src/sync/record-clock-lags.ts makes the observations and the engine widens its overlap by the lag.
 */
import type { SqlExecutor } from './sql/executor.ts';

/** A stream's measured record clock lag. */
export interface RecordClockLag {
  /** The largest lag observed, seconds (>= 0; 0 when none was observed). */
  lagSeconds: number;
  /** Observations that measured a lag. */
  observations: number;
  /** ISO 8601 (local clock) of the last observation that measured a lag, null when none. */
  lastObservedAt: string | null;
  /**
   * What measured the largest lag: `list` (a record of one of the stream's pages), `write` (a
   * write's response) or `probe` (the one-page probe sorted by `updatedAt` another stream's run made
   * of this one), null when none.
   */
  source: RecordClockSource | null;
  /**
   * The stream's last high water (`record_clock.probe_at`, `probe_high_water`, migration 12), null
   * before the first: at `at` (ISO 8601, the cursor's clock: the run's first page) the stream held no
   * record stamped later than `updatedAt` (ISO 8601, the records' clock). A record stamped later
   * was stamped after `at`.
   */
  highWater: { at: string; updatedAt: string } | null;
}

/** What measured a lag (`RecordClockLag.source`). */
export type RecordClockSource = 'list' | 'write' | 'probe';

/** Reads and records the lag of each stream's record clock. */
export class RecordClockStore {
  private readonly executor: SqlExecutor;

  /** @param executor a connection, or a transaction's executor (the statements then join it) */
  constructor(executor: SqlExecutor) {
    this.executor = executor;
  }

  /** The stream's lag (zeros when nothing was observed). */
  async read(stream: string): Promise<RecordClockLag> {
    const row = await this.executor.get<{
      lag_seconds: number;
      observations: number;
      last_observed_at: string | null;
      source: RecordClockSource | null;
      probe_at: string | null;
      probe_high_water: string | null;
    }>('SELECT lag_seconds, observations, last_observed_at, source, probe_at, probe_high_water FROM record_clock WHERE stream = ?', [stream]);
    if (!row) return { lagSeconds: 0, observations: 0, lastObservedAt: null, source: null, highWater: null };
    return {
      lagSeconds: Number(row.lag_seconds),
      observations: Number(row.observations),
      lastObservedAt: row.last_observed_at,
      source: row.source,
      highWater: row.probe_at !== null && row.probe_high_water !== null ? { at: row.probe_at, updatedAt: row.probe_high_water } : null,
    };
  }

  /**
   * Keeps the stream's high water (`RecordClockLag.highWater`), replacing the previous one.
   * @param at ISO 8601, the cursor's clock
   * @param updatedAt ISO 8601, the records' clock: no record of the stream was stamped later at `at`
   */
  async saveHighWater(stream: string, at: string, updatedAt: string): Promise<void> {
    await this.executor.run(
      `INSERT INTO record_clock (stream, probe_at, probe_high_water) VALUES (?, ?, ?)
       ON CONFLICT (stream) DO UPDATE SET probe_at = excluded.probe_at, probe_high_water = excluded.probe_high_water`,
      [stream, at, updatedAt],
    );
  }

  /**
   * Lowers every stream's lag to `ceilingSeconds` when it is above it: an upper bound measured now
   * on `stream` (a record stamped `ceilingSeconds` before the cursor's clock was listed, so the
   * records' clock is at most that far behind), which holds for every stream, since one server
   * stamps them all (as `largest`). Observations and sources stay.
   * @returns `stream`'s lag after, seconds
   */
  async cap(stream: string, ceilingSeconds: number): Promise<number> {
    const ceiling = Math.max(0, Math.round(ceilingSeconds * 1000) / 1000);
    await this.executor.run('UPDATE record_clock SET lag_seconds = ? WHERE lag_seconds > ?', [ceiling, ceiling]);
    return (await this.read(stream)).lagSeconds;
  }

  /**
   * The largest lag measured on any stream, seconds (0 when none): every stream's records are stamped
   * by the same server, so a lag seen on one (deals carry `updatedAt`) holds for the others
   * (transaction list items carry no timestamps to measure it).
   */
  async largest(): Promise<number> {
    const row = await this.executor.get<{ lag: number | null }>('SELECT MAX(lag_seconds) AS lag FROM record_clock');
    return Number(row?.lag ?? 0);
  }

  /**
   * Records observed lags (seconds, each > 0): the stream's lag becomes the largest observed (each a
   * lower bound of the true lag; widening the overlap by too much costs re-reads, never events) until
   * an upper bound lowers it (`cap`).
   * @returns the stream's lag after this observation, seconds
   */
  async observe(stream: string, lagsSeconds: readonly number[], source: RecordClockSource, now = new Date().toISOString()): Promise<number> {
    const positive = lagsSeconds.filter((lag) => Number.isFinite(lag) && lag > 0);
    if (positive.length === 0) return (await this.read(stream)).lagSeconds;
    const largest = Math.round(Math.max(...positive) * 1000) / 1000;
    // The stored row is named by its table (record_clock.x): PostgreSQL finds a bare name ambiguous with `excluded`.
    const row = await this.executor.get<{ lag_seconds: number }>(
      `INSERT INTO record_clock (stream, lag_seconds, observations, last_observed_at, source) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (stream) DO UPDATE SET
         source = CASE WHEN excluded.lag_seconds > record_clock.lag_seconds THEN excluded.source ELSE record_clock.source END,
         lag_seconds = CASE WHEN excluded.lag_seconds > record_clock.lag_seconds THEN excluded.lag_seconds ELSE record_clock.lag_seconds END,
         observations = record_clock.observations + excluded.observations,
         last_observed_at = excluded.last_observed_at
       RETURNING lag_seconds`,
      [stream, largest, positive.length, now, source],
    );
    return Number(row!.lag_seconds);
  }
}
