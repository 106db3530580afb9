/**
 * Job: run streams once, one after another (the `backfill` and `sync` commands, and the demo).
 * Wiring only: the engine does the work.
 */
import type { Config } from '../src/config/schema.ts';
import type { Logger } from '../src/logging/logger.ts';
import type { StreamName } from '../src/streams/definitions.ts';
import type { RunOptions, RunReason, RunResult } from '../src/sync/engine.ts';
import { openContext, type Context } from './context.ts';

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
 * `bizops-sync backfill` / `sync`: opens a context on the shared rate budget (in-process when Redis
 * does not answer), runs `streams`, closes it.
 * @returns one result per stream that ran
 */
export async function runStreamsJob(config: Config, streams: readonly StreamName[], reason: RunReason, options: RunOptions & { logger?: Logger } = {}): Promise<RunResult[]> {
  const context = await openContext(config, { logger: options.logger });
  try {
    return await runStreams(context, streams, reason, options);
  } finally {
    await context.close();
  }
}
