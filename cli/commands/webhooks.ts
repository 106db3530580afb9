/**
 * `bizops-sync webhooks list|send-test|replay`: webhook endpoint administration (jobs/webhooks.ts).
 * Each works on the mirror file while the daemon runs (the dispatcher re-reads its state every round).
 *
 *   webhooks list [--json] [--attempts N]           every endpoint: cursor, lag, held events, failures, its latest attempts
 *   webhooks attempts EVENT_ID [--json]             every kept attempt of one event, at every endpoint
 *   webhooks send-test [--endpoint NAME]            one signed `webhook.test` event to each (or one) endpoint
 *   webhooks replay --endpoint NAME --since SEQ     re-send every event after SEQ (same webhook-id);
 *                                                   also re-enables a disabled endpoint
 *   webhooks replay --failed [--endpoint NAME]      re-send the events endpoints gave up on
 *   webhooks enable NAME                            re-enable a disabled endpoint where its cursor stands
 *   webhooks retry NAME                             end a paused endpoint's pause: its next event goes out now
 *
 * The jobs (and the webhook sender with them) are loaded when a command runs.
 */
import type { Command } from 'commander';
import { MirrorMissingError } from '../../jobs/mirror-errors.ts';
import type { Config, WebhookEndpointConfig } from '../../src/config/index.ts';
import type { WebhookAttempt, WebhookEndpointListing } from '../../src/notify/webhooks/index.ts';
import { UsageError } from '../usage-error.ts';
import { CONNECTION_OPTION_HELP, configFromEnvironment } from '../shared.ts';
import { checkBeyondSchema } from './config.ts';

