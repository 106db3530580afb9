/**
 * Loading the configuration: the built-in defaults (schema.ts), then the JSON file named by
 * `BIZOPS_CONFIG` (default `config/bizops-sync.json` when it exists), then the environment; later
 * wins. Every value is validated with zod; a bad value is reported as one line naming the
 * environment variable, the key and the rule (`ConfigError`), never a stack trace.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError, ConnectionChoiceError } from './config-errors.ts';
import { maskUrlCredentials, maskUrlPassword, urlCredentials } from '../logging/mask-url.ts';
import { isOtherUrl, isPostgresUrl, parsePostgresLocation } from '../mirror/sql/postgres-location.ts';
import { configErrorMap } from './issue-wording.ts';
import { CONNECTION_NAME, configSchema, PER_CONNECTION_KEYS, PROCESS_WIDE_KEYS, type Config, type DeploymentConfig } from './schema.ts';
import { describeUnknownKey, findUnknownKey, nearestKey } from './unknown-keys.ts';

// The errors live apart (no zod) so that the CLI's error reporting can name them without loading the schema.
export { ConfigError, ConnectionChoiceError } from './config-errors.ts';

const DEFAULT_CONFIG_FILE = 'config/bizops-sync.json';

/** Where `loadConfig` / `loadDeployment` read from, and what they return. */
export interface LoadConfigOptions {
  /** The environment (default `process.env`): BIZOPS_CONFIG names the file, BIZOPS_* set keys. */
  env?: NodeJS.ProcessEnv;
  /** Overrides applied last, to every connection (CLI flags, tests). */
  overrides?: Record<string, unknown>;
  /** `loadConfig` only: the connection to return (`--connection NAME`). Default: the only one. */
  connection?: string;
}

/**
 * Builds the effective configuration of one connection from defaults, the file and the environment:
 * the one named by `options.connection`, else the only one.
 * @throws ConfigError naming the key and the rule (e.g. `BIZOPS_BASE_URL (baseUrl): must be a URL`,
 *   `connections.acme.baseUrl: must be a URL`)
 * @throws ConnectionChoiceError when several connections are configured and none is named, or the
 *   named one is not configured
 */
export function loadConfig(options: LoadConfigOptions = {}): Config {
  return chooseConnection(loadDeployment(options), options.connection);
}

/**
 * The connection named `name` of `deployment`, or its only one when `name` is undefined.
 * @throws ConnectionChoiceError listing the configured names
 */
export function chooseConnection(deployment: DeploymentConfig, name: string | undefined): Config {
  return chooseByConnectionName(deployment.connections, name);
}

/**
 * The item of `items` (connections, or their mirror paths: anything with a `connection` name) named
 * `name`, or the only one when `name` is undefined.
 * @throws ConnectionChoiceError listing the configured names when several are configured and none is
 *   named, or none has that name
 */
export function chooseByConnectionName<T extends { connection: string }>(items: readonly T[], name: string | undefined): T {
  const names = items.map((item) => item.connection);
  if (name === undefined) {
    if (items.length === 1) return items[0]!;
    throw new ConnectionChoiceError(`several connections are configured (${names.join(', ')}): choose one with --connection NAME`, names);
  }
  const found = items.find((item) => item.connection === name);
  if (!found) throw new ConnectionChoiceError(`--connection: no connection named "${name}"; configured: ${names.join(', ')}`, names);
  return found;
}

/**
 * Builds every connection of the deployment (docs/operations.md "Many companies").
 *
 * Without `connections` in the file, the file's top level and the environment are the one connection
 * `default` (as before connections existed). With `connections` (an object keyed by connection
 * name), each connection is the top level's per-connection keys (PER_CONNECTION_KEYS: defaults, the
 * environment's BIZOPS_* values over the file's) deep-merged with its own entry, which wins; the
 * process-wide keys (`redisUrl`, `http`) come from the top level only. `companyId` is required then,
 * and `dbPath` defaults to `./data/<connection>.db`.
 * @throws ConfigError naming the connection and key (`connections.acme.baseUrl: must be a URL`), two
 *   connections on one mirror file, or one company budget (`companyId@host`) given two rate limits
 */
