import { writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, maskConfig } from '../../src/config/load.ts';
import { tempDir, type TempDir } from '../helpers.ts';

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
    expect(config.rateLimit).toEqual({ perMinute: 90, windowMs: 60_000, scope: 'company' });
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
    expect(loadConfig({ env: base }).sync.streams).toEqual(['transactions', 'deals', 'onboardings']);
    dir = tempDir();
    writeFileSync(dir.file('c.json'), JSON.stringify({ sync: { streams: ['deals', 'invoices'] } }));
    expect(() => loadConfig({ env: { ...base, BIZOPS_CONFIG: dir!.file('c.json') } })).toThrow(
      'sync.streams.1: "invoices" is not a stream; expected one of transactions, deals, onboardings',
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
});
