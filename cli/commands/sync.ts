/**
 * `bizops-sync backfill` (full refresh: a complete scan of each stream) and `bizops-sync sync`
 * (one incremental pass). The job and its parts are loaded when the command runs.
 */
import type { Command } from 'commander';
import { STREAM_NAMES, streamByName } from '../../src/streams/index.ts';
import type { CreatedRange, RunReason, RunResult } from '../../src/sync/index.ts';
import { withMirrorPath } from '../../src/config/index.ts';
import { UsageError } from '../usage-error.ts';
import { CONNECTION_OPTION_HELP, deploymentFromEnvironment, EXIT_BUSY, exitCodeForSignal, selectConnections, selectStreams, shutdownOnSignals } from '../shared.ts';

const COMMANDS: readonly { reason: RunReason; description: string }[] = [
  { reason: 'backfill', description: 'list every record of each stream into the mirror (a complete scan); resumes an interrupted backfill' },
  { reason: 'sync', description: "one incremental pass: fetch what changed since each stream's cursor and record the changes" },
];

export function registerSyncCommands(program: Command): void {
  for (const { reason, description } of COMMANDS) {
    const command = program
      .command(reason)
      .description(description)
      .option('--stream <name>', `only this stream: ${STREAM_NAMES.join(', ')}`)
      .option('--no-progress', 'log lines instead of progress bars, even on a terminal')
      .option('--connection <name>', CONNECTION_OPTION_HELP)
      .option('--all', 'every configured connection, concurrently (log lines instead of progress bars)')
      .option('--db <path>', "the mirror: a file, or a postgres:// URL (default: the connection's dbPath: BIZOPS_DB, the config file, or ./data/mirror.db)")
      .option('--wait', `a stream another process runs (its lease held: a daemon, another run) is waited for, then run: a daemon yields it within a third of sync.leaseSeconds once its run in progress ends (a request for the lease is recorded in the mirror meanwhile); without it the stream is skipped and the exit code is ${EXIT_BUSY}`)
      .option('--json', 'print the results as one JSON object (for cron jobs): the exit code, and one result per stream and per partition of a partitioned stream')
      .addHelpText('after', `\nExit codes: 0 every stream ran; 1 a run failed; 2 bad usage or configuration; ${EXIT_BUSY} a stream was skipped, busy in another process (run again later, or use --wait); 130 Ctrl-C (the checkpoint stands).`)
      .action(async (options: CommandOptions) => runCommand(reason, options));
    if (reason === 'backfill') {
      command.option(
        '--confirm-deletions',
        'let this complete scan tombstone records it no longer lists even when they are more than sync.massDeletionShare of a stream (held otherwise; status shows a hold)',
      );
      command
        .option('--created-after <time>', 'with --stream: only the records created after this time (ISO 8601, e.g. 2026-03-01): a range backfill, which counts misses and tombstones inside the range only')
        .option('--created-before <time>', 'with --stream: only the records created before this time (ISO 8601, e.g. 2026-04-01)');
    }
  }
}

interface CommandOptions {
  stream?: string;
  progress: boolean;
  connection?: string;
  all?: boolean;
  db?: string;
  wait?: boolean;
  json?: boolean;
  confirmDeletions?: boolean;
  createdAfter?: string;
  createdBefore?: string;
}

