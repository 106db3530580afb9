/**
 * Job: run streams once, one after another within a connection, every selected connection at once
 * (the `backfill` and `sync` commands, and the demo).
 * Wiring only: the engine does the work.
 */
import type { Config, DeploymentConfig } from '../src/config/index.ts';
import type { Logger } from '../src/logging/index.ts';
import type { StreamName } from '../src/streams/index.ts';
import type { RunOptions, RunProgress, RunReason, RunResult } from '../src/sync/index.ts';
import { openDeployment, type Context } from './context.ts';

/**
 * Runs each stream with `reason` on an open context, stopping early when `options.signal` aborts.
 * @returns one result per stream that ran
 */
export async function runStreams(context: Context, streams: readonly StreamName[], reason: RunReason, options: RunOptions = {}): Promise<RunResult[]> {
  const results: RunResult[] = [];
  for (const stream of streams) {
    if (options.signal?.aborted) break;
    results.push(await context.engine.run(stream, reason, options));
  }
  return results;
}

/**
 * `bizops-sync backfill|sync [--all | --connection NAME]`: opens every connection of `deployment` on
 * one Redis connection and one budget per company (openDeployment), and runs each connection's
 * `streams(config)` concurrently (streams one after another within a connection).
 * @returns each connection's results, in the order of `deployment.connections`
 */
export async function runConnectionsJob(
  deployment: DeploymentConfig,
  streams: (config: Config) => readonly StreamName[],
  reason: RunReason,
  options: Omit<RunOptions, 'onProgress'> & { logger?: Logger; onProgress?: (connection: string, progress: RunProgress) => void } = {},
): Promise<{ connection: string; results: RunResult[] }[]> {
  const { onProgress, logger, ...runOptions } = options;
  const opened = await openDeployment(deployment, { logger });
  try {
    return await Promise.all(
      opened.contexts.map(async (context) => {
        const connection = context.config.connection;
        const results = await runStreams(context, streams(context.config), reason, {
          ...runOptions,
          ...(onProgress ? { onProgress: (progress: RunProgress) => onProgress(connection, progress) } : {}),
        });
        return { connection, results };
      }),
    );
  } finally {
    await opened.close();
  }
}
