/**
 * The `bizops-sync` program (docs/operations.md "Commands"). Each command lives in cli/commands/ and
 * runs a job from jobs/; this file only assembles them. Errors become one line in report-error.ts.
 *
 * Loading: a command's module registers it (name, options, help) and imports little; its action
 * imports the job it runs when it runs (`await import`), so that a command loads only its own parts
 * (`status` no HTTP client, `sync` no write queue, only the daemon the metrics). `buildProgram`
 * registers only the command the first argument names, or all of them (`--help`, no command, a
 * misspelt one).
 */
import { Command } from 'commander';
import packageJson from '../package.json' with { type: 'json' };

export { UsageError } from './usage-error.ts';

/** Adds one module's commands to the program. */
type RegisterCommands = (program: Command) => void;

/** Every command, in the order `--help` lists them: the names a module registers, and how to load it. */
const COMMANDS: readonly { names: readonly string[]; load: () => Promise<RegisterCommands> }[] = [
  { names: ['backfill', 'sync'], load: async () => (await import('./commands/sync.ts')).registerSyncCommands },
  { names: ['verify'], load: async () => (await import('./commands/verify.ts')).registerVerifyCommand },
  { names: ['status'], load: async () => (await import('./commands/status.ts')).registerStatusCommand },
  { names: ['changes'], load: async () => (await import('./commands/changes.ts')).registerChangesCommand },
  { names: ['daemon'], load: async () => (await import('./commands/daemon.ts')).registerDaemonCommand },
  { names: ['config'], load: async () => (await import('./commands/config.ts')).registerConfigCommands },
  { names: ['webhooks'], load: async () => (await import('./commands/webhooks.ts')).registerWebhookCommands },
  { names: ['sinks'], load: async () => (await import('./commands/sinks.ts')).registerSinkCommands },
  { names: ['enqueue', 'worker', 'write'], load: async () => (await import('./commands/writes.ts')).registerWriteCommands },
  { names: ['simulate'], load: async () => (await import('./commands/simulate.ts')).registerSimulateCommand },
  { names: ['demo'], load: async () => (await import('./commands/demo.ts')).registerDemoCommand },
];

/**
 * Builds the program: the command `commandName` names (with the others of its module), or every
 * command when it names none (`--help`, `--version`, no argument, an unknown command, which commander
 * then reports with its suggestion). Options and help of a command are the same either way.
 * @param commandName the first argument (`process.argv[2]`)
 */
export async function buildProgram(commandName?: string): Promise<Command> {
  const program = new Command('bizops-sync')
    .description(
      "Keeps a local SQLite mirror of a company's records (its streams: the ledger, deals, onboardings, ...) in step with the " +
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
  BIZOPS_RATE_LIMIT_PER_MIN  the most requests this deployment sends per window (minute) of the API: a
                             ceiling, also when the server says more remain (the company's limit may be
                             shared with other integrations); a lower server limit wins (default 60, spec §8)
  BIZOPS_CONFIG              a JSON configuration file (default config/bizops-sync.json when present);
                             its "connections" object names several companies (--connection NAME)

Try it without an API: bizops-sync demo`,
    )
    .version(packageJson.version, '-V, --version', 'print the version of bizops-sync')
    // Commander's own errors (an unknown option or command, a missing argument) as every error of
    // bizops-sync: one line with its prefix; its suggestion ("Did you mean sync?") kept on the line.
    // Set before the commands are registered: each inherits it.
    .configureOutput({ outputError: (message, write) => write(`${commanderErrorLine(message)}\n`) })
    .exitOverride();
  const named = COMMANDS.filter((command) => commandName !== undefined && command.names.includes(commandName));
  for (const register of await Promise.all((named.length > 0 ? named : COMMANDS).map((command) => command.load()))) register(program);
  return program;
}

/**
 * One of commander's error messages (`error: unknown option '--bogus'`, possibly followed by
 * `(Did you mean sync?)` on a line of its own) as the one line bizops-sync prints:
 * `bizops-sync: unknown option '--bogus'; --help shows the usage`.
 */
export function commanderErrorLine(message: string): string {
  const text = message.replace(/^error: /, '').trim().replace(/\s*\n\s*/g, ' ');
  return `bizops-sync: ${text}; --help shows the usage`;
}
