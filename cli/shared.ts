/**
 * Helpers every command uses: loading the configuration (its secrets then masked in any error line),
 * choosing streams, parsing options, and turning SIGTERM / SIGINT into an AbortSignal for a graceful stop.
 */
import {
  chooseByConnectionName,
  chooseConnection,
  ConnectionChoiceError,
  deploymentSecrets,
  loadDeployment,
  mirrorPaths,
  type Config,
  type DeploymentConfig,
} from '../src/config/index.ts';
import { isStreamName, STREAM_NAMES, type StreamName } from '../src/streams/index.ts';
import { maskInErrorLines } from './report-error.ts';
import { UsageError } from './usage-error.ts';

/** The `--connection NAME` option's help text. */
export const CONNECTION_OPTION_HELP = 'the configured connection to work on (default: the only one; required when the config file has several)';

/**
 * Loads the configuration of one connection: `connection` (`--connection`), else the only one.
 * @throws UsageError (exit 2) listing the configured names when several are configured and none is
 *   named, or the named one is not configured; ConfigError for a bad value
 */
export function configFromEnvironment(overrides: Record<string, unknown> = {}, connection?: string): Config {
  return connectionFromEnvironment(connection, overrides).config;
}

/**
 * Loads the deployment and chooses one connection of it: `connection` (`--connection`), else the only
 * one. The deployment comes too, for what spans every connection (a logger masking all their secrets,
 * `deployment.named` for the `connection` field of log lines).
 * @throws UsageError (exit 2) listing the configured names; ConfigError for a bad value
 */
export function connectionFromEnvironment(connection: string | undefined, overrides: Record<string, unknown> = {}): { config: Config; deployment: DeploymentConfig } {
  const deployment = loadDeployment({ overrides });
  maskInErrorLines(deploymentSecrets(deployment.connections));
  try {
    return { config: chooseConnection(deployment, connection), deployment };
  } catch (error) {
    if (error instanceof ConnectionChoiceError) throw new UsageError(error.message);
    throw error;
  }
}

/** Loads every connection of the deployment. @throws ConfigError for a bad value */
export function deploymentFromEnvironment(): DeploymentConfig {
  const deployment = loadDeployment();
  maskInErrorLines(deploymentSecrets(deployment.connections));
  return deployment;
}

/**
 * The connections a command runs on: every one with `all` (`--all`), else the one `--connection`
 * names, else the only one.
 * @throws UsageError listing the names (exit 2)
 */
export function selectConnections(deployment: DeploymentConfig, options: { connection?: string; all?: boolean }): Config[] {
  if (options.all && options.connection !== undefined) throw new UsageError('--all and --connection: use one of them');
  if (options.all) return [...deployment.connections];
  try {
    return [chooseConnection(deployment, options.connection)];
  } catch (error) {
    if (error instanceof ConnectionChoiceError) throw new UsageError(options.connection === undefined ? `${error.message}, or --all` : error.message);
    throw error;
  }
}

/**
 * The mirror file for commands that only read it (`status`, `changes`): `--db`, else the
 * connection's `dbPath` (BIZOPS_DB, the file), without requiring the API settings those commands
 * do not use.
 * @throws ConnectionChoiceError (exit 2) listing the names when several connections are configured
 *   and none is named, or the named one is not configured; ConfigError for an unreadable
 *   configuration file or two connections on one mirror file
 */
export function mirrorPath(option: string | undefined, connection?: string): string {
  if (option) return option;
  return chooseByConnectionName(mirrorPaths().paths, connection).dbPath;
}

/** The streams a `--stream` option names (all configured streams when absent). */
export function selectStreams(config: Config, name: string | undefined): StreamName[] {
  if (name === undefined) return [...config.sync.streams];
  if (!isStreamName(name)) throw new UsageError(`--stream: unknown stream "${name}"; expected one of ${STREAM_NAMES.join(', ')}`);
  return [name];
}

export interface ShutdownSignal {
  signal: AbortSignal;
  /** Which signal arrived, if any. */
  received(): NodeJS.Signals | undefined;
  dispose(): void;
}

/**
 * An AbortSignal that aborts on the first SIGTERM or SIGINT, so a run can checkpoint and exit.
 * A second Ctrl-C exits at once.
 */
export function shutdownOnSignals(onSignal?: (signal: NodeJS.Signals) => void): ShutdownSignal {
  const controller = new AbortController();
  let received: NodeJS.Signals | undefined;
  const handler = (signal: NodeJS.Signals) => {
    if (received) {
      if (signal === 'SIGINT') process.exit(130);
      return;
    }
    received = signal;
    onSignal?.(signal);
    controller.abort(new Error(`received ${signal}`));
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
  return {
    signal: controller.signal,
    received: () => received,
    dispose() {
      process.off('SIGTERM', handler);
      process.off('SIGINT', handler);
    },
  };
}

/**
 * Exit code of `backfill` / `sync` when a stream was skipped because another process (a daemon, another
 * run) holds its lease and nothing failed: 75, EX_TEMPFAIL of sysexits.h ("try again later").
 * `--wait` waits for the lease instead.
 */
export const EXIT_BUSY = 75;

/** Exit code after a graceful stop: 0 for SIGTERM (a requested stop), 130 for Ctrl-C. */
export function exitCodeForSignal(signal: NodeJS.Signals | undefined): number | undefined {
  if (signal === 'SIGTERM') return 0;
  if (signal === 'SIGINT') return 130;
  return undefined;
}

/** Parses a non-negative integer option, naming it in the error. */
export function integerOption(name: string, min = 0): (value: string) => number {
  return (value: string) => {
    if (!/^\d+$/.test(value) || Number(value) < min) throw new UsageError(`${name}: must be a whole number >= ${min}, got "${value}"`);
    return Number(value);
  };
}

/** The simulator's package: a development dependency, which the production image leaves out. */
const SIMULATOR_PACKAGE = '@bizops-sync/simulator';

/**
 * Throws a UsageError (exit 2, one line) when `@bizops-sync/simulator` cannot be resolved, as in the
 * production image (`npm prune --omit=dev --workspaces=false`). `simulate` and `demo` call this before
 * their dynamic import of the simulator, so that a missing package reads as such while an error
 * inside an installed simulator still surfaces as itself.
 * @param command the command that needs the simulator, named in the message
 */
export function requireSimulatorInstalled(command: string): void {
  try {
    import.meta.resolve(SIMULATOR_PACKAGE);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw error;
    throw new UsageError(`the simulator is not installed in this image (it is a development package); run \`${command}\` from a checkout`);
  }
}
