/**
 * `bizops-sync sinks list|replay|enable|retry`: sink administration (jobs/sinks.ts; docs/sinks.md).
 * Each works on the mirror while the daemon runs (the dispatcher re-reads its state every round).
 *
 *   sinks list [--json] [--attempts N]        every sink: kind, cursor, lag, held events, failures, its latest attempts
 *   sinks replay --sink NAME --since SEQ      publish every event after SEQ again (same event id); re-enables a disabled sink
 *   sinks replay --failed [--sink NAME]       publish again the events sinks gave up on
 *   sinks enable NAME                         re-enable a disabled sink where its cursor stands
 *   sinks retry NAME                          end a paused sink's pause: its next event goes out now
 */
import type { Command } from 'commander';
import { MirrorMissingError } from '../../jobs/mirror-errors.ts';
import type { Config } from '../../src/config/index.ts';
import type { WebhookEndpointListing } from '../../src/notify/delivery/index.ts';
import { UsageError } from '../usage-error.ts';
import { CONNECTION_OPTION_HELP, configFromEnvironment } from '../shared.ts';
import { checkBeyondSchema } from './config.ts';
import { printRetryNow } from './webhooks.ts';

export function registerSinkCommands(program: Command): void {
  const sinks = program
    .command('sinks')
    .description('sinks (NATS JetStream, RabbitMQ, Redis Streams): list their delivery state, replay events, enable, retry')
    .addHelpText('after', '\nSinks come from "sinks" in the config file (docs/sinks.md).');

  sinks
    .command('list')
    .description('every sink with its kind, cursor (last seq published), lag, held and failed events, last error, and its latest attempts')
    .option('--json', 'print JSON instead of a table')
    .option('--attempts <count>', 'latest attempts shown per sink (0 to 100)', '3')
    .option('--connection <name>', CONNECTION_OPTION_HELP)
    .action(async (options: { json?: boolean; attempts: string; connection?: string }) => {
      if (!/^\d+$/.test(options.attempts) || Number(options.attempts) > 100) throw new UsageError(`--attempts: must be a whole number from 0 to 100, got "${options.attempts}"`);
      const config = loadSinkConfig(options.connection);
      const { listSinksJob } = await import('../../jobs/sinks.ts');
      const listing = await listSinksJob(config, Number(options.attempts));
      if (options.json) process.stdout.write(`${JSON.stringify(listing, null, 2)}\n`);
      else process.stdout.write(listing.length === 0 ? `${noSinksMessage(config)}\n` : formatListing(listing));
    });

  sinks
    .command('replay')
    .description('publish events again: every event after --since to one sink (its cursor moves back), or with --failed the events sinks gave up on')
    .option('--sink <name>', 'the sink (see sinks list); required with --since')
    .option('--since <seq>', 'publish events with seq greater than this again (0: the whole changelog)')
    .option('--failed', 'publish, once each, the events given up on after the retry schedule (all sinks, or --sink)')
    .option('--connection <name>', CONNECTION_OPTION_HELP)
    .addHelpText('after', '\nA running daemon picks a new cursor up within a second. Every message keeps its event id: consumers that deduplicate on it recognise it.')
    .action(async (options: { sink?: string; since?: string; failed?: boolean; connection?: string }) => {
      const config = loadSinkConfig(options.connection);
      const jobs = await import('../../jobs/sinks.ts');
      if (options.failed) {
        if (options.since !== undefined) throw new UsageError('--failed and --since: use one of them');
        let outcomes;
        try {
          outcomes = await jobs.replayFailedSinksJob(config, options.sink);
        } catch (error) {
          if (error instanceof MirrorMissingError) throw error;
          throw new UsageError((error as Error).message.replace(/^sink:/, '--sink:'));
        }
        for (const outcome of outcomes) process.stdout.write(`${outcome.endpoint}: seq ${outcome.seq} (${outcome.eventId}) ${outcome.result}${outcome.error ? `: ${outcome.error}` : ''}\n`);
        const count = (result: string) => outcomes.filter((outcome) => outcome.result === result).length;
        process.stdout.write(`${count('delivered')} published, ${count('failed')} failed again, ${count('skipped')} skipped\n`);
        if (count('failed') > 0) process.exitCode = 1;
        return;
      }
      if (options.sink === undefined || options.since === undefined) throw new UsageError('replay needs --sink NAME --since SEQ, or --failed [--sink NAME]');
      if (!/^\d+$/.test(options.since)) throw new UsageError(`--since: must be a whole number (a changelog seq), got "${options.since}"`);
      let result;
      try {
        result = await jobs.replaySinkJob(config, options.sink, Number(options.since));
      } catch (error) {
        if (error instanceof MirrorMissingError) throw error;
        throw new UsageError((error as Error).message.replace(/^sinceSeq:/, '--since:'));
      }
      process.stdout.write(`${result.name}: cursor moved from ${result.previousDeliveredSeq} to ${result.deliveredSeq}; ${result.eventsToResend} events will be published again${result.reenabled ? '; the sink is enabled again' : ''}\n`);
    });

  sinks
    .command('enable')
    .description('re-enable a sink disabled after failing for disableAfterDays; publishing resumes where its cursor stands')
    .argument('<name>', 'the sink (see sinks list)')
    .option('--connection <name>', CONNECTION_OPTION_HELP)
    .action(async (name: string, options: { connection?: string }) => {
      const config = loadSinkConfig(options.connection);
      const { enableSinkJob } = await import('../../jobs/sinks.ts');
      let result;
      try {
        result = await enableSinkJob(config, name);
      } catch (error) {
        if (error instanceof MirrorMissingError) throw error;
        throw new UsageError((error as Error).message);
      }
      process.stdout.write(
        result.wasDisabled
          ? `${result.name}: enabled again (was disabled: ${result.disabledReason ?? 'unknown'}); publishing resumes after seq ${result.deliveredSeq}\n`
          : `${result.name}: was not disabled; its backoff is cleared\n`,
      );
    });

  sinks
    .command('retry')
    .description("end a paused sink's pause (taken for down after failures in a row): its next event goes out now, its held events are due now")
    .argument('<name>', 'the sink (see sinks list)')
    .option('--connection <name>', CONNECTION_OPTION_HELP)
    .action(async (name: string, options: { connection?: string }) => {
      const config = loadSinkConfig(options.connection);
      const { retrySinkJob } = await import('../../jobs/sinks.ts');
      await printRetryNow(() => retrySinkJob(config, name));
    });
}

