/**
 * Structured logs (pino) with secrets redacted. Every module takes its logger from here so that the
 * redaction list is in one place: bearer tokens, webhook secrets, write keys and the vault's
 * `sensitiveData` never reach a log line.
 *
 * Output: JSON lines on stderr by default (for containers and log shippers); `BIZOPS_LOG_FORMAT=pretty`
 * or an interactive terminal gives one readable line per event instead. Level from `BIZOPS_LOG_LEVEL`
 * (default `info`).
 */
import { createRequire } from 'node:module';
import type { Logger, DestinationStream } from 'pino';
import { maskSecrets } from './mask.ts';
import { logSettingsFromEnvironment } from './settings.ts';

type Pino = typeof import('pino');
let loadedPino: Pino['pino'] | undefined;

/**
 * pino, loaded when the first logger is made rather than when this module is: the logging face
 * (src/logging/index.ts) is imported by commands that never log (`status`, the CLI's error line),
 * and pino's modules cost them about 15 ms of start-up (docs/operations.md "Start-up").
 */
function loadPino(): Pino['pino'] {
  return (loadedPino ??= (createRequire(import.meta.url)('pino') as Pino).pino);
}

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
 * @returns a pino logger whose output never contains the configured secrets. pino itself is loaded
 *   when the first line at an enabled level is written (or a property beyond the level methods,
 *   `level`, `isLevelEnabled`, `child` and `flush` is read: `deferredLogger`), so that a command that
 *   logs nothing before its first request (a one-off `sync` at the default level) does not load pino
 *   before it.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const secrets = options.secrets ?? [];
  const fromEnvironment = logSettingsFromEnvironment();
  const level = options.level ?? fromEnvironment.level ?? 'info';
  const pretty = options.pretty ?? (fromEnvironment.format === 'pretty' || (fromEnvironment.format !== 'json' && process.stderr.isTTY === true));
  return deferredLogger(level, () => {
    const sink = options.destination ?? loadPino().destination({ fd: 2, sync: true });
    const destination: DestinationStream = {
      write(line: string) {
        const clean = maskSecrets(line, secrets);
        sink.write(pretty ? prettyLine(clean) : clean);
      },
    };
    return loadPino()(
      {
        level,
        base: undefined,
        redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
        formatters: { level: (label) => ({ level: label }) },
        // `err` by pino's convention; `error` too, where an Error would otherwise log as `{}`.
        serializers: { err: serializeError, error: serializeError },
        timestamp: loadPino().stdTimeFunctions.isoTime,
      },
      destination,
    );
  });
}

/** pino's level methods and their values (its default levels; `silent` is above all of them). */
const LEVEL_VALUES: Readonly<Record<string, number>> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity };

/**
 * A logger that stands for the pino logger `make` returns, made (and pino loaded) only when needed:
 * a level method at an enabled level (at a disabled one it returns at once, as pino's does), or any
 * property other than the level methods, `level` (read and set), `isLevelEnabled`, `child` and
 * `flush`. A child is deferred too, made from its parent's logger (`parent.child(bindings, options)`)
 * with the level it had when it was asked for, as pino's children keep theirs.
 * @param level the logger's level, a pino level name (`info`); `make` gives a logger at that level
 * @throws Error (from a level method, `child` or `level`) for a level name pino does not know, as pino would
 */
function deferredLogger(level: string, make: () => Logger): Logger {
  levelValue(level);
  let made: Logger | undefined;
  let current = level;
  const logger = (): Logger => {
    if (!made) {
      made = make();
      if (made.level !== current) made.level = current;
    }
    return made;
  };
  const enabled = (name: string): boolean => (LEVEL_VALUES[name] ?? -Infinity) >= levelValue(current);
  const methods: Record<string, unknown> = {
    isLevelEnabled: (name: string) => (made ? made.isLevelEnabled(name) : enabled(name)),
    child: (bindings: Record<string, unknown>, childOptions?: { level?: string }) =>
      made ? made.child(bindings, childOptions) : deferredLogger(childOptions?.level ?? current, () => logger().child(bindings, childOptions)),
    flush: (callback?: (error?: Error) => void) => (made ? made.flush(callback) : callback?.()),
  };
  for (const name of ['trace', 'debug', 'info', 'warn', 'error', 'fatal']) {
    methods[name] = (...args: unknown[]) => {
      if (!made && !enabled(name)) return;
      const target = logger();
      (target[name as 'info'] as (...values: unknown[]) => void).apply(target, args);
    };
  }
  return new Proxy({} as Logger, {
    get(_target, property) {
      if (property === 'level') return made ? made.level : current;
      if (typeof property === 'string' && Object.hasOwn(methods, property)) return methods[property];
      return bound(logger(), property);
    },
    set(_target, property, value) {
      if (property === 'level' && !made) {
        levelValue(String(value));
        current = String(value);
        return true;
      }
      return Reflect.set(logger(), property, value);
    },
  });
}

/** `logger[property]`, a function bound to `logger`. */
function bound(logger: Logger, property: PropertyKey): unknown {
  const value: unknown = Reflect.get(logger, property, logger);
  return typeof value === 'function' ? value.bind(logger) : value;
}

/**
 * The value of pino level `name`.
 * @throws Error `unknown level <name>` for a name pino does not know (pino's own words)
 */
function levelValue(name: string): number {
  const value = LEVEL_VALUES[name];
  if (value === undefined) throw new Error(`unknown level ${name}`);
  return value;
}

/** Fields of an error worth a log line besides its message and stack (short values only: never a body or headers). */
const ERROR_FIELDS = ['code', 'status', 'requestId', 'requestSent', 'url'] as const;

/**
 * The `err` of a log line: an Error as `{ type, message, stack }` plus its short fields (`code`,
 * `status`, `requestId`, `requestSent`, `url`) and its `cause` (three deep); anything else as it is
 * (pino's own serializer made `{ message }` into `"type":"Object","stack":""`). Secrets in the
 * message or stack are masked with the rest of the line.
 */
export function serializeError(value: unknown, depth = 0): unknown {
  if (!(value instanceof Error)) return value;
  const out: Record<string, unknown> = { type: value.name, message: value.message, stack: value.stack ?? `${value.name}: ${value.message}` };
  for (const field of ERROR_FIELDS) {
    const fieldValue = (value as unknown as Record<string, unknown>)[field];
    if (typeof fieldValue === 'string' || typeof fieldValue === 'number' || typeof fieldValue === 'boolean') out[field] = fieldValue;
  }
  if (value.cause !== undefined && depth < 3) out.cause = serializeError(value.cause, depth + 1);
  return out;
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

let silent: Logger | undefined;

/**
 * A logger that writes nothing, for library callers who pass none. A pino logger made on first use
 * (pino is loaded then, as for `createLogger`): every property read and write goes to it.
 */
export const silentLogger: Logger = new Proxy({} as Logger, {
  get(_target, property) {
    const logger = (silent ??= loadPino()({ level: 'silent' }));
    const value: unknown = Reflect.get(logger, property, logger);
    return typeof value === 'function' ? value.bind(logger) : value;
  },
  set(_target, property, value) {
    return Reflect.set((silent ??= loadPino()({ level: 'silent' })), property, value);
  },
});
