import { readFileSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, maskConfig } from '../../src/config/load.ts';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/logging/logger.ts';
import { STREAM_NAMES } from '../../src/streams/definitions.ts';
import { runCli, tempDir, type TempDir } from '../helpers.ts';

let dir: TempDir | undefined;
afterEach(() => {
  dir?.remove();
  dir = undefined;
});

const base = { BIZOPS_BASE_URL: 'http://127.0.0.1:4010/', BIZOPS_TOKEN: 'default-token-value' };

describe('configuration', () => {
  it('reads named tokens from BIZOPS_TOKEN_<NAME> and BIZOPS_TOKEN_FILE_<NAME>', () => {
    dir = tempDir();
    writeFileSync(dir.file('hr'), 'hr-token-from-file\n');
    const config = loadConfig({ env: { ...base, BIZOPS_TOKEN_FRONT_DESK: 'desk-token', BIZOPS_TOKEN_FILE_HR: dir.file('hr') } }).tokens;
    expect(config).toEqual({ default: 'default-token-value', front_desk: 'desk-token', hr: 'hr-token-from-file' });
  });

  it('the environment overrides the file, and the file the defaults; the base URL loses its trailing slash', () => {
    dir = tempDir();
    writeFileSync(dir.file('c.json'), JSON.stringify({ dbPath: '/file/mirror.db', rateLimit: { perMinute: 30 }, sync: { overlapSeconds: 10 } }));
    const config = loadConfig({ env: { ...base, BIZOPS_CONFIG: dir.file('c.json'), BIZOPS_RATE_LIMIT_PER_MIN: '90' } });
    expect(config.baseUrl).toBe('http://127.0.0.1:4010');
    expect(config.dbPath).toBe('/file/mirror.db');
    expect(config.rateLimit).toEqual({ perMinute: 90, windowMs: 60_000, scope: 'company', redisWaitSeconds: 60 });
    expect(config.sync.overlapSeconds).toBe(10);
  });

  it('names the variable, the key and the rule when a value is missing or bad', () => {
    const attempt = (env: Record<string, string>) => () => loadConfig({ env: { BIZOPS_CONFIG: '/nonexistent/bizops.json', ...env } });
    expect(attempt({})).toThrow(ConfigError);
    expect(attempt({ BIZOPS_TOKEN: 'x' })).toThrow('BIZOPS_CONFIG: file /nonexistent/bizops.json does not exist');
    const env = (extra: Record<string, string>) => loadConfig({ env: { ...base, ...extra } });
    expect(() => loadConfig({ env: { BIZOPS_TOKEN: 'x' } })).toThrow('BIZOPS_BASE_URL (baseUrl): is required');
    expect(() => env({ BIZOPS_RATE_LIMIT_PER_MIN: '0' })).toThrow(/^BIZOPS_RATE_LIMIT_PER_MIN \(rateLimit\.perMinute\): /);
    expect(() => env({ REDIS_URL: 'localhost:6379' })).toThrow('REDIS_URL (redisUrl): must start with redis:// or rediss://');
    expect(() => env({ BIZOPS_WEBHOOK_URL: 'http://127.0.0.1:9/hook', BIZOPS_WEBHOOK_SECRET: 'not-a-secret' })).toThrow(/BIZOPS_WEBHOOK_SECRET .*whsec_/);
  });

  it('streams default to every registered stream, and an unknown one is named with the registered ones', () => {
    expect(loadConfig({ env: base }).sync.streams).toEqual(STREAM_NAMES);
    dir = tempDir();
    writeFileSync(dir.file('c.json'), JSON.stringify({ sync: { streams: ['deals', 'invoices'] } }));
    expect(() => loadConfig({ env: { ...base, BIZOPS_CONFIG: dir!.file('c.json') } })).toThrow(
      `sync.streams.1 (in ${dir.file('c.json')}): "invoices" is not a stream; expected one of ${STREAM_NAMES.join(', ')}`,
    );
  });

  it('masks every secret for display', () => {
    const config = loadConfig({
      env: { ...base, BIZOPS_TOKEN_HR: 'hr-secret-token', BIZOPS_WRITE_API_KEY: 'write-key-0123456789', REDIS_URL: 'redis://:hunter2@127.0.0.1:6379', BIZOPS_WEBHOOK_URL: 'http://127.0.0.1:9/h', BIZOPS_WEBHOOK_SECRET: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
    });
    const shown = JSON.stringify(maskConfig(config));
    for (const secret of ['default-token-value', 'hr-secret-token', 'write-key-0123456789', 'hunter2', 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw']) expect(shown).not.toContain(secret);
    expect(shown).toContain('"hr":"***"');
  });

  it('webhook secrets must decode to 24 to 64 bytes; the error names the key and never the secret', () => {
    const hook = { BIZOPS_WEBHOOK_URL: 'http://127.0.0.1:9/h' };
    const attempt = (secret: string) => () => loadConfig({ env: { ...base, ...hook, BIZOPS_WEBHOOK_SECRET: secret } });
    expect(attempt('whsec_QQ==')).toThrow('BIZOPS_WEBHOOK_SECRET (webhooks.0.secret): must decode to 24 to 64 bytes, got 1');
    expect(attempt(`whsec_${Buffer.alloc(23, 7).toString('base64')}`)).toThrow(/got 23/);
    expect(attempt(`whsec_${Buffer.alloc(65, 7).toString('base64')}`)).toThrow(/got 65/);
    expect(loadConfig({ env: { ...base, ...hook, BIZOPS_WEBHOOK_SECRET: `whsec_${Buffer.alloc(24, 7).toString('base64')}` } }).webhooks).toHaveLength(1);
    expect(loadConfig({ env: { ...base, ...hook, BIZOPS_WEBHOOK_SECRET: `whsec_${Buffer.alloc(64, 7).toString('base64')}` } }).webhooks).toHaveLength(1);
    try {
      attempt('whsec_QQ==')();
      expect.unreachable();
    } catch (error) {
      expect((error as Error).message).not.toContain('QQ==');
    }
    const previous = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
    const withPrevious = { ...base, ...hook, BIZOPS_WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 2).toString('base64')}`, BIZOPS_WEBHOOK_PREVIOUS_SECRET: 'whsec_QQ==' };
    expect(() => loadConfig({ env: withPrevious })).toThrow('BIZOPS_WEBHOOK_PREVIOUS_SECRET (webhooks.0.previousSecret): must decode to 24 to 64 bytes, got 1');
    expect(() => loadConfig({ env: { ...withPrevious, BIZOPS_WEBHOOK_PREVIOUS_SECRET: previous } })).toThrow(
      'BIZOPS_WEBHOOK_PREVIOUS_SECRET_EXPIRES_AT (webhooks.0.previousSecretExpiresAt): is required with previousSecret',
    );
    expect(() => loadConfig({ env: { ...withPrevious, BIZOPS_WEBHOOK_PREVIOUS_SECRET: previous, BIZOPS_WEBHOOK_PREVIOUS_SECRET_EXPIRES_AT: 'next week' } })).toThrow(
      /^BIZOPS_WEBHOOK_PREVIOUS_SECRET_EXPIRES_AT \(webhooks\.0\.previousSecretExpiresAt\): must be an ISO 8601 date-time/,
    );
    const rotating = loadConfig({ env: { ...withPrevious, BIZOPS_WEBHOOK_PREVIOUS_SECRET: previous, BIZOPS_WEBHOOK_PREVIOUS_SECRET_EXPIRES_AT: '2026-12-01T00:00:00Z' } });
    expect(rotating.webhooks[0]).toMatchObject({ previousSecret: previous, previousSecretExpiresAt: '2026-12-01T00:00:00Z', disableAfterDays: 5 });
  });

  it('the previous webhook secret never reaches config check output nor a log line', async () => {
    const previous = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
    const previousBody = previous.slice('whsec_'.length);
    const env = {
      ...base,
      BIZOPS_WEBHOOK_URL: 'http://127.0.0.1:9/h',
      BIZOPS_WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 8).toString('base64')}`,
      BIZOPS_WEBHOOK_PREVIOUS_SECRET: previous,
      BIZOPS_WEBHOOK_PREVIOUS_SECRET_EXPIRES_AT: '2026-12-01T00:00:00Z',
    };
    const checked = await runCli(['config', 'check'], { ...process.env, ...env });
    expect(checked.code, checked.stderr).toBe(0);
    expect(checked.stdout).toContain('"previousSecret": "whsec_***"');
    expect(checked.stdout + checked.stderr).not.toContain(previousBody);

    // The logger, fed the whole configuration and the bare secret under its key, prints neither.
    const config = loadConfig({ env });
    const lines: string[] = [];
    const destination = new Writable({ write: (chunk, _encoding, callback) => void (lines.push(String(chunk)), callback()) });
    const logger = createLogger({ destination, pretty: false, level: 'debug' });
    logger.info({ config, endpoint: config.webhooks[0] }, 'effective configuration');
    logger.info({ previousSecret: previousBody }, 'bare value under the key');
    expect(lines.join('')).not.toContain(previousBody);
    expect(lines.join('')).toContain('[redacted]');
  });
});

describe('typos and bad values in the configuration', () => {
  /** Loads `content` as the configuration file; returns the ConfigError's message, or '' when it loads. */
  const messageFor = (content: unknown, env: Record<string, string> = {}) => {
    dir ??= tempDir();
    writeFileSync(dir.file('c.json'), JSON.stringify(content));
    try {
      loadConfig({ env: { ...base, BIZOPS_CONFIG: dir.file('c.json'), ...env } });
      return '';
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as Error).message;
    }
  };

  it('an unknown key is an error naming the key, the file and the nearest known key, at every depth', () => {
    const secret = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;
    expect(messageFor({ webhook: [] })).toMatch(/^unknown key webhook in .*c\.json; did you mean webhooks\?$/);
    expect(messageFor({ sync: { schedul: '* * * * *' } })).toMatch(/^unknown key sync\.schedul in .*; did you mean sync\.schedule\?$/);
    expect(messageFor({ rateLimit: { perMinit: 5 } })).toMatch(/^unknown key rateLimit\.perMinit in .*; did you mean rateLimit\.perMinute\?$/);
    expect(messageFor({ baseURL: 'http://x' })).toMatch(/did you mean baseUrl\?$/);
    expect(messageFor({ connectons: {} })).toMatch(/did you mean connections\?$/);
    expect(messageFor({ sync: { streamSchedules: { deal: '* * * * *' } } })).toMatch(/^unknown key sync\.streamSchedules\.deal in .*; did you mean sync\.streamSchedules\.deals\?$/);
    expect(messageFor({ webhooks: [{ name: 'crm', url: 'http://127.0.0.1:9/h', secret, event: ['*'] }] })).toMatch(/^unknown key webhooks\.0\.event in .*; did you mean webhooks\.0\.events\?$/);
    // Nothing near: the known keys of that object are listed instead.
    expect(messageFor({ colour: 'blue' })).toMatch(/^unknown key colour in .*; expected one of baseUrl, .*webhooks, sinks, connections$/);
    expect(messageFor({ http: { colour: 'blue' } })).toMatch(/^unknown key http\.colour in .*; expected one of host, port, /);
  });

  it('sync.partitions: a partitioned stream and its parameter, a list of values; anything else one line naming the key and the rule', () => {
    expect(messageFor({ sync: { partitions: { qa_corrective_actions: { locationId: ['loc_1', 'loc_2'] } } } })).toBe('');
    expect(messageFor({ sync: { partitions: { qa_corrective_actions: { location: ['loc_1'] } } } })).toMatch(/sync\.partitions\.qa_corrective_actions\.location.*"location" is not qa_corrective_actions's partition parameter; expected locationId/);
    expect(messageFor({ sync: { partitions: { deals: { locationId: ['loc_1'] } } } })).toMatch(/sync\.partitions\.deals.*"deals" is not a partitioned stream; expected one of qa_corrective_actions/);
    expect(messageFor({ sync: { partitions: { qa_corrective_actions: { locationId: [] } } } })).toMatch(/sync\.partitions\.qa_corrective_actions\.locationId.*must list at least one value/);
    // A value the mirror cannot store (compared through a JSON function, sent in a query) is refused at start.
    expect(messageFor({ sync: { partitions: { qa_corrective_actions: { locationId: ['loc_\ud800'] } } } })).toMatch(/sync\.partitions\.qa_corrective_actions\.locationId\.0.*must not contain an unpaired surrogate/);
    expect(messageFor({ sync: { partitions: { qa_corrective_actions: { locationId: ['loc\u0000'] } } } })).toMatch(/locationId\.0.*must not contain the NUL character/);
    for (const message of [messageFor({ sync: { partitions: { deals: { locationId: ['x'] } } } })]) expect(message.split('\n')).toHaveLength(1);
  });

  it('every key the schema has is known: the effective configuration config check prints loads back as a file', async () => {
    const checked = await runCli(['config', 'check'], { ...process.env, ...base, BIZOPS_CONFIG: '' });
    expect(checked.code, checked.stderr).toBe(0);
    const { connection: _connection, tokens: _tokens, ...effective } = JSON.parse(checked.stdout) as Record<string, unknown>;
    expect(messageFor(effective)).toBe('');
    // So is the shipped file of defaults.
    expect(messageFor(JSON.parse(readFileSync(new URL('../../config/bizops-sync.json', import.meta.url), 'utf8')))).toBe('');
  });

  it('bad values read as rules, never in zod wording', () => {
    const zodWording = /Invalid (input|option|string|URL|ISO|key|element)|expected \w+, received|Too (small|big)|Unrecognized/;
    const cases: [unknown, Record<string, string>, string][] = [
      [{}, { BIZOPS_RATE_LIMIT_PER_MIN: 'abc' }, 'BIZOPS_RATE_LIMIT_PER_MIN (rateLimit.perMinute): must be a number, got "abc"'],
      [{ rateLimit: { perMinute: 1.5 } }, {}, 'must be a whole number, got 1.5'],
      [{ rateLimit: { perMinute: 0 } }, {}, 'rateLimit.perMinute (in '],
      [{ rateLimit: { perMinute: 0 } }, {}, 'must be greater than 0'],
      [{ rateLimit: { scope: 'team' } }, {}, 'must be one of "company", "token", got "team"'],
      [{ http: { port: 70_000 } }, {}, 'must be at most 65535'],
      [{ sync: [] }, {}, 'sync (in '],
      [{ sync: [] }, {}, 'must be an object, got a list'],
      [{ tokens: { 'front desk': 'x' } }, {}, 'tokens.front desk (in '],
      [{ webhooks: [{ name: 'crm', url: 'ftp://x', secret: 'whsec_QQ==' }] }, {}, 'webhooks.0.url (in '],
      [{}, { BIZOPS_BASE_URL: 'not a url' }, 'BIZOPS_BASE_URL (baseUrl): must be a URL (http:// or https://)'],
      [{}, { BIZOPS_HTTP_PORT: 'eighty' }, 'must be a number, got "eighty"'],
      [{}, { BIZOPS_REQUEST_DEADLINE_SECONDS: '0' }, 'must be greater than 0'],
    ];
    for (const [content, env, expected] of cases) {
      const message = messageFor(content, env);
      expect(message, JSON.stringify({ content, env })).toContain(expected);
      expect(message).not.toMatch(zodWording);
    }
  });

  it('config check refuses a misspelt key and a bad BIZOPS_LOG_LEVEL or BIZOPS_LOG_FORMAT with one line and exit 2, whichever command', async () => {
    dir = tempDir();
    writeFileSync(dir.file('c.json'), JSON.stringify({ webhook: [] }));
    const typo = await runCli(['config', 'check'], { ...process.env, ...base, BIZOPS_CONFIG: dir.file('c.json') });
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(/^bizops-sync: configuration error: unknown key webhook in .*c\.json; did you mean webhooks\?\n$/);

    const env = { ...process.env, ...base, BIZOPS_CONFIG: '', BIZOPS_DB: dir.file('m.db') };
    for (const command of [['config', 'check'], ['status']]) {
      const level = await runCli(command, { ...env, BIZOPS_LOG_LEVEL: 'verbose' });
      expect(level.code, level.stderr).toBe(2);
      expect(level.stderr).toBe('bizops-sync: configuration error: BIZOPS_LOG_LEVEL: "verbose" is not a log level; expected one of fatal, error, warn, info, debug, trace, silent\n');
      const format = await runCli(command, { ...env, BIZOPS_LOG_FORMAT: 'xml' });
      expect(format.code, format.stderr).toBe(2);
      expect(format.stderr).toBe('bizops-sync: configuration error: BIZOPS_LOG_FORMAT: "xml" is not a log format; expected json or pretty\n');
    }
    expect(() => createLogger({ level: undefined, destination: new Writable({ write: (_c, _e, cb) => cb() }) })).not.toThrow();
  });
});