function loadSinkConfig(connection: string | undefined): Config {
  const config = configFromEnvironment({}, connection);
  checkBeyondSchema(config);
  return config;
}

function noSinksMessage(config: Config): string {
  return config.connection !== 'default'
    ? `connection ${config.connection} has no sink: add "sinks" to connections.${config.connection} in the config file (or at its top level, for every connection)`
    : 'no sink is configured: add "sinks" to the config file (docs/sinks.md)';
}

/** A fixed-width table, one sink per line (URLs without credentials), then each sink's latest attempts. */
function formatListing(listing: readonly WebhookEndpointListing[]): string {
  const header = ['NAME', 'KIND', 'URL', 'STATE', 'CURSOR', 'LAG', 'HELD', 'FAILING', 'GAVE UP', 'LAST ERROR'];
  const rows = listing.map((sink) => [
    sink.name,
    sink.kind,
    sink.url || '-',
    !sink.configured ? 'not configured' : !sink.registered ? 'not started' : sink.enabled ? 'enabled' : `disabled (${sink.disabledKind ?? 'failing'})`,
    sink.deliveredSeq === null ? '-' : String(sink.deliveredSeq),
    `${sink.lagEvents} events / ${Math.round(sink.lagSeconds)} s`,
    sink.heldEvents > 0 ? `${sink.heldEvents} events` : '-',
    sink.consecutiveFailures > 0 ? `${sink.consecutiveFailures}x${sink.pausedUntil ? `, paused until ${sink.pausedUntil}` : ''}` : '-',
    sink.failedEvents > 0 ? `${sink.failedEvents} events` : '-',
    sink.lastError ?? '-',
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) => `${cells.map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  ')}\n`;
  const attempts = listing
    .filter((sink) => sink.recentAttempts.length > 0)
    .map((sink) => `\nlatest attempts of ${sink.name}:\n${sink.recentAttempts.map((attempt) => `  ${sink.name} #${attempt.attempt} ${attempt.attemptedAt} seq ${attempt.seq ?? '-'} in ${Math.round(attempt.latencyMs)} ms: ${attempt.outcome}${attempt.error ? `: ${attempt.error}` : ''}\n`).join('')}`)
    .join('');
  return line(header) + rows.map(line).join('') + attempts;
}