export function loadDeployment(options: LoadConfigOptions = {}): DeploymentConfig {
  const env = options.env ?? process.env;
  const fileConfig = readConfigFile(env.BIZOPS_CONFIG);
  const fileName = env.BIZOPS_CONFIG ?? DEFAULT_CONFIG_FILE;
  const fromEnv = environmentOverrides(env);
  if ('connection' in fileConfig) throw new ConfigError('connection: not a configuration key; name connections with a "connections" object, e.g. {"connections": {"acme": {...}}}');
  if (fileConfig.connections === undefined) {
    checkTopLevelKeys(fileConfig, fileName);
    const merged = deepMerge(deepMerge(fileConfig, fromEnv.values), options.overrides ?? {});
    const config = parseConnection('default', merged, (key) => {
      const fromEnvironment = fromEnv.source.get(key);
      if (fromEnvironment) return `${fromEnvironment} (${key})`;
      // A value the file set is named there; a missing one with the variable that sets it.
      if (key !== '' && hasPath(fileConfig, key)) return `${key} (in ${fileName})`;
      const envName = ENV_FOR_KEY[key];
      return envName ? `${envName} (${key})` : key || 'configuration';
    }, env);
    return { connections: [config], named: false };
  }

  const entries = fileConfig.connections;
  if (!entries || typeof entries !== 'object' || Array.isArray(entries) || Object.keys(entries).length === 0) {
    throw new ConfigError('connections: must be an object with at least one connection, keyed by name, e.g. {"acme": {"baseUrl": "...", "companyId": "acme"}}');
  }
  const { connections: _connections, ...fileTop } = fileConfig;
  checkTopLevelKeys(fileTop, fileName);
  const top = deepMerge(fileTop, fromEnv.values);
  const defaults: Record<string, unknown> = {};
  for (const key of [...PER_CONNECTION_KEYS, ...PROCESS_WIDE_KEYS]) if (top[key] !== undefined) defaults[key] = top[key];
  const configs: Config[] = [];
  for (const [name, entry] of Object.entries(entries as Record<string, unknown>)) {
    if (!CONNECTION_NAME.test(name)) {
      throw new ConfigError(`connections: "${name}" is not a valid connection name (lowercase letters, digits, _ and - only, starting with a letter or digit)`);
    }
    if (!entry || typeof entry !== 'object' || Array.isArray(entry)) throw new ConfigError(`connections.${name}: must be an object of the connection's keys (baseUrl, tokens, companyId, ...)`);
    const own = entry as Record<string, unknown>;
    for (const key of PROCESS_WIDE_KEYS) {
      if (key in own) throw new ConfigError(`connections.${name}.${key}: is process-wide (one for the whole deployment); set it at the top level of the file`);
    }
    if ('connection' in own) throw new ConfigError(`connections.${name}.connection: not a key; the connection's name is its key under "connections"`);
    // A misspelt key (`baseURL`) would otherwise be dropped and the top-level value used in silence.
    const unknownKey = Object.keys(own).find((key) => !PER_CONNECTION_KEYS.includes(key));
    if (unknownKey !== undefined) {
      const nearest = nearestKey(unknownKey, PER_CONNECTION_KEYS);
      throw new ConfigError(
        describeUnknownKey({ path: `connections.${name}.${unknownKey}`, suggestion: nearest === undefined ? undefined : `connections.${name}.${nearest}`, known: PER_CONNECTION_KEYS }, fileName),
      );
    }
    const unknownDeeper = findUnknownKey(configSchema, own, `connections.${name}`);
    if (unknownDeeper) throw new ConfigError(describeUnknownKey(unknownDeeper, fileName));
    const merged = deepMerge(deepMerge(defaults, own), options.overrides ?? {});
    if (merged.companyId === undefined) {
      throw new ConfigError(`connections.${name}.companyId: is required with "connections" (the key of the company's rate budget, spec §8; connections on one company share it)`);
    }
    merged.dbPath ??= `./data/${name}.db`;
    configs.push(
      parseConnection(name, merged, (key) => {
        const label = `connections.${name}.${key}`;
        // A value inherited from the environment names the variable too.
        const envName = hasPath(own, key) ? undefined : fromEnv.source.get(key);
        return envName ? `${envName} (${label})` : label;
      }, env),
    );
  }
  // A value the connection's own entry does not set came from the top level: name its variable, if any.
  const ownEntry = (config: Config) => (entries as Record<string, Record<string, unknown>>)[config.connection];
  checkConnectionsApart(configs, (config, key) => (hasPath(ownEntry(config), key) ? '' : (fromEnv.source.get(key) ?? '')));
  return { connections: configs, named: true };
}

/**
 * Refuses a key of the file's top level (and below it: `sync.schedul`) that the schema does not
 * know, naming the nearest known one; `connections` is known here, its entries are checked apart.
 * A misspelt key would otherwise be dropped and its default used in silence.
 * @throws ConfigError `unknown key webhook in config.json; did you mean webhooks?`
 */
function checkTopLevelKeys(fileTop: Record<string, unknown>, fileName: string): void {
  const unknown = findUnknownKey(configSchema, fileTop, '', ['connection', 'connections']);
  if (!unknown) return;
  const known = [...unknown.known, ...(unknown.path.includes('.') ? [] : ['connections'])];
  const nearest = unknown.path.includes('.') ? undefined : nearestKey(unknown.path, known);
  throw new ConfigError(describeUnknownKey({ ...unknown, known, suggestion: unknown.suggestion ?? nearest }, fileName));
}

