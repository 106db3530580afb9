/**
 * Loading the configuration: the built-in defaults (schema.ts), then the JSON file named by
 * `BIZOPS_CONFIG` (default `config/bizops-sync.json` when it exists), then the environment; later
 * wins. Every value is validated with zod; a bad value is reported as one line naming the
 * environment variable, the key and the rule (`ConfigError`), never a stack trace.
 */
import { existsSync, readFileSync } from 'node:fs';
import { configSchema, type Config } from './schema.ts';

/** A configuration value that is missing or breaks a rule. The message names the key and the rule. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

const DEFAULT_CONFIG_FILE = 'config/bizops-sync.json';

export interface LoadConfigOptions {
  env?: NodeJS.ProcessEnv;
  /** Overrides applied last (CLI flags, tests). */
  overrides?: Record<string, unknown>;
}

/**
 * Builds the effective configuration from defaults, the file and the environment.
 * @throws ConfigError naming the key and the rule (e.g. `BIZOPS_BASE_URL: must be a URL`).
 */
export function loadConfig(options: LoadConfigOptions = {}): Config {
  const env = options.env ?? process.env;
  const fileConfig = readConfigFile(env.BIZOPS_CONFIG);
  const fromEnv = environmentOverrides(env);
  const merged = deepMerge(deepMerge(fileConfig, fromEnv.values), options.overrides ?? {});
  const parsed = configSchema.safeParse(merged);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const key = issue.path.join('.');
    const envName = fromEnv.source.get(key) ?? ENV_FOR_KEY[key];
    const label = envName ? `${envName} (${key})` : key || 'configuration';
    const given = issue.path.reduce<unknown>((node, part) => (node && typeof node === 'object' ? (node as Record<PropertyKey, unknown>)[part] : undefined), merged);
    const missing = issue.code === 'invalid_type' && given === undefined;
    throw new ConfigError(`${label}: ${missing ? 'is required' : issue.message}`);
  }
  return parsed.data;
}

/** Which environment variable sets which key, for error messages. */
const ENV_FOR_KEY: Record<string, string> = {
  baseUrl: 'BIZOPS_BASE_URL',
  tokens: 'BIZOPS_TOKEN',
  'tokens.default': 'BIZOPS_TOKEN',
  dbPath: 'BIZOPS_DB',
  redisUrl: 'REDIS_URL',
  'rateLimit.perMinute': 'BIZOPS_RATE_LIMIT_PER_MIN',
  'sync.schedule': 'BIZOPS_SCHEDULE',
  'sync.unsupportedProbeSeconds': 'BIZOPS_UNSUPPORTED_PROBE_SECONDS',
  'api.requestDeadlineSeconds': 'BIZOPS_REQUEST_DEADLINE_SECONDS',
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
  if (env.BIZOPS_DB) set('dbPath', 'BIZOPS_DB', env.BIZOPS_DB);
  if (env.REDIS_URL) set('redisUrl', 'REDIS_URL', env.REDIS_URL);
  if (env.BIZOPS_COMPANY_ID) set('companyId', 'BIZOPS_COMPANY_ID', env.BIZOPS_COMPANY_ID);
  if (env.BIZOPS_RATE_LIMIT_PER_MIN) set('rateLimit.perMinute', 'BIZOPS_RATE_LIMIT_PER_MIN', number('BIZOPS_RATE_LIMIT_PER_MIN'));
  if (env.BIZOPS_RATE_WINDOW_MS) set('rateLimit.windowMs', 'BIZOPS_RATE_WINDOW_MS', number('BIZOPS_RATE_WINDOW_MS'));
  if (env.BIZOPS_OVERLAP_SECONDS) set('sync.overlapSeconds', 'BIZOPS_OVERLAP_SECONDS', number('BIZOPS_OVERLAP_SECONDS'));
  if (env.BIZOPS_UNSUPPORTED_PROBE_SECONDS) set('sync.unsupportedProbeSeconds', 'BIZOPS_UNSUPPORTED_PROBE_SECONDS', number('BIZOPS_UNSUPPORTED_PROBE_SECONDS'));
  if (env.BIZOPS_REQUEST_DEADLINE_SECONDS) {
    const raw = env.BIZOPS_REQUEST_DEADLINE_SECONDS.trim();
    set('api.requestDeadlineSeconds', 'BIZOPS_REQUEST_DEADLINE_SECONDS', /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : raw);
  }
  if (env.BIZOPS_SCHEDULE) set('sync.schedule', 'BIZOPS_SCHEDULE', env.BIZOPS_SCHEDULE);
  if (env.BIZOPS_RECONCILE_SCHEDULE) set('sync.reconcileSchedule', 'BIZOPS_RECONCILE_SCHEDULE', env.BIZOPS_RECONCILE_SCHEDULE);
  if (env.BIZOPS_HTTP_PORT) set('http.port', 'BIZOPS_HTTP_PORT', number('BIZOPS_HTTP_PORT'));
  if (env.BIZOPS_HTTP_HOST) set('http.host', 'BIZOPS_HTTP_HOST', env.BIZOPS_HTTP_HOST);
  if (env.BIZOPS_READINESS_CACHE_SECONDS) set('http.readinessCacheSeconds', 'BIZOPS_READINESS_CACHE_SECONDS', number('BIZOPS_READINESS_CACHE_SECONDS'));
  if (env.BIZOPS_WRITE_API_KEY) set('http.writeApiKey', 'BIZOPS_WRITE_API_KEY', env.BIZOPS_WRITE_API_KEY);
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

/** The configuration with every secret replaced by `***` (for `config check` and logs). */
export function maskConfig(config: Config): unknown {
  const mask = (s: string | undefined) => (s === undefined ? undefined : '***');
  return {
    ...config,
    baseUrl: maskUrlPassword(config.baseUrl),
    tokens: Object.fromEntries(Object.keys(config.tokens).map((name) => [name, '***'])),
    redisUrl: maskUrlPassword(config.redisUrl),
    http: { ...config.http, writeApiKey: mask(config.http.writeApiKey) },
    webhooks: config.webhooks.map((w) => ({ ...w, secret: 'whsec_***', ...(w.previousSecret === undefined ? {} : { previousSecret: 'whsec_***' }) })),
  };
}

/**
 * `redis://user:secret@host:6379` -> `redis://user:***@host:6379` (also `https://user:secret@api...`
 * in BIZOPS_BASE_URL); URLs without a password unchanged. A text that is not a URL has anything
 * between `://` and the last `@` before the first `/` masked.
 */
export function maskUrlPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password === '') return url;
    parsed.password = '***';
    return parsed.toString().replace('%2A%2A%2A', '***');
  } catch {
    return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/@:]*):[^/]*@/i, '$1:***@');
  }
}
