/**
 * `bizops-sync webhooks list|send-test|replay`: webhook endpoint administration (jobs/webhooks.ts).
 * Each works on the mirror file while the daemon runs (the dispatcher re-reads its state every round).
 *
 *   webhooks list [--json]                          every endpoint: cursor, lag, failures, last error
 *   webhooks send-test [--endpoint NAME]            one signed `webhook.test` event to each (or one) endpoint
 *   webhooks replay --endpoint NAME --since SEQ     re-send every event after SEQ (same webhook-id);
 *                                                   also re-enables an endpoint disabled by 410 Gone
 */
import type { Command } from 'commander';
import { MirrorMissingError } from '../../jobs/context.ts';
import { listWebhooksJob, replayWebhooksJob, sendTestWebhooksJob } from '../../jobs/webhooks.ts';
import type { Config, WebhookEndpointConfig } from '../../src/config/schema.ts';
import { safeUrl, type WebhookEndpointListing } from '../../src/notify/index.ts';
import { UsageError } from '../program.ts';
import { configFromEnvironment } from '../shared.ts';
import { checkBeyondSchema } from './config.ts';

export function registerWebhookCommands(program: Command): void {
  const webhooks = program
    .command('webhooks')
    .description('webhook endpoints: list their delivery state, send a test event, replay events')
    .addHelpText('after', '\nEndpoints come from the configuration: BIZOPS_WEBHOOK_URL + BIZOPS_WEBHOOK_SECRET (endpoint "env"), or "webhooks" in the config file.');

  webhooks
    .command('list')
    .description('every endpoint with its cursor (last seq delivered), lag, failures and last error')
    .option('--json', 'print JSON instead of a table')
    .action((options: { json?: boolean }) => {
      const listing = listWebhooksJob(loadWebhookConfig());
      if (options.json) process.stdout.write(`${JSON.stringify(listing, null, 2)}\n`);
      else process.stdout.write(formatListing(listing));
    });

  webhooks
    .command('send-test')
    .description('send one signed webhook.test event to every endpoint (or the one named), once, to check the URL and signature verification')
    .option('--endpoint <name>', 'only this endpoint')
    .action(async (options: { endpoint?: string }) => {
      const config = loadWebhookConfig();
      const endpoints = options.endpoint === undefined ? config.webhooks : [findEndpoint(config, options.endpoint)];
      if (endpoints.length === 0) throw new UsageError(noEndpointsMessage());
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
    .description('move an endpoint\'s cursor back so that every event after --since is delivered again, with the same webhook-id')
    .requiredOption('--endpoint <name>', 'the endpoint (see webhooks list)')
    .requiredOption('--since <seq>', 're-send events with seq greater than this (0: the whole changelog)')
    .addHelpText('after', '\nA running daemon picks the new cursor up within a second. Receivers that deduplicate on webhook-id will recognise re-sent events.')
    .action((options: { endpoint: string; since: string }) => {
      if (!/^\d+$/.test(options.since)) throw new UsageError(`--since: must be a whole number (a changelog seq), got "${options.since}"`);
      let result;
      try {
        result = replayWebhooksJob(loadWebhookConfig(), options.endpoint, Number(options.since));
      } catch (error) {
        if (error instanceof MirrorMissingError) throw error;
        throw new UsageError((error as Error).message.replace(/^sinceSeq:/, '--since:'));
      }
      process.stdout.write(
        `${result.name}: cursor moved from ${result.previousDeliveredSeq} to ${result.deliveredSeq}; ${result.eventsToResend} events will be delivered again` +
          `${result.reenabled ? '; the endpoint is enabled again' : ''}\n`,
      );
    });
}

function loadWebhookConfig(): Config {
  const config = configFromEnvironment();
  checkBeyondSchema(config);
  return config;
}

function noEndpointsMessage(): string {
  return 'no webhook endpoint is configured: set BIZOPS_WEBHOOK_URL and BIZOPS_WEBHOOK_SECRET, or "webhooks" in the config file';
}

function findEndpoint(config: Config, name: string): WebhookEndpointConfig {
  const endpoint = config.webhooks.find((candidate) => candidate.name === name);
  if (endpoint) return endpoint;
  if (config.webhooks.length === 0) throw new UsageError(noEndpointsMessage());
  throw new UsageError(`--endpoint: no endpoint named "${name}"; configured: ${config.webhooks.map((candidate) => candidate.name).join(', ')}`);
}

/** A fixed-width table, one endpoint per line. */
function formatListing(listing: readonly WebhookEndpointListing[]): string {
  if (listing.length === 0) return `${noEndpointsMessage()}\n`;
  const header = ['NAME', 'URL', 'STATE', 'CURSOR', 'LAG', 'FAILING', 'LAST STATUS', 'LAST ERROR'];
  const rows = listing.map((endpoint) => [
    endpoint.name,
    endpoint.url ? safeUrl(endpoint.url) : '-',
    !endpoint.configured ? 'not configured' : !endpoint.registered ? 'not started' : endpoint.enabled ? 'enabled' : `disabled (${endpoint.disabledReason ?? '410'})`,
    endpoint.deliveredSeq === null ? '-' : String(endpoint.deliveredSeq),
    `${endpoint.lagEvents} events / ${Math.round(endpoint.lagSeconds)} s`,
    endpoint.consecutiveFailures > 0 ? `${endpoint.consecutiveFailures}x, next ${endpoint.nextAttemptAt ?? '-'}` : '-',
    endpoint.lastStatus === null ? '-' : String(endpoint.lastStatus),
    endpoint.lastError ?? '-',
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) => `${cells.map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  ')}\n`;
  return line(header) + rows.map(line).join('');
}
