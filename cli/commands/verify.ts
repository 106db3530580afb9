/**
 * `bizops-sync verify [--stream NAME] [--json] [--repair]`: is the mirror equal to the API? One
 * complete scan of each stream at backfill priority, compared field by field (docs/sync.md
 * "Verify"). The job and its parts are loaded when the command runs.
 */
import type { Command } from 'commander';
import { STREAM_NAMES } from '../../src/streams/index.ts';
import type { StreamVerification } from '../../src/sync/index.ts';
import { withMirrorPath } from '../../src/config/index.ts';
import { UsageError } from '../usage-error.ts';
import { CONNECTION_OPTION_HELP, configFromEnvironment, EXIT_BUSY, exitCodeForSignal, selectStreams, shutdownOnSignals } from '../shared.ts';

/** Exit code of `verify` when a stream differs from the API (or could not be verified whole). */
export const EXIT_DRIFT = 1;

export function registerVerifyCommand(program: Command): void {
  program
    .command('verify')
    .description(
      'compare the mirror with the API: a complete scan of each stream (at backfill priority, after writes and polls) that writes nothing, reporting per stream the records missing from the mirror, the extra ones it holds live that the API no longer lists, and the stale ones (counted per field)',
    )
    .option('--stream <name>', `only this stream: ${STREAM_NAMES.join(', ')}`)
    .option('--json', 'print the report as JSON (one object: equal, and per stream its counts and the first ids)')
    .option('--repair', 'apply the differences as a backfill would, with their change events: missing and stale records written, extra ones tombstoned (needs the stream\'s lease)')
    .option('--wait', `with --repair: a stream a daemon (or another run) holds is waited for, then repaired: the daemon yields it within a third of sync.leaseSeconds once its run in progress ends; without it the stream is skipped and the exit code is ${EXIT_BUSY}`)
    .option('--confirm-deletions', 'with --repair: tombstone the extra records even when they are more than sync.massDeletionShare of a stream (held otherwise)')
    .option('--no-progress', 'log lines instead of progress bars, even on a terminal')
    .option('--connection <name>', CONNECTION_OPTION_HELP)
    .option('--db <path>', "the mirror: a file, or a postgres:// URL (default: the connection's dbPath: BIZOPS_DB, the config file, or ./data/mirror.db)")
    .addHelpText(
      'after',
      `\nExit codes: 0 every stream equals the API; 1 drift (a record missing, extra or stale, or a row of no partition read; also after --repair fixed it), or a stream that could not be verified (an incomplete scan, records a list shorter than the mirror did not list, a failed run, a list answering 404); 2 bad usage or configuration; ${EXIT_BUSY} --repair found a stream busy in another process (its lease held); 130 Ctrl-C.`,
    )
    .action(async (options: CommandOptions) => runVerify(options));
}

interface CommandOptions {
  stream?: string;
  json?: boolean;
  repair?: boolean;
  confirmDeletions?: boolean;
  wait?: boolean;
  progress: boolean;
  connection?: string;
  db?: string;
}

async function runVerify(options: CommandOptions): Promise<void> {
  let config = configFromEnvironment({}, options.connection);
  if (options.db !== undefined) config = withMirrorPath(config, options.db);
  const streams = selectStreams(config, options.stream);
  if (options.wait && !options.repair) throw new UsageError('--wait: only with --repair (verify alone takes no lease)');
  if (options.confirmDeletions && !options.repair) throw new UsageError('--confirm-deletions: only with --repair (verify alone writes nothing)');
  // The arguments and the configuration are good: load what runs them.
  const [{ verifyJob }, { createProgressReporter }, { processLogger }] = await Promise.all([import('../../jobs/verify.ts'), import('../progress.ts'), import('../../jobs/context.ts')]);
  const shutdown = shutdownOnSignals();
  const logger = processLogger(config);
  const reporter = await createProgressReporter(logger, options.progress && process.stderr.isTTY === true, 5000, 'differences');
  try {
    let results: StreamVerification[];
    try {
      results = await verifyJob(config, streams, { logger, repair: options.repair === true, confirmDeletions: options.confirmDeletions === true, waitWhileBusy: options.wait === true, signal: shutdown.signal, onProgress: (progress) => reporter.update(progress) });
    } finally {
      reporter.stop();
    }
    const equal = results.length === streams.length && results.every((result) => result.status === 'equal');
    if (options.json) process.stdout.write(`${JSON.stringify({ equal, repaired: options.repair === true, streams: results }, null, 2)}\n`);
    else for (const result of results) process.stdout.write(`${describeVerification(result)}\n`);
    const signalExit = exitCodeForSignal(shutdown.received());
    if (signalExit !== undefined) process.exitCode = signalExit === 0 ? EXIT_DRIFT : signalExit;
    else if (results.some((result) => result.status === 'busy')) process.exitCode = EXIT_BUSY;
    else if (!equal) process.exitCode = EXIT_DRIFT;
  } finally {
    shutdown.dispose();
  }
}

