/**
 * The one line `bizops-sync` prints for an error, and the exit code (main.ts loads this when a
 * command fails, or when commander stops for --help, --version or bad usage).
 *
 * Exit codes: 0 success (also after a graceful SIGTERM, and after --help), 1 a run or command
 * failed, 2 bad usage or configuration, 75 a stream skipped as busy (`EXIT_BUSY`, cli/shared.ts;
 * set by backfill and sync, not here), 130 interrupted by Ctrl-C.
 *
 * It recognises errors by class; every class it names lives in a small module of its own (no zod,
 * SQLite, pino), so that reporting costs nothing a command did not load already.
 */
import { CommanderError } from 'commander';
import { MirrorDamagedError, MirrorMissingError, MirrorNeedsMigrationError } from '../jobs/mirror-errors.ts';
import { BizopsApiError } from '../src/client/errors.ts';
import { ConfigError, ConnectionChoiceError } from '../src/config/errors.ts';
import { maskSecrets } from '../src/logging/mask.ts';
import { UsageError } from './usage-error.ts';

/** The secrets of the configuration this process loaded last (every connection's). */
let configuredSecrets: readonly string[] = [];

/**
 * Every token and webhook secret of every connection of the configuration just loaded (cli/shared.ts
 * calls this): what `reportError` masks in an error line, whichever connection the command worked on.
 */
export function maskInErrorLines(secrets: readonly string[]): void {
  configuredSecrets = secrets;
}

/**
 * Prints an error as one line on stderr and returns the exit code. Masked in it: bearer tokens,
 * webhook secrets, and every token of every connection of the loaded configuration (a token typed
 * where a name belongs, `--act-as <token>`, is echoed by the error naming it). `BIZOPS_DEBUG=1`
 * adds the stack trace of an unexpected error.
 */
export function reportError(error: unknown): number {
  const mask = (text: string) => maskSecrets(text, configuredSecrets);
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
