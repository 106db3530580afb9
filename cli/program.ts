/**
 * The `bizops-sync` program (docs/operations.md "Commands"). Each command lives in cli/commands/
 * and runs a job from jobs/; this file only assembles them and turns errors into
 * one readable line (no stack trace for a bad configuration or an API refusal).
 *
 * Exit codes: 0 success (also after a graceful SIGTERM), 1 a run or command failed, 2 bad usage or
 * configuration, 130 interrupted by Ctrl-C.
 */
import { Command, CommanderError } from 'commander';
import packageJson from '../package.json' with { type: 'json' };
import { MirrorDamagedError, MirrorMissingError } from '../jobs/context.ts';
import { MirrorNeedsMigrationError } from '../jobs/status.ts';
import { ConfigError, ConnectionChoiceError } from '../src/config/load.ts';
import { BizopsApiError } from '../src/client/errors.ts';
import { maskSecrets } from '../src/logging/logger.ts';
import { configuredSecrets } from './shared.ts';
import { registerSyncCommands } from './commands/sync.ts';
import { registerStatusCommand } from './commands/status.ts';
import { registerChangesCommand } from './commands/changes.ts';
import { registerSimulateCommand } from './commands/simulate.ts';
import { registerDemoCommand } from './commands/demo.ts';
import { registerDaemonCommands } from './commands/daemon.ts';
import { registerWriteCommands } from './commands/writes.ts';
import { UsageError } from './usage-error.ts';

export { UsageError } from './usage-error.ts';

/** Builds the program with every command registered. */
export function buildProgram(): Command {
  const program = new Command('bizops-sync')
    .description(
      "Keeps a local SQLite mirror of a company's transactions, deals and onboardings in step with the " +
        'Business Operations Public API, records every change in a changelog (tail it, or receive signed ' +
        'webhooks), and pushes queued writes back at the pace the rate limit allows.',
    )
    .addHelpText(
      'after',
      `
Environment:
  BIZOPS_BASE_URL            the API's {base_url} (paths add /api/public/v1)
  BIZOPS_TOKEN               bearer token (or BIZOPS_TOKEN_FILE: a file holding it)
  BIZOPS_DB                  the mirror's SQLite file (default ./data/mirror.db)
  REDIS_URL                  Redis for the write queue and the shared rate budget (default redis://127.0.0.1:6379)
  BIZOPS_RATE_LIMIT_PER_MIN  requests per minute for the company (default 60, spec §8)
  BIZOPS_CONFIG              a JSON configuration file (default config/bizops-sync.json when present);
                             its "connections" object names several companies (--connection NAME)

Try it without an API: bizops-sync demo`,
    )
    .version(packageJson.version, '-V, --version', 'print the version of bizops-sync')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  registerSyncCommands(program);
  registerStatusCommand(program);
  registerChangesCommand(program);
  registerDaemonCommands(program);
  registerWriteCommands(program);
  registerSimulateCommand(program);
  registerDemoCommand(program);
  return program;
}

/**
 * Prints an error as one line and returns the exit code. Masked in it: bearer tokens, webhook
 * secrets, and every token of every connection of the loaded configuration (a token typed where a
 * name belongs, `--act-as <token>`, is echoed by the error naming it).
 */
export function reportError(error: unknown): number {
  const mask = (text: string) => maskSecrets(text, configuredSecrets());
  if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
  if (error instanceof UsageError || error instanceof ConnectionChoiceError) {
    process.stderr.write(`bizops-sync: ${mask(error.message)}\n`);
    return error instanceof UsageError ? error.exitCode : 2;
  }
  if (error instanceof ConfigError) {
    process.stderr.write(`bizops-sync: configuration error: ${mask(error.message)}\n`);
    return 2;
  }
  if (error instanceof MirrorMissingError || error instanceof MirrorDamagedError || error instanceof MirrorNeedsMigrationError) {
    process.stderr.write(`bizops-sync: ${mask(error.message)}\n`);
    return 1;
  }
  if (error instanceof BizopsApiError) {
    process.stderr.write(`bizops-sync: the API refused: ${mask(error.message)}\n`);
    return 1;
  }
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`bizops-sync: ${mask(message)}\n`);
  if (process.env.BIZOPS_DEBUG && error instanceof Error && error.stack) process.stderr.write(`${mask(error.stack)}\n`);
  return 1;
}