/**
 * Sets each sink's `url` from the environment variable its `urlEnv` names or the file its `urlFile`
 * names (docs/sinks.md "Configuration"), so that a broker's password need not be in the file.
 * @throws ConfigError naming the key: more than one of url, urlEnv, urlFile; the variable unset; the file unreadable
 */
function resolveSinkUrls(merged: Record<string, unknown>, env: NodeJS.ProcessEnv, labelFor: (key: string) => string): void {
  if (!Array.isArray(merged.sinks)) return;
  merged.sinks = merged.sinks.map((entry: unknown, index: number) => {
    if (!entry || typeof entry !== 'object' || Array.isArray(entry)) return entry;
    const sink = { ...(entry as Record<string, unknown>) };
    const given = ['url', 'urlEnv', 'urlFile'].filter((key) => sink[key] !== undefined);
    if (given.length > 1) throw new ConfigError(`${labelFor(`sinks.${index}.${given[1]}`)}: give one of url, urlEnv and urlFile, not ${given.join(' and ')}`);
    if (typeof sink.urlEnv === 'string') {
      const value = env[sink.urlEnv]?.trim();
      if (!value) throw new ConfigError(`${labelFor(`sinks.${index}.urlEnv`)}: the environment variable ${sink.urlEnv} is not set`);
      sink.url = value;
    } else if (typeof sink.urlFile === 'string') {
      try {
        sink.url = readFileSync(sink.urlFile, 'utf8').trim();
      } catch {
        throw new ConfigError(`${labelFor(`sinks.${index}.urlFile`)}: cannot read ${sink.urlFile}`);
      }
    }
    return sink;
  });
}

/** Validates one connection's merged values; `labelFor(key path)` names a key in the error. */
function parseConnection(name: string, merged: Record<string, unknown>, labelFor: (key: string) => string, env: NodeJS.ProcessEnv = process.env): Config {
  resolveSinkUrls(merged, env, labelFor);
  // jitless: zod compiles a parser for each object schema at its first parse (new Function), which pays
  // for a schema parsed many times; the configuration is parsed once per connection, and interpreting
  // it costs about a third less CPU than compiling it first (about 10 ms of every command's start-up).
  const parsed = configSchema.safeParse({ ...merged, connection: name }, { error: configErrorMap, jitless: true });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const key = issue.path.join('.');
    const given = issue.path.reduce<unknown>((node, part) => (node && typeof node === 'object' ? (node as Record<PropertyKey, unknown>)[part] : undefined), merged);
    const missing = issue.code === 'invalid_type' && given === undefined;
    throw new ConfigError(`${labelFor(key)}: ${missing ? 'is required' : issue.message}`);
  }
  const config = parsed.data;
  config.dbPath = config.dbPath.replaceAll('{connection}', name);
  checkMirrorLocation(config.dbPath, labelFor('dbPath'));
  return config;
}

/**
 * `config` with its mirror at `dbPath` instead (a command's `--db`): `{connection}` replaced by the
 * connection's name, the location checked as `dbPath` is at load.
 * @throws ConfigError naming `--db` when it is neither a file path nor a usable PostgreSQL URL
 */
export function withMirrorPath(config: Config, dbPath: string): Config {
  const path = dbPath.replaceAll('{connection}', config.connection);
  checkMirrorLocation(path, '--db');
  return { ...config, dbPath: path };
}

/**
 * Checks `dbPath` once `{connection}` is replaced: a PostgreSQL URL must be one the mirror can use
 * (a valid URL, a valid `schema`); any other `scheme://` is a mistake, not a file name.
 * @throws ConfigError naming `label`, with the URL's password masked
 */
function checkMirrorLocation(dbPath: string, label: string): void {
  if (isPostgresUrl(dbPath)) {
    try {
      parsePostgresLocation(dbPath);
    } catch (error) {
      throw new ConfigError(`${label}: ${(error as Error).message}`);
    }
  } else if (isOtherUrl(dbPath)) {
    throw new ConfigError(`${label}: ${maskUrlPassword(dbPath)} is neither a file path (SQLite) nor a postgres:// or postgresql:// URL (PostgreSQL)`);
  }
}

/**
 * The key of the mirror `dbPath` names, for finding two connections on one mirror: the absolute
 * file path, or host, port, database and schema of a PostgreSQL URL (whoever logs in).
 */
function mirrorKey(dbPath: string, connection: string): string {
  if (dbPath === ':memory:') return `:memory:${connection}`;
  if (!isPostgresUrl(dbPath)) return resolve(dbPath);
  try {
    const { connectionString, schema } = parsePostgresLocation(dbPath);
    const url = new URL(connectionString);
    return `postgres://${url.hostname}:${url.port || '5432'}${url.pathname}?schema=${schema}`;
  } catch {
    return dbPath;
  }
}

