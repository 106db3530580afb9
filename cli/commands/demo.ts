/** `bizops-sync demo`: the simulator with churn plus the worker polling it, printing each change. */
import type { Command } from 'commander';
import { exitCodeForSignal, integerOption, requireSimulatorInstalled, shutdownOnSignals } from '../shared.ts';

export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description('start the simulator with churn, backfill it into ./data/demo.db, then poll every few seconds and print each change until Ctrl-C')
    .option('--db <path>', 'the demo mirror (deleted and recreated)', './data/demo.db')
    .option('--poll <seconds>', 'seconds between polls', integerOption('--poll', 1), 3)
    .option('--duration <seconds>', 'poll for this many seconds after the backfill, then stop (0: until Ctrl-C)', integerOption('--duration'), 0)
    .action(async (options: { db: string; poll: number; duration: number }) => {
      // The demo job imports the simulator, which the production image does not have: load it when run.
      requireSimulatorInstalled('demo');
      const [{ runDemo }, { createLogger }, { createProgressReporter }] = await Promise.all([
        import('../../jobs/demo.ts'),
        import('../../src/logging/index.ts'),
        import('../progress.ts'),
      ]);
      const logger = createLogger({ level: process.env.BIZOPS_LOG_LEVEL ?? 'warn' });
      const shutdown = shutdownOnSignals();
      const reporter = await createProgressReporter(logger, process.stderr.isTTY === true);
      try {
        await runDemo({
          dbPath: options.db,
          pollSeconds: options.poll,
          durationSeconds: options.duration,
          signal: shutdown.signal,
          logger,
          print: (line) => process.stdout.write(`${line}\n`),
          onProgress: (progress) => reporter.update(progress),
          onBackfillDone: () => reporter.stop(),
        });
      } finally {
        reporter.stop();
        shutdown.dispose();
      }
      // Like every command: 130 after Ctrl-C, 0 after SIGTERM.
      const code = exitCodeForSignal(shutdown.received());
      if (code !== undefined) process.exitCode = code;
    });
}