export function registerWebhookCommands(program: Command): void {
  const webhooks = program
    .command('webhooks')
    .description('webhook endpoints: list their delivery state, send a test event, replay events')
    .addHelpText('after', '\nEndpoints come from the configuration: BIZOPS_WEBHOOK_URL + BIZOPS_WEBHOOK_SECRET (endpoint "env"), or "webhooks" in the config file.');

  webhooks
    .command('list')
    .description('every endpoint with its cursor (last seq delivered), lag, held and failed events, last error, and its latest attempts')
    .option('--json', 'print JSON instead of a table')
    .option('--attempts <count>', 'latest attempts shown per endpoint (0 to 100)', '3')
    .option('--connection <name>', CONNECTION_OPTION_HELP)
    .action(async (options: { json?: boolean; attempts: string; connection?: string }) => {
      if (!/^\d+$/.test(options.attempts) || Number(options.attempts) > 100) throw new UsageError(`--attempts: must be a whole number from 0 to 100, got "${options.attempts}"`);
      const config = loadWebhookConfig(options.connection);
      const { listWebhooksJob, safeUrl } = await webhookJobs();
      const listing = await listWebhooksJob(config, Number(options.attempts));
      if (options.json) process.stdout.write(`${JSON.stringify(listing, null, 2)}\n`);
      else process.stdout.write(listing.length === 0 ? `${noEndpointsMessage(config)}\n` : formatListing(listing, safeUrl));
    });

  webhooks
    .command('attempts')
    .description('every kept delivery attempt of one event, at every endpoint: when, answer status, latency, error, the first 1 KiB of the answer')
    .argument('<event-id>', 'the event id (evt_...): the webhook-id header, or event_id in `bizops-sync changes`')
    .option('--json', 'print JSON instead of lines')
    .option('--connection <name>', CONNECTION_OPTION_HELP)
    .addHelpText('after', '\nAttempts are kept for 7 days.')
    .action(async (eventId: string, options: { json?: boolean; connection?: string }) => {
      const config = loadWebhookConfig(options.connection);
      const { eventAttemptsJob } = await webhookJobs();
      let attempts;
      try {
        attempts = await eventAttemptsJob(config, eventId);
      } catch (error) {
        if (error instanceof MirrorMissingError) throw error;
        throw new UsageError((error as Error).message);
      }
      if (options.json) {
        process.stdout.write(`${JSON.stringify(attempts, null, 2)}\n`);
        return;
      }
      if (attempts.length === 0) {
        process.stdout.write(`no attempts kept for ${eventId} (never sent, filtered out by every endpoint, or older than 7 days)\n`);
        return;
      }
      for (const attempt of attempts) process.stdout.write(`${formatAttempt(attempt)}\n`);
    });

  webhooks
    .command('send-test')
    .description('send one signed webhook.test event to every endpoint (or the one named), once, to check the URL and signature verification')
    .option('--endpoint <name>', 'only this endpoint')
    .option('--connection <name>', CONNECTION_OPTION_HELP)
    .action(async (options: { endpoint?: string; connection?: string }) => {
      const config = loadWebhookConfig(options.connection);
      const endpoints = options.endpoint === undefined ? config.webhooks : [findEndpoint(config, options.endpoint)];
      if (endpoints.length === 0) throw new UsageError(noEndpointsMessage(config));
      const { sendTestWebhooksJob, safeUrl } = await webhookJobs();
      let failed = 0;
      for (const { endpoint, result } of await sendTestWebhooksJob(endpoints)) {
        const outcome = result.ok
          ? `ok (HTTP ${result.status}) in ${Math.round(result.durationMs)} ms`
          : `FAILED (${result.status === null ? 'no answer' : `HTTP ${result.status}`}): ${result.error ?? 'unknown error'}`;
        process.stdout.write(`${endpoint.name}: ${outcome}; webhook-id ${result.webhookId} to ${safeUrl(endpoint.url)}\n`);
        if (!result.ok) failed += 1;
      }
      if (failed > 0) process.exitCode = 1;
    });

  webhooks
    .command('replay')
    .description('re-send events: every event after --since to one endpoint (its cursor moves back), or with --failed the events endpoints gave up on')
    .option('--endpoint <name>', 'the endpoint (see webhooks list); required with --since')
    .option('--since <seq>', 're-send events with seq greater than this (0: the whole changelog)')
    .option('--failed', 're-send, once each, the events given up on after the retry schedule (all endpoints, or --endpoint); a 2xx clears one')
    .option('--connection <name>', CONNECTION_OPTION_HELP)
    .addHelpText('after', '\nA running daemon picks a new cursor up within a second. Receivers that deduplicate on webhook-id will recognise re-sent events.')
    .action(async (options: { endpoint?: string; since?: string; failed?: boolean; connection?: string }) => {
      if (options.failed) {
        if (options.since !== undefined) throw new UsageError('--failed and --since: use one of them');
        const { replayFailedWebhooksJob } = await webhookJobs();
        let outcomes;
        try {
          outcomes = await replayFailedWebhooksJob(loadWebhookConfig(options.connection), options.endpoint);
        } catch (error) {
          if (error instanceof MirrorMissingError) throw error;
          throw new UsageError((error as Error).message.replace(/^endpoint:/, '--endpoint:'));
        }
        for (const outcome of outcomes) {
          const detail = outcome.result === 'delivered' ? `HTTP ${outcome.status}` : (outcome.error ?? '');
          process.stdout.write(`${outcome.endpoint}: seq ${outcome.seq} (${outcome.eventId}) ${outcome.result}${detail ? `: ${detail}` : ''}\n`);
        }
        const count = (result: string) => outcomes.filter((outcome) => outcome.result === result).length;
        process.stdout.write(`${count('delivered')} delivered, ${count('failed')} failed again, ${count('skipped')} skipped\n`);
        if (count('failed') > 0) process.exitCode = 1;
        return;
      }
      if (options.endpoint === undefined || options.since === undefined) throw new UsageError('replay needs --endpoint NAME --since SEQ, or --failed [--endpoint NAME]');
      if (!/^\d+$/.test(options.since)) throw new UsageError(`--since: must be a whole number (a changelog seq), got "${options.since}"`);
      const { replayWebhooksJob } = await webhookJobs();
      let result;
      try {
        result = await replayWebhooksJob(loadWebhookConfig(options.connection), options.endpoint, Number(options.since));
      } catch (error) {
        if (error instanceof MirrorMissingError) throw error;
        throw new UsageError((error as Error).message.replace(/^sinceSeq:/, '--since:'));
      }
      process.stdout.write(
        `${result.name}: cursor moved from ${result.previousDeliveredSeq} to ${result.deliveredSeq}; ${result.eventsToResend} events will be delivered again` +
          `${result.reenabled ? '; the endpoint is enabled again' : ''}\n`,
      );
    });

  webhooks
    .command('enable')
    .description('re-enable an endpoint disabled by a 410 Gone or by failing for disableAfterDays; delivery resumes where its cursor stands')
    .argument('<name>', 'the endpoint (see webhooks list)')
    .option('--connection <name>', CONNECTION_OPTION_HELP)
    .action(async (name: string, options: { connection?: string }) => {
      const config = loadWebhookConfig(options.connection);
      const { enableWebhookEndpointJob } = await webhookJobs();
      let result;
      try {
        result = await enableWebhookEndpointJob(config, name);
      } catch (error) {
        if (error instanceof MirrorMissingError) throw error;
        throw new UsageError((error as Error).message);
      }
      process.stdout.write(
        result.wasDisabled
          ? `${result.name}: enabled again (was disabled: ${result.disabledReason ?? 'unknown'}); delivery resumes after seq ${result.deliveredSeq}\n`
          : `${result.name}: was not disabled; its backoff is cleared\n`,
      );
    });

  webhooks
    .command('retry')
    .description('end a paused endpoint\'s pause (taken for down after failures in a row): its next event goes out now, its held events are due now')
    .argument('<name>', 'the endpoint (see webhooks list)')
    .option('--connection <name>', CONNECTION_OPTION_HELP)
    .addHelpText('after', '\nA paused endpoint is probed on its own every 5 to 30 s; this does it now. A disabled endpoint needs webhooks enable.')
    .action(async (name: string, options: { connection?: string }) => {
      const config = loadWebhookConfig(options.connection);
      const { retryWebhookEndpointJob } = await webhookJobs();
      await printRetryNow(() => retryWebhookEndpointJob(config, name));
    });
}

