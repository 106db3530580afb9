/**
 * The logging settings of the environment, checked: `BIZOPS_LOG_LEVEL` and `BIZOPS_LOG_FORMAT`
 * (docs/configuration.md "Not configuration keys"). Its own module, without pino, so that the CLI
 * checks them at start for every command at no loading cost.
 */
import { ConfigError } from '../config/config-errors.ts';

/** The levels `BIZOPS_LOG_LEVEL` accepts, most severe first (pino's, plus `silent`). */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
/** The formats `BIZOPS_LOG_FORMAT` accepts: JSON lines, or one readable line per event. */
export const LOG_FORMATS = ['json', 'pretty'] as const;

export type LogLevel = (typeof LOG_LEVELS)[number];
export type LogFormat = (typeof LOG_FORMATS)[number];

/**
 * `BIZOPS_LOG_LEVEL` and `BIZOPS_LOG_FORMAT` of `env`, each undefined when unset or empty.
 * @throws ConfigError naming the variable and the allowed values (`BIZOPS_LOG_LEVEL: "verbose" is
 *   not a log level; expected one of fatal, error, ...`)
 */
export function logSettingsFromEnvironment(env: NodeJS.ProcessEnv = process.env): { level?: LogLevel; format?: LogFormat } {
  const level = env.BIZOPS_LOG_LEVEL?.trim() || undefined;
  const format = env.BIZOPS_LOG_FORMAT?.trim() || undefined;
  if (level !== undefined && !(LOG_LEVELS as readonly string[]).includes(level)) {
    throw new ConfigError(`BIZOPS_LOG_LEVEL: ${JSON.stringify(level)} is not a log level; expected one of ${LOG_LEVELS.join(', ')}`);
  }
  if (format !== undefined && !(LOG_FORMATS as readonly string[]).includes(format)) {
    throw new ConfigError(`BIZOPS_LOG_FORMAT: ${JSON.stringify(format)} is not a log format; expected ${LOG_FORMATS.join(' or ')}`);
  }
  return { level: level as LogLevel | undefined, format: format as LogFormat | undefined };
}
