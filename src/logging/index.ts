/**
 * Logs and secrets: the process logger (pino, loaded when the first logger is made) with secrets
 * redacted, its settings from the environment (`BIZOPS_LOG_LEVEL`, `BIZOPS_LOG_FORMAT`), and the
 * masking of secrets in free text and URLs. The face of src/logging/ for jobs/
 * and cli/; importing it loads no logging library, so the CLI's error line and the mirror's
 * readers mask secrets at no start-up cost.
 */
export { createLogger, silentLogger, type Logger, type LoggerOptions } from './logger.ts';
export { maskSecrets } from './mask.ts';
export { maskUrlCredentials, maskUrlPassword, urlCredentials } from './mask-url.ts';
export { logSettingsFromEnvironment, LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from './settings.ts';