/**
 * `webhooks retry NAME` and `sinks retry NAME`: the target's pause ends now (one line of outcome).
 * @param retry the job
 */
export async function printRetryNow(retry: () => Promise<{ name: string; pausedUntil: string | null; consecutiveFailures: number }>): Promise<void> {
  let result;
  try {
    result = await retry();
  } catch (error) {
    if (error instanceof MirrorMissingError) throw error;
    throw new UsageError((error as Error).message);
  }
  process.stdout.write(
    result.pausedUntil === null
      ? `${result.name}: was not paused; its held events are due now\n`
      : `${result.name}: pause until ${result.pausedUntil} ended after ${result.consecutiveFailures} failed attempts in a row; its next event goes out now (a running daemon picks it up within a second)\n`,
  );
}

/** The webhook jobs, and the URL masking of the listings, loaded when a command runs. */
async function webhookJobs() {
  const [jobs, { safeUrl }] = await Promise.all([import('../../jobs/webhooks.ts'), import('../../src/notify/webhooks/index.ts')]);
  return { ...jobs, safeUrl };
}

function loadWebhookConfig(connection: string | undefined): Config {
  const config = configFromEnvironment({}, connection);
  checkBeyondSchema(config);
  return config;
}

/** Why there is nothing to list or send: where endpoints are configured, for this connection when the file names several. */
function noEndpointsMessage(config: Config): string {
  if (config.connection !== 'default') {
    return `connection ${config.connection} has no webhook endpoint: add "webhooks" to connections.${config.connection} in the config file (or at its top level, for every connection)`;
  }
  return 'no webhook endpoint is configured: set BIZOPS_WEBHOOK_URL and BIZOPS_WEBHOOK_SECRET, or "webhooks" in the config file';
}

function findEndpoint(config: Config, name: string): WebhookEndpointConfig {
  const endpoint = config.webhooks.find((candidate) => candidate.name === name);
  if (endpoint) return endpoint;
  if (config.webhooks.length === 0) throw new UsageError(noEndpointsMessage(config));
  throw new UsageError(`--endpoint: no endpoint named "${name}"; configured: ${config.webhooks.map((candidate) => candidate.name).join(', ')}`);
}

/**
 * One attempt on one line: `crm #2 2026-11-21T09:41:07.120Z seq 42 HTTP 422 in 87 ms: failed: HTTP 422; answer: {"error":"..."}`.
 */
function formatAttempt(attempt: WebhookAttempt): string {
  const status = attempt.status === null ? 'no answer' : `HTTP ${attempt.status}`;
  const seq = attempt.seq === null ? '' : ` seq ${attempt.seq}`;
  const error = attempt.error === null ? '' : `: ${attempt.error}`;
  const answer = attempt.response ? `; answer: ${JSON.stringify(attempt.response)}` : '';
  return `${attempt.endpoint} #${attempt.attempt} ${attempt.attemptedAt}${seq} ${status} in ${Math.round(attempt.latencyMs)} ms: ${attempt.outcome}${error}${answer}`;
}

/** A fixed-width table, one endpoint per line, then each endpoint's latest attempts. */
function formatListing(listing: readonly WebhookEndpointListing[], safeUrl: (url: string) => string): string {
  const header = ['NAME', 'URL', 'STATE', 'CURSOR', 'LAG', 'HELD', 'FAILING', 'GAVE UP', 'LAST STATUS', 'LAST ERROR'];
  const rows = listing.map((endpoint) => [
    endpoint.name,
    endpoint.url ? safeUrl(endpoint.url) : '-',
    !endpoint.configured ? 'not configured' : !endpoint.registered ? 'not started' : endpoint.enabled ? 'enabled' : `disabled (${endpoint.disabledKind ?? 'gone'})`,
    endpoint.deliveredSeq === null ? '-' : String(endpoint.deliveredSeq),
    `${endpoint.lagEvents} events / ${Math.round(endpoint.lagSeconds)} s`,
    endpoint.heldEvents > 0 ? `${endpoint.heldEvents} events` : '-',
    endpoint.consecutiveFailures > 0 ? `${endpoint.consecutiveFailures}x${endpoint.nextAttemptAt ? `, paused until ${endpoint.nextAttemptAt}` : ''}` : '-',
    endpoint.failedEvents > 0 ? `${endpoint.failedEvents} events` : '-',
    endpoint.lastStatus === null ? '-' : String(endpoint.lastStatus),
    endpoint.lastError ?? '-',
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) => `${cells.map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  ')}\n`;
  const attempts = listing
    .filter((endpoint) => endpoint.recentAttempts.length > 0)
    .map((endpoint) => `\nlatest attempts of ${endpoint.name}:\n${endpoint.recentAttempts.map((attempt) => `  ${formatAttempt(attempt)}\n`).join('')}`)
    .join('');
  return line(header) + rows.map(line).join('') + attempts;
}
