/**
 * `bizops-sync config check`: loads the configuration the way the daemon does (defaults, the file
 * named by BIZOPS_CONFIG or config/bizops-sync.json, the environment), runs the checks the daemon
 * runs at start, and prints the effective configuration as JSON with every secret masked.
 * Exit 0 when valid; a bad value is one line naming the key and the rule, exit 2.
 */
import type { Command } from 'commander';
import type { Config } from '../../src/config/schema.ts';
import { ConfigError, maskConfig } from '../../src/config/load.ts';
import { compileEventFilter } from '../../src/notify/index.ts';
import { configFromEnvironment } from '../shared.ts';

export function registerConfigCommands(program: Command): void {
  const config = program.command('config').description('inspect the configuration');
  config
    .command('check')
    .description('validate the configuration and print it as JSON with secrets masked (exit 2 and one line naming the key when a value is bad)')
    .action(() => {
      const effective = configFromEnvironment();
      checkBeyondSchema(effective);
      process.stdout.write(`${JSON.stringify(maskConfig(effective), null, 2)}\n`);
    });
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
}
