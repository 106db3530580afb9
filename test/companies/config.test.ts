/**
 * Named connections in the configuration file: inheritance of top-level defaults,
 * the environment as a default, the single `default` connection without `connections`, errors that
 * name the connection and key, collisions between connections, and masking.
 */
import { writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, ConnectionChoiceError, loadConfig, loadDeployment, maskDeployment, mirrorPaths } from '../../src/config/load.ts';
import { STREAM_NAMES } from '../../src/streams/definitions.ts';
import { deploymentQueueName } from '../../src/writes/queue/write-queue.ts';
import { tempDir, type TempDir } from '../helpers.ts';

let dir: TempDir | undefined;
afterEach(() => {
  dir?.remove();
  dir = undefined;
});

/** Writes `content` as the configuration file and returns an environment naming it. */
function withFile(content: unknown, env: Record<string, string> = {}): NodeJS.ProcessEnv {
  dir ??= tempDir();
  const path = dir.file('bizops-sync.json');
  writeFileSync(path, JSON.stringify(content));
  return { BIZOPS_CONFIG: path, ...env };
}

const SECRET_A = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const two = {
  baseUrl: 'http://127.0.0.1:4010',
  sync: { schedule: '*/5 * * * * *', overlapSeconds: 30 },
  rateLimit: { perMinute: 30 },
  http: { port: 9090 },
  connections: {
    acme: { tokens: { default: 'acme-token-value' }, companyId: 'acme', sync: { streams: ['deals'] }, webhooks: [{ name: 'crm', url: 'http://127.0.0.1:9/h', secret: SECRET_A }] },
    globex: { baseUrl: 'http://127.0.0.1:4020', tokens: { default: 'globex-token-value' }, companyId: 'globex', dbPath: '/var/mirrors/globex.db', rateLimit: { perMinute: 120 } },
  },
};

