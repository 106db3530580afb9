/**
 * `bizops-sync daemon`: runs unattended until SIGTERM or SIGINT. The daemon's parts
 * (scheduler, write queue, webhook dispatcher, metrics, HTTP port) are loaded when it starts.
 *
 * Shutdown: the first SIGTERM or SIGINT aborts runs (their checkpoints stand), stops the schedule,
 * the webhook dispatcher and the HTTP server, flushes the log and exits: 0 after SIGTERM (a requested
 * stop), 130 after Ctrl-C (SIGINT), as every command. Should anything hang, the process exits anyway
 * 10 s after the signal (code 1, logged). A second Ctrl-C exits at once (130).
 */
import type { Command } from 'commander';
import { deploymentFromEnvironment, exitCodeForSignal, shutdownOnSignals } from '../shared.ts';
import { checkDeployment } from './config.ts';

/** After a stop signal, the process exits within this long whatever happens, ms. */
const FORCED_EXIT_AFTER_MS = 10_000;

export function registerDaemonCommand(program: Command): void {
  program
    .command('daemon')
    .description('run unattended, for every configured connection at once: scheduled incremental syncs and reconciliation, webhook delivery, a write worker, and one HTTP port with /healthz, /readyz, /metrics and the write API')
    .addHelpText(
      'after',
      `
Schedules are cron expressions (a leading seconds field is allowed):
  BIZOPS_SCHEDULE            every stream's incremental sync (default "*/30 * * * * *": every 30 s)
  BIZOPS_RECONCILE_SCHEDULE  reconciliation, a complete scan finding records gone upstream (default "0 17 */6 * * *")
HTTP port:
  BIZOPS_HTTP_HOST, BIZOPS_HTTP_PORT   where /healthz, /readyz, /metrics listen (default 127.0.0.1:8080)
Webhooks:
  BIZOPS_WEBHOOK_URL, BIZOPS_WEBHOOK_SECRET   one endpoint receiving every event (more in the config file)
Writes:
  REDIS_URL                  the write queue and the rate budget shared with every other process
  BIZOPS_WRITE_API_KEY       turns on POST /writes and GET /writes/{id} (bearer key, 16+ characters)
Check the effective configuration first: bizops-sync config check`,
    )
    .action(async () => {
      const deployment = deploymentFromEnvironment();
      checkDeployment(deployment);
      const [{ deploymentLogger }, { startDaemon }] = await Promise.all([import('../../jobs/context.ts'), import('../../jobs/daemon.ts')]);
      const logger = deploymentLogger(deployment);
      let stopped = false;
      // Listen before starting, so a signal that arrives during start-up still stops gracefully.
      const shutdown = shutdownOnSignals((signal) => {
        logger.info({ signal }, 'stop signal received');
        setTimeout(() => {
          logger.error({ afterMs: FORCED_EXIT_AFTER_MS, gracefulStopFinished: stopped }, 'shutdown took too long: exiting anyway');
          logger.flush();
          process.exit(stopped ? (exitCodeForSignal(signal) ?? 0) : 1);
        }, FORCED_EXIT_AFTER_MS).unref();
      });
      try {
        const daemon = await startDaemon(deployment, { logger });
        if (!shutdown.signal.aborted) await new Promise<void>((resolve) => shutdown.signal.addEventListener('abort', () => resolve(), { once: true }));
        await daemon.stop();
        stopped = true;
        process.exitCode = exitCodeForSignal(shutdown.received()) ?? 0;
      } finally {
        shutdown.dispose();
      }
    });
}
