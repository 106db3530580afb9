/**
 * The runs a daemon finished since it started, the latest few per stream, in memory: what the
 * console shows under "Recent runs" beside the last run the mirror keeps (`sync_state`). Fed by the
 * scheduler's `onRunFinished` (jobs/daemon.ts); lost at a restart by design (the mirror keeps the last one).
 */
import { errorLine } from '../client/api-errors.ts';
import type { RunResult } from '../sync/sync-engine.ts';

/** One finished run as the console shows it. Times are ISO 8601. */
export interface FinishedRun {
  stream: string;
  reason: RunResult['reason'];
  mode: RunResult['mode'];
  status: RunResult['status'];
  resumed: boolean;
  /** List requests sent. */
  pages: number;
  records: number;
  changes: number;
  tombstones: number;
  /** Items quarantined by this run. */
  rejected: number;
  finishedAt: string;
  durationMs: number;
  /** The error in one line for a failed run (`HTTP 503: ...`, src/client `errorLine`); null otherwise. */
  error: string | null;
}

/** Default runs kept per stream. */
export const RECENT_RUNS_PER_STREAM = 5;

/** The latest runs per stream, newest first. */
export class RecentRuns {
  readonly #perStream: number;
  readonly #byStream = new Map<string, FinishedRun[]>();

  /** @param perStream runs kept per stream (the oldest is dropped past it). Default 5. */
  constructor(perStream = RECENT_RUNS_PER_STREAM) {
    this.#perStream = perStream;
  }

  /** Records a finished run; `durationMs` as the scheduler measured it. */
  record(result: RunResult, durationMs: number, finishedAt: Date = new Date()): void {
    const runs = this.#byStream.get(result.stream) ?? [];
    runs.unshift({
      stream: result.stream,
      reason: result.reason,
      mode: result.mode,
      status: result.status,
      resumed: result.resumed,
      pages: result.pages,
      records: result.records,
      changes: result.changes,
      tombstones: result.tombstones,
      rejected: result.rejected,
      finishedAt: finishedAt.toISOString(),
      durationMs: Math.round(durationMs),
      error: result.error ? errorLine(result.error) : null,
    });
    runs.length = Math.min(runs.length, this.#perStream);
    this.#byStream.set(result.stream, runs);
  }

  /** The stream's recorded runs, newest first (empty when none finished since the daemon started). */
  of(stream: string): FinishedRun[] {
    return [...(this.#byStream.get(stream) ?? [])];
  }
}
