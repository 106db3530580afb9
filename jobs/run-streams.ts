/**
 * Job: run streams once, one after another (the `backfill` and `sync` commands, and the demo).
 * Wiring only: the engine does the work.
 */
import type { RunOptions, RunReason, RunResult } from '../src/sync/engine.ts';
import type { StreamName } from '../src/streams/definitions.ts';
import type { Context } from './context.ts';

/**
 * Runs each stream with `reason`, stopping early when `options.signal` aborts.
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
