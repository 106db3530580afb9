/**
 * Job: run streams once, one after another within a connection, every selected connection at once
 * (the `backfill` and `sync` commands, and the demo).
 * Wiring only: the engine does the work.
 */
import { assertApiReachable } from '../src/client/index.ts';
import type { Config, DeploymentConfig } from '../src/config/index.ts';
import type { Logger } from '../src/logging/index.ts';
import { streamByName, type StreamName } from '../src/streams/index.ts';
import { Leases } from '../src/mirror/index.ts';
import { attemptUntilFree, measuringFirst, WrongBaseUrlError, type RunOptions, type RunProgress, type RunReason, type RunResult } from '../src/sync/index.ts';
import { damagedMirrorError, openDeployment, type Context } from './context.ts';

/** Options of `runStreams`: the engine's, and what to do with a stream another process runs. */
export interface RunStreamsOptions extends RunOptions {
  /**
   * A stream found `busy` (its lease held by another process or run) is asked again until it is
   * free, then run; default false: it ends busy. Meanwhile a request for the stream's lease is held
   * in the mirror (src/sync/wait-for-lease.ts), so a daemon holding it yields it within a third of
   * `sync.leaseSeconds`; a holder that died frees it when its lease expires. Polls every third of
   * `sync.leaseSeconds`, at most every second; `signal` ends the wait.
   */
  waitWhileBusy?: boolean;
}

/**
 * Runs each stream with `reason` on an open context, stopping early when `options.signal` aborts:
 * the streams that measure the records' clock first (`measuringFirst`: a lag they show widens the
 * others' overlap in the same pass), each group in the order given.
 * @returns one result per stream that ran
 * @throws MirrorDamagedError (naming the file and the remedy) when a run failed on a damaged page of
 *   the mirror: no further stream runs, since writing next to a damaged page spreads the damage
 */
export async function runStreams(context: Context, streams: readonly StreamName[], reason: RunReason, options: RunStreamsOptions = {}): Promise<RunResult[]> {
  const { waitWhileBusy, ...runOptions } = options;
  const pollMs = Math.min(1000, (context.config.sync.leaseSeconds * 1000) / 3);
  const results: RunResult[] = [];
  for (const stream of measuringFirst(streams, streamByName)) {
    if (options.signal?.aborted) break;
    const attempt = () => context.engine.run(stream, reason, runOptions);
    const result = waitWhileBusy
      ? await attemptUntilFree({
          leases: new Leases(context.store.executor, context.config.sync.leaseSeconds),
          stream,
          holder: context.engine.leaseHolder,
          attempt,
          busy: (ran) => ran.status === 'busy',
          pollMs,
          ...(options.signal ? { signal: options.signal } : {}),
          logger: context.logger,
        })
      : await attempt();
    const damaged = result.status === 'failed' ? damagedMirrorError(context.config.dbPath, result.error) : undefined;
    if (damaged) throw damaged;
    results.push(result);
    // Every list answered 404: the other streams would too (nothing is marked; the caller reports it).
    if (result.error instanceof WrongBaseUrlError) break;
  }
  return results;
}

/**
 * `bizops-sync backfill|sync [--all | --connection NAME]`: opens every connection of `deployment` on
 * one Redis connection and one budget per company (openDeployment), and runs each connection's
 * `streams(config)` concurrently (streams one after another within a connection).
 * @returns each connection's results, in the order of `deployment.connections`
 * @throws WrongBaseUrlError (a ConfigError: exit 2) when every stream's list of a connection answered
 *   404 (src/sync/base-url-check.ts), naming `connections.<name>.baseUrl` for a named connection
 */
export async function runConnectionsJob(
  deployment: DeploymentConfig,
  streams: (config: Config) => readonly StreamName[],
  reason: RunReason,
  options: Omit<RunStreamsOptions, 'onProgress'> & { logger?: Logger; onProgress?: (connection: string, progress: RunProgress) => void } = {},
): Promise<{ connection: string; results: RunResult[] }[]> {
  const { onProgress, logger, ...runOptions } = options;
  const opened = await openDeployment(deployment, { logger });
  let ran: { connection: string; results: RunResult[] }[];
  try {
    ran = await Promise.all(
      opened.contexts.map(async (context) => {
        const connection = context.config.connection;
        // A closed port or a host name that does not resolve: one line naming the address within seconds
        // (src/client/reachability.ts), not every stream retrying in turn.
        await assertApiReachable(context.config.baseUrl, {
          ...(deployment.named ? { key: `connections.${connection}.baseUrl` } : {}),
          ...(runOptions.signal ? { signal: runOptions.signal } : {}),
        });
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
  // A wrong base URL is a configuration error: one line naming it (exit 2), not a failed run per stream.
  for (const { connection, results } of ran) {
    const wrong = results.find((result) => result.error instanceof WrongBaseUrlError)?.error as WrongBaseUrlError | undefined;
    if (wrong) throw deployment.named ? wrong.naming(`connections.${connection}.baseUrl`) : wrong;
  }
  return ran;
}