/** `3 records`, `1 record`. */
function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** `(a, b, c, ...)` of the first ids, or nothing. */
function sample(ids: readonly string[], total: number): string {
  if (ids.length === 0) return '';
  return ` (${ids.join(', ')}${total > ids.length ? ', ...' : ''})`;
}

/**
 * One line per stream: `transactions: DRIFT: 1 missing (txn_1); 0 extra; 2 stale: amount 2, status 1
 * (txn_2: amount, ...); 30 listed of 30, 1 page`.
 */
export function describeVerification(result: StreamVerification): string {
  const scanned = `${result.listed} listed of ${result.total}, ${count(result.pages, 'page')}${result.partitions === undefined ? '' : `, ${count(result.partitions, 'partition')}`}`;
  const held = result.repaired?.held ? `; ${count(result.repaired.held, 'extra record')} NOT tombstoned: more than sync.massDeletionShare of the stream (if they are really gone: verify --stream ${result.stream} --repair --confirm-deletions)` : '';
  const misses = result.repaired?.missesCounted ? `; ${result.repaired.missesCounted} ${result.repaired.missesCounted === 1 ? 'miss' : 'misses'} counted (the next complete scan that misses them too tombstones them)` : '';
  const repaired = result.repaired ? `; repaired: ${count(result.repaired.changes, 'change')} recorded (${count(result.repaired.tombstones, 'tombstone')})${held}${misses}` : '';
  if (result.status === 'equal') return `${result.stream}: equal (${scanned})${repaired}`;
  if (result.status === 'unsupported' || result.status === 'busy' || result.status === 'failed') return `${result.stream}: NOT VERIFIED (${result.status}): ${result.error ?? ''}`;
  const fields = Object.entries(result.stale.fields)
    .sort(([left], [right]) => left.localeCompare(right))
    .map(([field, n]) => `${field} ${n}`)
    .join(', ');
  const staleIds = result.stale.records.map((record) => `${record.id}: ${record.fields.join(' ')}`);
  const parts = [
    `${result.missing.count} missing${sample(result.missing.ids, result.missing.count)}`,
    result.extra === null ? 'extra not counted (incomplete scan)' : `${result.extra.count} extra${sample(result.extra.ids, result.extra.count)}`,
    `${result.stale.count} stale${fields ? `: ${fields}` : ''}${sample(staleIds, result.stale.count)}`,
    ...(result.unconfirmed?.count ? [`${result.unconfirmed.count} unconfirmed (not listed, not yet extra)${sample(result.unconfirmed.ids, result.unconfirmed.count)}`] : []),
    ...(result.outside?.count ? [`${result.outside.count} outside every partition read${sample(result.outside.ids, result.outside.count)}`] : []),
  ];
  const invalid = result.invalid > 0 ? `; ${count(result.invalid, 'invalid item')} not compared (quarantined)` : '';
  const head = result.status === 'incomplete' ? `INCOMPLETE: ${result.error ?? ''}; ` : 'DRIFT: ';
  return `${result.stream}: ${head}${parts.join('; ')}; ${scanned}${invalid}${repaired}`;
}