describe('named connections', () => {
  it('each connection inherits the top-level values (deep-merged, its own win); process-wide keys are shared; dbPath defaults to ./data/<name>.db', () => {
    const deployment = loadDeployment({ env: withFile(two) });
    expect(deployment.named).toBe(true);
    const [acme, globex] = deployment.connections;
    expect([acme!.connection, globex!.connection]).toEqual(['acme', 'globex']);
    expect(acme!.baseUrl).toBe('http://127.0.0.1:4010');
    expect(globex!.baseUrl).toBe('http://127.0.0.1:4020');
    expect(acme!.sync).toMatchObject({ schedule: '*/5 * * * * *', overlapSeconds: 30, streams: ['deals'] });
    expect(globex!.sync.streams).toEqual(STREAM_NAMES);
    expect(acme!.rateLimit.perMinute).toBe(30);
    expect(globex!.rateLimit.perMinute).toBe(120);
    expect(acme!.dbPath).toBe('./data/acme.db');
    expect(globex!.dbPath).toBe('/var/mirrors/globex.db');
    expect(acme!.webhooks.map((endpoint) => endpoint.name)).toEqual(['crm']);
    expect(globex!.webhooks).toEqual([]);
    expect(acme!.http.port).toBe(9090);
    expect(globex!.http.port).toBe(9090);
    expect(mirrorPaths({ env: withFile(two) }).paths).toEqual([
      { connection: 'acme', dbPath: './data/acme.db' },
      { connection: 'globex', dbPath: '/var/mirrors/globex.db' },
    ]);
  });

  it('the BIZOPS_* variables are top-level defaults: a connection setting the key keeps its own; {connection} in dbPath names each file', () => {
    const env = withFile(two, { BIZOPS_TOKEN: 'env-token-value', BIZOPS_OVERLAP_SECONDS: '45', BIZOPS_DB: '/data/{connection}.db', BIZOPS_COMPANY_ID: 'ignored-when-set' });
    const [acme, globex] = loadDeployment({ env }).connections;
    expect(acme!.tokens.default).toBe('acme-token-value');
    expect(acme!.sync.overlapSeconds).toBe(45);
    expect(acme!.companyId).toBe('acme');
    expect(acme!.dbPath).toBe('/data/acme.db');
    expect(globex!.dbPath).toBe('/var/mirrors/globex.db');
  });

  it('without "connections" the top level is the one connection "default", as before', () => {
    const deployment = loadDeployment({ env: withFile({ dbPath: '/x/mirror.db' }, { BIZOPS_BASE_URL: 'http://127.0.0.1:4010', BIZOPS_TOKEN: 't' }) });
    expect(deployment.named).toBe(false);
    expect(deployment.connections.map((c) => [c.connection, c.dbPath, c.companyId])).toEqual([['default', '/x/mirror.db', 'default']]);
    expect(deploymentQueueName(deployment.connections[0]!)).toBe('bizops-writes.default.127.0.0.1_4010');
  });

  it('loadConfig picks the named connection, or refuses to guess among several, listing them', () => {
    const env = withFile(two);
    expect(loadConfig({ env, connection: 'globex' }).companyId).toBe('globex');
    expect(() => loadConfig({ env })).toThrow(ConnectionChoiceError);
    expect(() => loadConfig({ env })).toThrow('several connections are configured (acme, globex): choose one with --connection NAME');
    expect(() => loadConfig({ env, connection: 'initech' })).toThrow('--connection: no connection named "initech"; configured: acme, globex');
  });

  it('errors name the connection and the key (and the variable a bad inherited value came from)', () => {
    const attempt = (content: unknown, env: Record<string, string> = {}) => () => loadDeployment({ env: withFile(content, env) });
    const bad = (patch: Record<string, unknown>) => ({ ...two, connections: { ...two.connections, acme: { ...two.connections.acme, ...patch } } });
    expect(attempt(bad({ baseUrl: 'not a url' }))).toThrow(/^connections\.acme\.baseUrl: must be a URL \(http:\/\/ or https:\/\/\)$/);
    expect(attempt(bad({ sync: { schedule: 'every minute' } }))).toThrow(/^connections\.acme\.sync\.schedule: "every minute" is not a valid cron expression/);
    expect(attempt(bad({ tokens: {} }))).toThrow('connections.acme.tokens: a token named "default" is required');
    expect(attempt(bad({ http: { port: 1 } }))).toThrow('connections.acme.http: is process-wide (one for the whole deployment); set it at the top level of the file');
    expect(attempt(bad({ redisUrl: 'redis://x' }))).toThrow(/^connections\.acme\.redisUrl: is process-wide/);
    expect(attempt(bad({ companyId: undefined }))).toThrow(/^connections\.acme\.companyId: is required with "connections"/);
    expect(attempt({ ...two, connections: { Acme: two.connections.acme } })).toThrow('connections: "Acme" is not a valid connection name');
    expect(attempt({ ...two, connections: {} })).toThrow(/^connections: must be an object with at least one connection/);
    expect(attempt({ ...two, baseUrl: undefined }, { BIZOPS_BASE_URL: 'ftp://nope' })).toThrow(/^BIZOPS_BASE_URL \(connections\.acme\.baseUrl\): /);
    expect(attempt(two, { BIZOPS_RATE_LIMIT_PER_MIN: '0' })).toThrow(/^connections\.globex\.rateLimit\.perMinute|^BIZOPS_RATE_LIMIT_PER_MIN \(connections\.acme\.rateLimit\.perMinute\)/);
    expect(attempt(two)).not.toThrow();
    for (const error of [attempt(bad({ baseUrl: 'x' })), attempt(bad({ http: {} }))]) expect(error).toThrow(ConfigError);
  });

  it('two connections on one mirror file, or one company budget with two limits, are refused; one company with one limit is shared', () => {
    const attempt = (connections: Record<string, unknown>, env: Record<string, string> = {}) => () => loadDeployment({ env: withFile({ ...two, connections }, env) });
    const acme = two.connections.acme;
    expect(attempt({ acme, globex: { ...two.connections.globex, dbPath: './data/acme.db' } })).toThrow(
      /^connections\.acme\.dbPath and connections\.globex\.dbPath: both are \.\/data\/acme\.db; each connection needs its own mirror file/,
    );
    expect(attempt({ acme, globex: { ...acme, tokens: { default: 'other' } } }, { BIZOPS_DB: '/data/mirror.db' })).toThrow(
      /both are \/data\/mirror\.db \(from BIZOPS_DB\); .*put \{connection\} in it/,
    );
    const sameCompany = { ...acme, dbPath: './data/acme-deals.db', tokens: { default: 'second-token' }, rateLimit: { perMinute: 90 } };
    expect(attempt({ acme, acmedeals: sameCompany })).toThrow(
      /^connections\.acmedeals\.rateLimit: company acme at 127\.0\.0\.1:4010 is also connection acme's, with another limit \(90 per 60000 ms vs 30 per 60000 ms\)/,
    );
    const deployment = loadDeployment({ env: withFile({ ...two, connections: { acme, acmedeals: { ...sameCompany, rateLimit: { perMinute: 30 } } } }) });
    const [first, second] = deployment.connections;
    // One company, one budget; but two mirrors, so two write queues.
    expect(first!.companyId).toBe(second!.companyId);
    expect(deploymentQueueName(first!)).not.toBe(deploymentQueueName(second!));
    expect(deploymentQueueName(second!)).toBe('bizops-writes.acme.127.0.0.1_4010.acmedeals');
  });

  it('config check masks the tokens and webhook secrets of every connection', () => {
    const shown = JSON.stringify(maskDeployment(loadDeployment({ env: withFile(two, { REDIS_URL: 'redis://:hunter2@127.0.0.1:6379' }) })));
    for (const secret of ['acme-token-value', 'globex-token-value', SECRET_A.slice('whsec_'.length), 'hunter2']) expect(shown).not.toContain(secret);
    expect(Object.keys((JSON.parse(shown) as { connections: object }).connections)).toEqual(['acme', 'globex']);
  });
});
