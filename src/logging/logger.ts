/**
 * Structured logs (pino) with secrets redacted. Every module takes its logger from here so that the
 * redaction list is in one place: bearer tokens, webhook secrets, write keys and the vault's
 * `sensitiveData` never reach a log line.
 *
 * Output: JSON lines on stderr by default (for containers and log shippers); `BIZOPS_LOG_FORMAT=pretty`
 * or an interactive terminal gives one readable line per event instead. Level from `BIZOPS_LOG_LEVEL`
 * (default `info`).
 */
import { pino, type Logger, type DestinationStream } from 'pino';
import { maskSecrets } from './mask.ts';
import { logSettingsFromEnvironment } from './settings.ts';

export type { Logger };

/** Paths pino replaces with `[redacted]` wherever they occur in a logged object. */
const REDACTED_PATHS = [
  'token',
  '*.token',
  'tokens',
  '*.tokens',
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'secret',
  '*.secret',
  'webhookSecret',
  '*.webhookSecret',
  'previousSecret',
  '*.previousSecret',
  '*.*.previousSecret',
  'writeApiKey',
  '*.writeApiKey',
  'readApiKey',
  '*.readApiKey',
  'sensitiveData',
  '*.sensitiveData',
  '*.*.sensitiveData',
];

export { maskSecrets } from './mask.ts';

export interface LoggerOptions {
  level?: string;
  /** Where lines go; defaults to stderr. Tests pass a stream to capture output. */
  destination?: DestinationStream;
  /** Extra literal secrets (the configured tokens) masked wherever they appear in a line. */
  secrets?: string[];
  pretty?: boolean;
}

/**
 * Creates the process logger.
 * @throws ConfigError when BIZOPS_LOG_LEVEL or BIZOPS_LOG_FORMAT holds a value it does not accept
 * @returns a pino logger whose output never contains the configured secrets.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const secrets = options.secrets ?? [];
  const fromEnvironment = logSettingsFromEnvironment();
  const level = options.level ?? fromEnvironment.level ?? 'info';
  const pretty = options.pretty ?? (fromEnvironment.format === 'pretty' || (fromEnvironment.format !== 'json' && process.stderr.isTTY === true));
  const sink = options.destination ?? pino.destination({ fd: 2, sync: true });
  const destination: DestinationStream = {
    write(line: string) {
      const clean = maskSecrets(line, secrets);
      sink.write(pretty ? prettyLine(clean) : clean);
    },
  };
  return pino(
    {
      level,
      base: undefined,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      formatters: { level: (label) => ({ level: label }) },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}

/** `09:41:07 INFO  sync finished stream=deals records=140 changes=3` from a pino JSON line. */
function prettyLine(line: string): string {
  try {
    const { time, level, msg, err, ...rest } = JSON.parse(line) as Record<string, unknown>;
    const clock = typeof time === 'string' ? time.slice(11, 19) : '';
    const fields = Object.entries(rest)
      .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
      .join(' ');
    const error = err && typeof err === 'object' && 'message' in err ? ` error="${String((err as { message: unknown }).message)}"` : '';
    return `${clock} ${String(level).toUpperCase().padEnd(5)} ${String(msg ?? '')}${fields ? ' ' + fields : ''}${error}\n`;
  } catch {
    return line;
  }
}

/** A logger that writes nothing, for library callers who pass none. */
export const silentLogger: Logger = pino({ level: 'silent' });
