/**
 * The one line `bizops-sync` prints for an error, and the exit code (main.ts loads this when a
 * command fails, or when commander stops for --help, --version or bad usage).
 *
 * Exit codes: 0 success (also after a graceful SIGTERM, and after --help), 1 a run or command
 * failed, 2 bad usage or configuration, 75 a stream skipped as busy (`EXIT_BUSY`, cli/shared.ts;
 * set by backfill and sync, not here), 130 interrupted by Ctrl-C.
 *
 * It recognises errors by class, from the faces of their folders. The faces it imports load nothing
 * a command has not loaded already (the configuration, the masking); the API client's face (undici,
 * ioredis) is loaded only for an error none of those classes is, which a command that talked to the
 * API has loaded anyway.
 */
import { CommanderError } from 'commander';
import { MirrorDamagedError, MirrorMissingError, MirrorNeedsMigrationError } from '../jobs/mirror-errors.ts';
import { ConfigError, ConnectionChoiceError } from '../src/config/index.ts';
import { maskSecrets } from '../src/logging/index.ts';
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
 * Prints an error as one line on stderr and resolves to the exit code. Masked in it: bearer tokens,
 * webhook secrets, and every token of every connection of the loaded configuration (a token typed
 * where a name belongs, `--act-as <token>`, is echoed by the error naming it). `BIZOPS_DEBUG=1`
 * adds the stack trace of an unexpected error.
 */
export async function reportError(error: unknown): Promise<number> {
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
  const { BizopsApiError } = await import('../src/client/index.ts');
  if (error instanceof BizopsApiError) {
    // A 401 already reads "the API refused BIZOPS_TOKEN (...)".
    process.stderr.write(`bizops-sync: ${error.message.startsWith('the API refused') ? '' : 'the API refused: '}${mask(error.message)}\n`);
    return 1;
  }
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`bizops-sync: ${mask(message)}\n`);
  if (process.env.BIZOPS_DEBUG && error instanceof Error && error.stack) process.stderr.write(`${mask(error.stack)}\n`);
  return 1;
}
