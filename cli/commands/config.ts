/**
 * `bizops-sync config check`: loads the configuration the way the daemon does (defaults, the file
 * named by BIZOPS_CONFIG or config/bizops-sync.json, the environment), runs the checks the daemon
 * runs at start, and prints the effective configuration as JSON with every secret masked.
 * Exit 0 when valid; a bad value is one line naming the key and the rule, exit 2.
 */
import type { Command } from 'commander';
import { ConfigError, maskDeployment, type Config, type DeploymentConfig } from '../../src/config/index.ts';
// The event filter's own face: checking patterns loads neither the changelog reader nor the delivery engines.
import { compileEventFilter } from '../../src/notify/event-filter/index.ts';
import { deploymentFromEnvironment } from '../shared.ts';

export function registerConfigCommands(program: Command): void {
  const config = program.command('config').description('inspect the configuration');
  config
    .command('check')
    .description('validate the configuration and print it as JSON with secrets masked, every connection when the file names several (exit 2 and one line naming the key when a value is bad)')
    .action(() => {
      const deployment = deploymentFromEnvironment();
      checkDeployment(deployment);
      process.stdout.write(`${JSON.stringify(maskDeployment(deployment), null, 2)}\n`);
    });
}

/**
 * `checkBeyondSchema` for every connection of `deployment`; a problem of a named connection is
 * named `connections.<name>.webhooks...`.
 * @throws ConfigError naming the connection and key
 */
export function checkDeployment(deployment: DeploymentConfig): void {
  for (const config of deployment.connections) {
    try {
      checkBeyondSchema(config);
    } catch (error) {
      if (!deployment.named || !(error instanceof ConfigError)) throw error;
      throw new ConfigError(`connections.${config.connection}.${error.message}`);
    }
  }
}

/**
 * The daemon's start-up checks the schema does not express: unique webhook endpoint names and
 * valid event type patterns.
 * @throws ConfigError naming the key (e.g. `webhooks.crm.events[0]: ...`)
 */
export function checkBeyondSchema(config: Config): void {
  const names = new Set<string>();
  for (const endpoint of config.webhooks) {
    if (names.has(endpoint.name)) throw new ConfigError(`webhooks: endpoint name "${endpoint.name}" appears twice; names must be unique`);
    names.add(endpoint.name);
    try {
      compileEventFilter(endpoint.events, `webhooks.${endpoint.name}.events`);
    } catch (error) {
      throw new ConfigError((error as Error).message);
    }
  }
  for (const sink of config.sinks) {
    if (names.has(sink.name)) throw new ConfigError(`sinks: sink name "${sink.name}" appears twice, or is a webhook endpoint's; names are unique across webhooks and sinks`);
    names.add(sink.name);
    try {
      compileEventFilter(sink.events, `sinks.${sink.name}.events`);
    } catch (error) {
      throw new ConfigError((error as Error).message);
    }
  }
}
