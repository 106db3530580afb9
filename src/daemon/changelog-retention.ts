/**
 * The daemon's changelog retention (docs/mirror.md "Retention"; config `changes.retainDays`): for
 * one connection's mirror, prunes the change rows older than `retainDays` (src/notify/retention.ts
 * `pruneChangelog`: oldest first, in small batches, never past a webhook endpoint's or a named
 * consumer's cursor) and the delivery attempts older than theirs, once soon after start and then
 * every `intervalMs`. Several daemons on one mirror may all run it: pruning is idempotent.
 */
import { silentLogger, type Logger } from '../logging/logger.ts';
import type { SqlExecutor } from '../mirror/sql/executor.ts';
import { pruneChangelog, retentionCutoff, type PruneResult } from '../notify/retention.ts';
import type { RoundReports } from './part-supervisor.ts';

/** How often the retention runs by default, ms: hourly (a day's changelog is pruned in 24 small steps). */
export const DEFAULT_RETENTION_INTERVAL_MS = 3_600_000;

/** Construction options of ChangelogRetention. */
export interface ChangelogRetentionOptions {
  executor: SqlExecutor;
  /** Days to keep (config `changes.retainDays`); 0 keeps every change (delivery attempts are still pruned). */
  retainDays: number;
  /** The configured webhook endpoints' names. */
  endpoints: readonly string[];
  /** Between runs, ms. Default hourly. */
  intervalMs?: number;
  logger?: Logger;
  /** Called after each run (metrics, tests). */
  onPruned?: (result: PruneResult) => void;
  /** Told how each run on the timer went (the daemon's `retention` part: part-supervisor.ts). */
  rounds?: RoundReports;
}

/** Runs the retention on a timer; `start` once, `stop` once. */
export class ChangelogRetention {
  readonly #options: ChangelogRetentionOptions;
  readonly #logger: Logger;
  readonly #stop = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;

  constructor(options: ChangelogRetentionOptions) {
    this.#options = options;
    this.#logger = (options.logger ?? silentLogger).child({ component: 'retention' });
  }

  /**
   * Runs once after `firstRunDelayMs` (default 0: at once, in the background) and then every interval.
   * The daemon runs the first pruning itself (`runOnce`, retried by its part supervisor until it
   * works) and then starts the timer with the interval as the first delay.
   */
  start(firstRunDelayMs = 0): void {
    this.#schedule(firstRunDelayMs);
  }

  /** Between two runs, ms. */
  get intervalMs(): number {
    return this.#options.intervalMs ?? DEFAULT_RETENTION_INTERVAL_MS;
  }

  /** Stops the timer and waits for a run in progress to end (between two batches). Safe to call twice. */
  async stop(): Promise<void> {
    this.#stop.abort();
    clearTimeout(this.#timer);
    await this.#running;
  }

  /**
   * One run now, ended early (between two batches) by `stop()` or by `signal`.
   * @returns what it pruned
   * @throws the database's error when it cannot read or delete (busy, away)
   */
  async runOnce(signal?: AbortSignal): Promise<PruneResult> {
    const before = retentionCutoff(this.#options.retainDays) ?? new Date(0);
    const stopped = signal ? AbortSignal.any([this.#stop.signal, signal]) : this.#stop.signal;
    const result = await pruneChangelog(this.#options.executor, { before, endpoints: this.#options.endpoints, signal: stopped });
    if (result.rows > 0 || result.attempts > 0) {
      this.#logger.info(
        { rows: result.rows, bytes: result.bytes, prunedThrough: result.prunedThrough, oldestSeq: result.oldestSeq, heldBy: result.heldBy, attempts: result.attempts, retainDays: this.#options.retainDays },
        'changelog pruned',
      );
    }
    this.#options.onPruned?.(result);
    return result;
  }

  #schedule(delayMs: number): void {
    if (this.#stop.signal.aborted) return;
    this.#timer = setTimeout(() => {
      this.#running = this.runOnce()
        .then(() => this.#options.rounds?.working())
        .catch((error: unknown) => {
          this.#options.rounds?.failing(error);
          this.#logger.warn({ err: { message: (error as Error).message } }, 'changelog pruning failed; it runs again at the next interval');
        })
        .finally(() => this.#schedule(this.intervalMs));
    }, delayMs);
    this.#timer.unref();
  }
}