async function runCommand(reason: RunReason, options: CommandOptions): Promise<void> {
  const deployment = deploymentFromEnvironment();
  let configs = selectConnections(deployment, options);
  if (options.db !== undefined) {
    if (configs.length !== 1) throw new UsageError('--db: names one mirror; use it with one connection (--connection NAME), not --all');
    configs = [withMirrorPath(configs[0]!, options.db)];
  }
  const streams = new Map(configs.map((config) => [config.connection, selectStreams(config, options.stream)]));
  const createdRange = await rangeOption(options);
  // The arguments and the configuration are good: load what runs them (the composition root, the API client, SQLite, Redis).
  const [{ connectionLogger, deploymentLogger }, { runConnectionsJob }, { createProgressReporter }] = await Promise.all([
    import('../../jobs/context.ts'),
    import('../../jobs/run-streams.ts'),
    import('../progress.ts'),
  ]);
  const shutdown = shutdownOnSignals();
  const logger = deploymentLogger(deployment);
  // Bars for one connection on a terminal; several running at once log lines, each with its connection.
  const interactive = configs.length === 1 && options.progress && process.stderr.isTTY === true;
  const reporters = new Map(
    await Promise.all(configs.map(async (config) => [config.connection, await createProgressReporter(connectionLogger(logger, config, deployment.named), interactive)] as const)),
  );
  try {
    let results: { connection: string; results: RunResult[] }[];
    try {
      results = await runConnectionsJob({ ...deployment, connections: configs }, (config) => streams.get(config.connection)!, reason, {
        logger,
        signal: shutdown.signal,
        waitWhileBusy: options.wait === true,
        ...(options.confirmDeletions ? { confirmDeletions: true } : {}),
        ...(createdRange ? { createdRange } : {}),
        onProgress: (connection, progress) => reporters.get(connection)!.update(progress),
      });
    } finally {
      for (const reporter of reporters.values()) reporter.stop();
    }
    const flat = results.flatMap((entry) => entry.results);
    const signalExit = exitCodeForSignal(shutdown.received());
    if (signalExit !== undefined) process.exitCode = signalExit;
    else if (flat.some((r) => r.status === 'failed')) process.exitCode = 1;
    else if (flat.some((r) => r.status === 'busy')) process.exitCode = EXIT_BUSY;
    if (options.json) {
      const { errorLine } = await import('../../src/client/index.ts');
      const json = results.flatMap(({ connection, results: ran }) => ran.flatMap((result) => [resultJson(connection, result, errorLine), ...(result.partitions ?? []).map((part) => resultJson(connection, part, errorLine))]));
      process.stdout.write(`${JSON.stringify({ command: reason, exitCode: Number(process.exitCode ?? 0), results: json }, null, 2)}\n`);
      return;
    }
    const prefix = (connection: string) => (deployment.named ? `${connection}: ` : '');
    for (const { connection, results: ran } of results) {
      for (const result of ran) {
        process.stdout.write(`${prefix(connection)}${describeResult(result)}\n`);
        // A partitioned stream: a line per partition under its own (`  qa_corrective_actions loc_1: succeeded ...`).
        for (const part of result.partitions ?? []) process.stdout.write(`${prefix(connection)}  ${describeResult(part)}\n`);
      }
    }
  } finally {
    shutdown.dispose();
  }
}

/**
 * The range of `--created-after`/`--created-before`, checked for the one stream `--stream` names.
 * @throws UsageError (exit 2) without --stream, for a bound that is not a time, an empty range, or a
 *   stream whose list does not accept the filters (named)
 */
async function rangeOption(options: CommandOptions): Promise<CreatedRange | undefined> {
  if (options.createdAfter === undefined && options.createdBefore === undefined) return undefined;
  if (options.stream === undefined) throw new UsageError('--created-after/--created-before: a range backfill needs --stream NAME (one stream)');
  // Loaded here, not at registration: `--help` loads none of the sync's parts.
  const { checkCreatedRange, CreatedRangeError } = await import('../../src/sync/index.ts');
  try {
    return checkCreatedRange(streamByName(options.stream), { after: options.createdAfter, before: options.createdBefore });
  } catch (error) {
    if (error instanceof CreatedRangeError) throw new UsageError(error.message);
    throw error;
  }
}

/**
 * One result of `--json`: a stream's run (`partition` null; a partitioned stream's counts are its
 * partitions' sums), or one partition's (`partition` its value). Times ISO 8601; `error` in one line
 * (`HTTP 503: ...`), null when none.
 */