/**
 * Checks that connections do not collide: each has its own mirror file, and connections sharing a
 * company budget (`companyId@host`, or one token under `rateLimit.scope: token`) give it one limit.
 * `inheritedFrom(config, key)` names the environment variable a value came from, or ''.
 * @throws ConfigError naming both connections and the key
 */
function checkConnectionsApart(configs: readonly Config[], inheritedFrom: (config: Config, key: string) => string): void {
  checkOwnMirrorFiles(configs.map((config) => ({ connection: config.connection, dbPath: config.dbPath, source: inheritedFrom(config, 'dbPath') })));
  const byBudget = new Map<string, Config>();
  for (const config of configs) {
    const host = new URL(config.baseUrl).host;
    const keys = config.rateLimit.scope === 'company' ? [`company:${config.companyId}@${host}`] : Object.values(config.tokens).map((token) => `token:${token}@${host}`);
    for (const key of keys) {
      const sharing = byBudget.get(key);
      if (sharing && (sharing.rateLimit.perMinute !== config.rateLimit.perMinute || sharing.rateLimit.windowMs !== config.rateLimit.windowMs)) {
        const what = key.startsWith('company:') ? `company ${config.companyId} at ${host}` : `a token at ${host}`;
        throw new ConfigError(
          `connections.${config.connection}.rateLimit: ${what} is also connection ${sharing.connection}'s, with another limit ` +
            `(${config.rateLimit.perMinute} per ${config.rateLimit.windowMs} ms vs ${sharing.rateLimit.perMinute} per ${sharing.rateLimit.windowMs} ms); one company has one budget (spec §8): give both the same rateLimit`,
        );
      }
      byBudget.set(key, config);
    }
  }
}

/**
 * Checks that each connection has its own mirror file (`dbPath` resolved against the working
 * directory; `:memory:` is each connection's own) or PostgreSQL schema (`mirrorKey`). `source`
 * names the environment variable a path came from (`BIZOPS_DB`, `BIZOPS_DATABASE_URL`), or ''.
 * @throws ConfigError naming both connections, the file and its source
 */
function checkOwnMirrorFiles(paths: readonly { connection: string; dbPath: string; source: string }[]): void {
  const byFile = new Map<string, string>();
  for (const { connection, dbPath, source } of paths) {
    const file = mirrorKey(dbPath, connection);
    const other = byFile.get(file);
    if (other !== undefined) {
      throw new ConfigError(
        `connections.${other}.dbPath and connections.${connection}.dbPath: both are ${maskUrlPassword(dbPath)}${source ? ` (from ${source})` : ''}; ` +
          (isPostgresUrl(dbPath)
            ? 'each connection needs its own mirror: set dbPath per connection, or put {connection} in its schema (e.g. postgres://host/db?schema={connection})'
            : 'each connection needs its own mirror file: set dbPath per connection, or put {connection} in it (e.g. /data/{connection}.db)'),
      );
    }
    byFile.set(file, connection);
  }
}

/** True when `path` (dot-separated) is present in `object`. */
function hasPath(object: Record<string, unknown> | undefined, path: string): boolean {
  let node: unknown = object;
  for (const part of path.split('.')) {
    if (!node || typeof node !== 'object' || !(part in node)) return false;
    node = (node as Record<string, unknown>)[part];
  }
  return true;
}

/**
 * The mirror file of each connection, from the file and the environment, without validating the
 * other keys (`status` and `changes` read a mirror without needing the API's settings). Paths are
 * as given, `{connection}` replaced; `named` is false for the single connection `default`.
 * @throws ConfigError when the file named by BIZOPS_CONFIG is missing or not JSON (reading another
 *   connection's mirror, or `./data/mirror.db`, would show the wrong data), or when two connections
 *   share one mirror file (the message `config check` gives)
 */
export function mirrorPaths(options: Pick<LoadConfigOptions, 'env'> = {}): { named: boolean; paths: { connection: string; dbPath: string }[] } {
  const env = options.env ?? process.env;
  const fileConfig = readConfigFile(env.BIZOPS_CONFIG);
  const entries = fileConfig.connections;
  const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);
  const fromEnvironment = mirrorFromEnvironment(env);
  if (!entries || typeof entries !== 'object' || Array.isArray(entries) || Object.keys(entries).length === 0) {
    const dbPath = fromEnvironment?.value ?? text(fileConfig.dbPath) ?? './data/mirror.db';
    return { named: false, paths: [{ connection: 'default', dbPath: dbPath.replaceAll('{connection}', 'default') }] };
  }
  const paths = Object.entries(entries as Record<string, unknown>).map(([connection, entry]) => {
    const own = entry && typeof entry === 'object' ? text((entry as Record<string, unknown>).dbPath) : undefined;
    const fromEnv = own === undefined ? fromEnvironment : undefined;
    const dbPath = own ?? fromEnv?.value ?? text(fileConfig.dbPath) ?? `./data/${connection}.db`;
    return { connection, dbPath: dbPath.replaceAll('{connection}', connection), source: fromEnv?.name ?? '' };
  });
  checkOwnMirrorFiles(paths);
  return { named: true, paths: paths.map(({ connection, dbPath }) => ({ connection, dbPath })) };
}

