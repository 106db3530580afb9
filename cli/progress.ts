/**
 * Progress of long runs: a bar per stream on a terminal (cli-progress), a log line every few seconds
 * otherwise (containers, CI, pipes). cli-progress is loaded only for bars.
 */
import type { SingleBar } from 'cli-progress';
import type { Logger } from '../src/logging/index.ts';
import type { RunProgress, VerifyProgress } from '../src/sync/index.ts';

/** A run's progress after a page: a backfill's or sync's (`RunProgress`) or a verification's (`VerifyProgress`: `changes` are the differences found). */
export type ProgressUpdate = Pick<RunProgress | VerifyProgress, 'stream' | 'reason' | 'records' | 'changes' | 'total' | 'offset' | 'pages'>;

export interface ProgressReporter {
  update(progress: ProgressUpdate): void;
  stop(): void;
}

/**
 * @param interactive true for bars on stderr; false for log lines
 * @param logIntervalMs minimum time between log lines per stream, ms
 * @param changesLabel what the bar calls the `changes` count (`differences` for verify)
 */
export async function createProgressReporter(
  logger: Logger,
  interactive = process.stderr.isTTY === true,
  logIntervalMs = 5000,
  changesLabel = 'changes',
): Promise<ProgressReporter> {
  if (interactive) {
    const { default: cliProgress } = await import('cli-progress');
    const bars = new cliProgress.MultiBar(
      {
        stream: process.stderr,
        format: ` {stream} [{bar}] {percentage}% | {value}/{total} records | {changes} ${changesLabel} | {eta_formatted} left`,
        hideCursor: true,
        clearOnComplete: false,
        etaBuffer: 20,
      },
      cliProgress.Presets.shades_classic,
    );
    const byStream = new Map<string, SingleBar>();
    return {
      update(progress) {
        const total = Math.max(progress.total, progress.records);
        let bar = byStream.get(progress.stream);
        if (!bar) {
          bar = bars.create(total, 0, { stream: progress.stream.padEnd(12), changes: 0 });
          byStream.set(progress.stream, bar);
        }
        bar.setTotal(total);
        bar.update(Math.min(progress.records, total), { changes: progress.changes });
      },
      stop() {
        bars.stop();
      },
    };
  }
  const lastLogged = new Map<string, number>();
  return {
    update(progress) {
      const now = Date.now();
      const previous = lastLogged.get(progress.stream) ?? 0;
      const finished = progress.offset >= progress.total;
      if (!finished && now - previous < logIntervalMs) return;
      lastLogged.set(progress.stream, now);
      logger.info(
        { stream: progress.stream, records: progress.records, total: progress.total, changes: progress.changes, pages: progress.pages },
        `${progress.reason} progress`,
      );
    },
    stop() {},
  };
}