export interface RunResultJson {
  connection: string;
  stream: string;
  partition: string | null;
  status: RunResult['status'];
  reason: RunReason;
  mode: RunResult['mode'];
  resumed: boolean;
  pages: number;
  records: number;
  changes: number;
  tombstones: number;
  deletionsHeld: number;
  rejected: number;
  driftStepBacks: number;
  scan: RunResult['scan'] | null;
  createdRange: CreatedRange | null;
  heldBy: RunResult['heldBy'] | null;
  notFoundUrl: string | null;
  error: string | null;
}

function resultJson(connection: string, result: RunResult, errorLine: (error: unknown) => string): RunResultJson {
  return {
    connection,
    stream: result.stream,
    partition: result.partition ?? null,
    status: result.status,
    reason: result.reason,
    mode: result.mode,
    resumed: result.resumed,
    pages: result.pages,
    records: result.records,
    changes: result.changes,
    tombstones: result.tombstones,
    deletionsHeld: result.deletionsHeld ?? 0,
    rejected: result.rejected,
    driftStepBacks: result.driftStepBacks,
    scan: result.scan ?? null,
    createdRange: result.createdRange ?? null,
    heldBy: result.heldBy ?? null,
    notFoundUrl: result.notFoundUrl ?? null,
    error: result.error ? errorLine(result.error) : null,
  };
}

/** `1 page`, `3 pages`, `0 pages`. */
function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** One line per stream: `deals: succeeded (complete scan), 3 pages, 240 records, 12 changes`. */
function describeResult(result: RunResult): string {
  const what = result.mode === 'complete' ? 'complete scan' : 'incremental';
  const range = result.createdRange ? `, created ${result.createdRange.after ? `after ${result.createdRange.after}` : ''}${result.createdRange.after && result.createdRange.before ? ' and ' : ''}${result.createdRange.before ? `before ${result.createdRange.before}` : ''}` : '';
  const base = `${result.stream}${result.partition === undefined ? '' : ` ${result.partition}`}: ${result.status} (${result.reason}, ${what}${range}${result.resumed ? ', resumed' : ''}), ${count(result.pages, 'page')}, ${count(result.records, 'record')}, ${count(result.changes, 'change')}`;
  const extra = [
    result.tombstones ? count(result.tombstones, 'tombstone') : '',
    result.deletionsHeld
      ? `${count(result.deletionsHeld, 'tombstone')} HELD (more than sync.massDeletionShare of the stream; if they are really gone: backfill --stream ${result.stream} --confirm-deletions)`
      : '',
    result.driftStepBacks ? count(result.driftStepBacks, 'drift step-back') : '',
    result.scan?.outcome === 'incomplete'
      ? `INCOMPLETE scan (${result.scan.reason}): ${result.scan.distinctIds} distinct records of a total of ${result.scan.total}; nothing counted missing, cursor kept`
      : '',
    result.scan?.reReads ? count(result.scan.reReads, 'tie re-read') : '',
    result.rejected ? `${count(result.rejected, 'invalid record')} quarantined (status shows them)` : '',
    result.status === 'unsupported'
      ? `the server has no list endpoint for this stream (GET ${result.notFoundUrl ?? 'its list'} answered 404 while the other lists answered; asked again by the daemon at its start)`
      : '',
    result.status === 'interrupted' ? 'checkpoint saved; run again to resume' : '',
    result.status === 'no-partitions' ? 'nothing requested: no partition is configured or mirrored (status says where they come from)' : '',
    result.partitionSources && result.partitionSources.count > 0 ? `partitions: ${result.partitionSources.describe}` : '',
    result.heldBy ? `held by ${result.heldBy.holder ?? '?'} until ${result.heldBy.expiresAt ?? '?'} (a holder that died keeps it until then; --wait waits for it)` : '',
    result.error ? `error: ${result.error.message}` : '',
  ].filter(Boolean);
  return extra.length ? `${base}; ${extra.join('; ')}` : base;
}