/**
 * The daemon's configured HTTP address, for commands that ask a running daemon without loading the
 * whole configuration (`status`): `http.host` and `http.port` from `BIZOPS_HTTP_HOST` /
 * `BIZOPS_HTTP_PORT` or the config file, defaults `127.0.0.1` and 8080. Undefined when the port is 0
 * (any free port: only the daemon's log and its `daemons` row say which) or not a port number.
 */
export function daemonAddress(options: Pick<LoadConfigOptions, 'env'> = {}): { host: string; port: number } | undefined {
  const env = options.env ?? process.env;
  const http = readConfigFile(env.BIZOPS_CONFIG).http;
  const file = http && typeof http === 'object' && !Array.isArray(http) ? (http as Record<string, unknown>) : {};
  const host = env.BIZOPS_HTTP_HOST || (typeof file.host === 'string' && file.host !== '' ? file.host : '127.0.0.1');
  const port = env.BIZOPS_HTTP_PORT ? Number(env.BIZOPS_HTTP_PORT) : typeof file.port === 'number' ? file.port : 8080;
  return Number.isInteger(port) && port > 0 && port <= 65535 ? { host, port } : undefined;
}

/**
 * The mirror the environment names: `BIZOPS_DB` (a file path or a PostgreSQL URL) or
 * `BIZOPS_DATABASE_URL` (a PostgreSQL URL only), with the variable's name; undefined when neither
 * is set (empty counts as unset).
 * @throws ConfigError when both are set to different values, or BIZOPS_DATABASE_URL is not a
 *   PostgreSQL URL
 */
function mirrorFromEnvironment(env: NodeJS.ProcessEnv): { name: string; value: string } | undefined {
  const databaseUrl = env.BIZOPS_DATABASE_URL || undefined;
  const db = env.BIZOPS_DB || undefined;
  if (databaseUrl === undefined) return db === undefined ? undefined : { name: 'BIZOPS_DB', value: db };
  if (!isPostgresUrl(databaseUrl)) {
    throw new ConfigError(`BIZOPS_DATABASE_URL (dbPath): must be a postgres:// or postgresql:// URL (a SQLite file goes in BIZOPS_DB), got ${maskUrlPassword(databaseUrl)}`);
  }
  if (db !== undefined && db !== databaseUrl) {
    throw new ConfigError(`BIZOPS_DB and BIZOPS_DATABASE_URL (dbPath): both are set, to different mirrors (${maskUrlPassword(db)}, ${maskUrlPassword(databaseUrl)}); set one`);
  }
  return { name: 'BIZOPS_DATABASE_URL', value: databaseUrl };
}

/**
 * The setting that holds the token `tokenName` of `config`, for a message about it (a 401):
 * `BIZOPS_TOKEN`, `BIZOPS_TOKEN_FRONT_DESK`; with named connections the key too,
 * `BIZOPS_TOKEN (connections.acme.tokens.default)`.
 */
export function tokenSetting(config: Pick<Config, 'connection'>, tokenName: string): string {
  const variable = tokenName === 'default' ? 'BIZOPS_TOKEN' : `BIZOPS_TOKEN_${tokenName.toUpperCase()}`;
  return config.connection === 'default' ? variable : `${variable} (connections.${config.connection}.tokens.${tokenName})`;
}

/** Which environment variable sets which key, for error messages. */
const ENV_FOR_KEY: Record<string, string> = {
  baseUrl: 'BIZOPS_BASE_URL',
  tokens: 'BIZOPS_TOKEN',
  'tokens.default': 'BIZOPS_TOKEN',
  dbPath: 'BIZOPS_DB',
  redisUrl: 'REDIS_URL',
  companyId: 'BIZOPS_COMPANY_ID',
  'rateLimit.perMinute': 'BIZOPS_RATE_LIMIT_PER_MIN',
  'rateLimit.windowMs': 'BIZOPS_RATE_WINDOW_MS',
  'sync.overlapSeconds': 'BIZOPS_OVERLAP_SECONDS',
  'http.writeApiKey': 'BIZOPS_WRITE_API_KEY',
  'http.readApiKey': 'BIZOPS_READ_API_KEY',
  'sync.schedule': 'BIZOPS_SCHEDULE',
  'sync.unsupportedProbeSeconds': 'BIZOPS_UNSUPPORTED_PROBE_SECONDS',
  'sync.failingAfterRuns': 'BIZOPS_FAILING_AFTER_RUNS',
  'sync.staleAfterSchedules': 'BIZOPS_STALE_AFTER_SCHEDULES',
  'sync.staleMinimumSeconds': 'BIZOPS_STALE_MINIMUM_SECONDS',
  'sync.leaseSeconds': 'BIZOPS_LEASE_SECONDS',
  'sync.databaseWaitSeconds': 'BIZOPS_DATABASE_WAIT_SECONDS',
  'changes.retainDays': 'BIZOPS_CHANGES_RETAIN_DAYS',
  'sync.massDeletionShare': 'BIZOPS_MASS_DELETION_SHARE',
  'sync.maxPollFactor': 'BIZOPS_MAX_POLL_FACTOR',
  'sync.maxScanFactor': 'BIZOPS_MAX_SCAN_FACTOR',
  'api.requestDeadlineSeconds': 'BIZOPS_REQUEST_DEADLINE_SECONDS',
  'rateLimit.redisWaitSeconds': 'BIZOPS_REDIS_WAIT_SECONDS',
  'writes.sweepSeconds': 'BIZOPS_WRITES_SWEEP_SECONDS',
  'writes.claimSeconds': 'BIZOPS_WRITES_CLAIM_SECONDS',
  'writes.ledgerSettleSeconds': 'BIZOPS_LEDGER_SETTLE_SECONDS',
  'sync.reconcileSchedule': 'BIZOPS_RECONCILE_SCHEDULE',
  'http.host': 'BIZOPS_HTTP_HOST',
  'http.port': 'BIZOPS_HTTP_PORT',
  'http.readinessCacheSeconds': 'BIZOPS_READINESS_CACHE_SECONDS',
};

function readConfigFile(explicit: string | undefined): Record<string, unknown> {
  const path = explicit ?? DEFAULT_CONFIG_FILE;
  if (!existsSync(path)) {
    if (explicit) throw new ConfigError(`BIZOPS_CONFIG: file ${path} does not exist`);
    return {};
  }
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  } catch (error) {
    throw new ConfigError(`${path}: not valid JSON (${(error as Error).message})`);
  }
}

function environmentOverrides(env: NodeJS.ProcessEnv): { values: Record<string, unknown>; source: Map<string, string> } {
  const values: Record<string, unknown> = {};
  const source = new Map<string, string>();
  const set = (key: string, envName: string, value: unknown) => {
    const parts = key.split('.');
    let node = values;
    for (const part of parts.slice(0, -1)) node = (node[part] ??= {}) as Record<string, unknown>;
    node[parts.at(-1)!] = value;
    source.set(key, envName);
  };
  const number = (envName: string): number | string => {
    const raw = env[envName]!.trim();
    return /^-?\d+$/.test(raw) ? Number(raw) : raw;
  };
  if (env.BIZOPS_BASE_URL) set('baseUrl', 'BIZOPS_BASE_URL', env.BIZOPS_BASE_URL.replace(/\/+$/, ''));
  if (env.BIZOPS_TOKEN_FILE) {
    try {
      set('tokens.default', 'BIZOPS_TOKEN_FILE', readFileSync(env.BIZOPS_TOKEN_FILE, 'utf8').trim());
    } catch {
      throw new ConfigError(`BIZOPS_TOKEN_FILE: cannot read ${env.BIZOPS_TOKEN_FILE}`);
    }
  }
  if (env.BIZOPS_TOKEN) set('tokens.default', 'BIZOPS_TOKEN', env.BIZOPS_TOKEN.trim());
  // More named tokens, for writes acting as another employee: BIZOPS_TOKEN_<NAME> (the token) or
  // BIZOPS_TOKEN_FILE_<NAME> (a file holding it); the name is lowercased (BIZOPS_TOKEN_FRONT_DESK -> front_desk).
  for (const [envName, value] of Object.entries(env)) {
    if (value === undefined || envName === 'BIZOPS_TOKEN_FILE') continue;
    const fromFile = /^BIZOPS_TOKEN_FILE_([A-Z0-9_]+)$/.exec(envName);
    const direct = fromFile ? null : /^BIZOPS_TOKEN_([A-Z0-9_]+)$/.exec(envName);
    const name = (fromFile ?? direct)?.[1]?.toLowerCase();
    if (!name) continue;
    if (fromFile) {
      try {
        set(`tokens.${name}`, envName, readFileSync(value, 'utf8').trim());
      } catch {
        throw new ConfigError(`${envName}: cannot read ${value}`);
      }
    } else {
      set(`tokens.${name}`, envName, value.trim());
    }
  }
  const mirror = mirrorFromEnvironment(env);
  if (mirror) set('dbPath', mirror.name, mirror.value);
  if (env.REDIS_URL) set('redisUrl', 'REDIS_URL', env.REDIS_URL);
  if (env.BIZOPS_COMPANY_ID) set('companyId', 'BIZOPS_COMPANY_ID', env.BIZOPS_COMPANY_ID);
  if (env.BIZOPS_RATE_LIMIT_PER_MIN) set('rateLimit.perMinute', 'BIZOPS_RATE_LIMIT_PER_MIN', number('BIZOPS_RATE_LIMIT_PER_MIN'));
  if (env.BIZOPS_RATE_WINDOW_MS) set('rateLimit.windowMs', 'BIZOPS_RATE_WINDOW_MS', number('BIZOPS_RATE_WINDOW_MS'));
  if (env.BIZOPS_OVERLAP_SECONDS) set('sync.overlapSeconds', 'BIZOPS_OVERLAP_SECONDS', number('BIZOPS_OVERLAP_SECONDS'));
  if (env.BIZOPS_MAX_POLL_FACTOR) set('sync.maxPollFactor', 'BIZOPS_MAX_POLL_FACTOR', number('BIZOPS_MAX_POLL_FACTOR'));
  if (env.BIZOPS_MAX_SCAN_FACTOR) set('sync.maxScanFactor', 'BIZOPS_MAX_SCAN_FACTOR', number('BIZOPS_MAX_SCAN_FACTOR'));
  if (env.BIZOPS_UNSUPPORTED_PROBE_SECONDS) set('sync.unsupportedProbeSeconds', 'BIZOPS_UNSUPPORTED_PROBE_SECONDS', number('BIZOPS_UNSUPPORTED_PROBE_SECONDS'));
  if (env.BIZOPS_FAILING_AFTER_RUNS) set('sync.failingAfterRuns', 'BIZOPS_FAILING_AFTER_RUNS', number('BIZOPS_FAILING_AFTER_RUNS'));
  for (const [key, envName] of [['sync.staleAfterSchedules', 'BIZOPS_STALE_AFTER_SCHEDULES'], ['sync.staleMinimumSeconds', 'BIZOPS_STALE_MINIMUM_SECONDS']] as const) {
    const raw = env[envName]?.trim();
    if (raw) set(key, envName, /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : raw);
  }
  if (env.BIZOPS_LEASE_SECONDS) {
    const raw = env.BIZOPS_LEASE_SECONDS.trim();
    set('sync.leaseSeconds', 'BIZOPS_LEASE_SECONDS', /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : raw);
  }
  if (env.BIZOPS_CHANGES_RETAIN_DAYS) {
    const raw = env.BIZOPS_CHANGES_RETAIN_DAYS.trim();
    set('changes.retainDays', 'BIZOPS_CHANGES_RETAIN_DAYS', /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : raw);
  }
  if (env.BIZOPS_MASS_DELETION_SHARE) {
    const raw = env.BIZOPS_MASS_DELETION_SHARE.trim();
    set('sync.massDeletionShare', 'BIZOPS_MASS_DELETION_SHARE', /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : raw);
  }
  if (env.BIZOPS_DATABASE_WAIT_SECONDS) {
    const raw = env.BIZOPS_DATABASE_WAIT_SECONDS.trim();
    set('sync.databaseWaitSeconds', 'BIZOPS_DATABASE_WAIT_SECONDS', /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : raw);
  }
  if (env.BIZOPS_REQUEST_DEADLINE_SECONDS) {
    const raw = env.BIZOPS_REQUEST_DEADLINE_SECONDS.trim();
    set('api.requestDeadlineSeconds', 'BIZOPS_REQUEST_DEADLINE_SECONDS', /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : raw);
  }
  for (const [key, name] of [
    ['rateLimit.redisWaitSeconds', 'BIZOPS_REDIS_WAIT_SECONDS'],
    ['writes.sweepSeconds', 'BIZOPS_WRITES_SWEEP_SECONDS'],
    ['writes.claimSeconds', 'BIZOPS_WRITES_CLAIM_SECONDS'],
    ['writes.ledgerSettleSeconds', 'BIZOPS_LEDGER_SETTLE_SECONDS'],
  ] as const) {
    const raw = env[name]?.trim();
    if (raw) set(key, name, /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : raw);
  }
  if (env.BIZOPS_SCHEDULE) set('sync.schedule', 'BIZOPS_SCHEDULE', env.BIZOPS_SCHEDULE);
  if (env.BIZOPS_RECONCILE_SCHEDULE) set('sync.reconcileSchedule', 'BIZOPS_RECONCILE_SCHEDULE', env.BIZOPS_RECONCILE_SCHEDULE);
  if (env.BIZOPS_HTTP_PORT) set('http.port', 'BIZOPS_HTTP_PORT', number('BIZOPS_HTTP_PORT'));
  if (env.BIZOPS_HTTP_HOST) set('http.host', 'BIZOPS_HTTP_HOST', env.BIZOPS_HTTP_HOST);
  if (env.BIZOPS_READINESS_CACHE_SECONDS) set('http.readinessCacheSeconds', 'BIZOPS_READINESS_CACHE_SECONDS', number('BIZOPS_READINESS_CACHE_SECONDS'));
  if (env.BIZOPS_WRITE_API_KEY) set('http.writeApiKey', 'BIZOPS_WRITE_API_KEY', env.BIZOPS_WRITE_API_KEY);
  if (env.BIZOPS_READ_API_KEY) set('http.readApiKey', 'BIZOPS_READ_API_KEY', env.BIZOPS_READ_API_KEY);
  if (env.BIZOPS_WEBHOOK_URL || env.BIZOPS_WEBHOOK_SECRET) {
    const endpoint: Record<string, unknown> = { name: 'env', url: env.BIZOPS_WEBHOOK_URL, secret: env.BIZOPS_WEBHOOK_SECRET, events: ['*'] };
    if (env.BIZOPS_WEBHOOK_PREVIOUS_SECRET) endpoint.previousSecret = env.BIZOPS_WEBHOOK_PREVIOUS_SECRET;
    if (env.BIZOPS_WEBHOOK_PREVIOUS_SECRET_EXPIRES_AT) endpoint.previousSecretExpiresAt = env.BIZOPS_WEBHOOK_PREVIOUS_SECRET_EXPIRES_AT;
    values.webhooks = [endpoint];
    source.set('webhooks.0.url', 'BIZOPS_WEBHOOK_URL');
    source.set('webhooks.0.secret', 'BIZOPS_WEBHOOK_SECRET');
    source.set('webhooks.0.previousSecret', 'BIZOPS_WEBHOOK_PREVIOUS_SECRET');
    source.set('webhooks.0.previousSecretExpiresAt', 'BIZOPS_WEBHOOK_PREVIOUS_SECRET_EXPIRES_AT');
  }
  return { values, source };
}

function deepMerge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const prior = out[key];
    out[key] =
      value && typeof value === 'object' && !Array.isArray(value) && prior && typeof prior === 'object' && !Array.isArray(prior)
        ? deepMerge(prior as Record<string, unknown>, value as Record<string, unknown>)
        : value;
  }
  return out;
}

/**
 * The configuration with every secret replaced by `***` (for `config check` and logs): tokens, keys,
 * webhook secrets, passwords in URLs, and a webhook URL's user, password and query values
 * (`maskUrlCredentials`).
 */
export function maskConfig(config: Config): unknown {
  const mask = (s: string | undefined) => (s === undefined ? undefined : '***');
  return {
    ...config,
    baseUrl: maskUrlPassword(config.baseUrl),
    tokens: Object.fromEntries(Object.keys(config.tokens).map((name) => [name, '***'])),
    redisUrl: maskUrlPassword(config.redisUrl),
    dbPath: maskUrlPassword(config.dbPath),
    http: { ...config.http, writeApiKey: mask(config.http.writeApiKey), readApiKey: mask(config.http.readApiKey) },
    webhooks: config.webhooks.map((w) => ({ ...w, url: maskUrlCredentials(w.url), secret: 'whsec_***', ...(w.previousSecret === undefined ? {} : { previousSecret: 'whsec_***' }) })),
    sinks: config.sinks.map((sink) => ({ ...sink, ...(sink.url === undefined ? {} : { url: maskUrlCredentials(sink.url) }) })),
  };
}

/**
 * The deployment with every secret masked (`config check`): the one connection as `maskConfig`
 * shows it, or `{ connections: { <name>: ... } }` when the file names its connections.
 */
export function maskDeployment(deployment: DeploymentConfig): unknown {
  if (!deployment.named) return maskConfig(deployment.connections[0]!);
  return { connections: Object.fromEntries(deployment.connections.map((config) => [config.connection, maskConfig(config)])) };
}

/**
 * Every secret of every connection (tokens, webhook secrets, the read key, a PostgreSQL mirror URL holding a
 * password, a webhook URL's credentials: `urlCredentials`): what loggers and the CLI's error line mask. The URL whole, not its password alone: a
 * short password (`postgres`) masked wherever it appears would garble every line naming the server.
 */
export function deploymentSecrets(configs: readonly Config[]): string[] {
  return configs.flatMap((config) => [
    ...Object.values(config.tokens),
    ...(isPostgresUrl(config.dbPath) && parsePostgresLocation(config.dbPath).password !== '' ? [config.dbPath] : []),
    ...(config.http.readApiKey === undefined ? [] : [config.http.readApiKey]),
    ...config.webhooks.flatMap((endpoint) => [endpoint.secret, ...(endpoint.previousSecret === undefined ? [] : [endpoint.previousSecret]), ...urlCredentials(endpoint.url)]),
    ...config.sinks.flatMap((sink) => (sink.url === undefined ? [] : urlCredentials(sink.url))),
  ]);
}
