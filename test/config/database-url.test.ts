/**
 * A PostgreSQL mirror in the configuration (docs/mirror.md "PostgreSQL"): `dbPath` / `BIZOPS_DB`
 * take a postgres:// URL, `BIZOPS_DATABASE_URL` sets it too, `{connection}` works inside the URL,
 * two connections on one schema are refused, and the password never shows.
 */
import { writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, deploymentSecrets, loadConfig, loadDeployment, maskConfig, mirrorPaths } from '../../src/config/load.ts';
import { tempDir, type TempDir } from '../helpers.ts';

let dir: TempDir | undefined;
afterEach(() => {
  dir?.remove();
  dir = undefined;
});

const URL_WITH_PASSWORD = 'postgres://sync:Pa55-word@db.internal:5432/bizops?schema={connection}';

/** An environment whose configuration file holds `file` (an empty object: the single connection). */
function withFile(file: Record<string, unknown>, env: Record<string, string> = {}): NodeJS.ProcessEnv {
  dir ??= tempDir();
  writeFileSync(dir.file('config.json'), JSON.stringify(file));
  return { BIZOPS_BASE_URL: 'http://127.0.0.1:4010', BIZOPS_TOKEN: 'default-token-value', BIZOPS_CONFIG: dir.file('config.json'), ...env };
}

const two = {
  connections: {
    acme: { companyId: 'acme', tokens: { default: 'acme-token' } },
    globex: { companyId: 'globex', tokens: { default: 'globex-token' } },
  },
};

describe('a PostgreSQL mirror in the configuration', () => {
  it('takes a postgres:// URL in BIZOPS_DB or BIZOPS_DATABASE_URL, and masks its password when shown', () => {
    expect(loadConfig({ env: withFile({}, { BIZOPS_DB: URL_WITH_PASSWORD }) }).dbPath).toBe('postgres://sync:Pa55-word@db.internal:5432/bizops?schema=default');
    const config = loadConfig({ env: withFile({}, { BIZOPS_DATABASE_URL: 'postgresql://sync:Pa55-word@db.internal/bizops' }) });
    expect(config.dbPath).toBe('postgresql://sync:Pa55-word@db.internal/bizops');
    const shown = JSON.stringify(maskConfig(config));
    expect(shown).toContain('"dbPath":"postgresql://sync:***@db.internal/bizops"');
    expect(shown).not.toContain('Pa55-word');
    // The same value in both is one mirror; a file path in dbPath is unchanged by the masking.
    expect(loadConfig({ env: withFile({}, { BIZOPS_DB: URL_WITH_PASSWORD, BIZOPS_DATABASE_URL: URL_WITH_PASSWORD }) }).dbPath).toContain('schema=default');
    expect((maskConfig(loadConfig({ env: withFile({ dbPath: './data/x.db' }) })) as { dbPath: string }).dbPath).toBe('./data/x.db');
    // The URL holding a password is a secret the CLI's error line masks (whole: it also names the server).
    expect(deploymentSecrets([config])).toContain('postgresql://sync:Pa55-word@db.internal/bizops');
    expect(deploymentSecrets([loadConfig({ env: withFile({}, { BIZOPS_DB: 'postgres://sync@db/bizops' }) })])).toEqual(['default-token-value']);
    expect(mirrorPaths({ env: withFile({}, { BIZOPS_DATABASE_URL: URL_WITH_PASSWORD }) }).paths).toEqual([
      { connection: 'default', dbPath: 'postgres://sync:Pa55-word@db.internal:5432/bizops?schema=default' },
    ]);
  });

  it('gives each connection its own schema with ?schema={connection}, and refuses two connections on one schema', () => {
    const deployment = loadDeployment({ env: withFile(two, { BIZOPS_DATABASE_URL: URL_WITH_PASSWORD }) });
    expect(deployment.connections.map((config) => config.dbPath)).toEqual([
      'postgres://sync:Pa55-word@db.internal:5432/bizops?schema=acme',
      'postgres://sync:Pa55-word@db.internal:5432/bizops?schema=globex',
    ]);
    expect(mirrorPaths({ env: withFile(two, { BIZOPS_DB: URL_WITH_PASSWORD }) }).paths.map((path) => path.dbPath)).toEqual([
      'postgres://sync:Pa55-word@db.internal:5432/bizops?schema=acme',
      'postgres://sync:Pa55-word@db.internal:5432/bizops?schema=globex',
    ]);
    // One schema for both (another user, the default port spelt out) is one mirror.
    const shared = {
      connections: {
        acme: { ...two.connections.acme, dbPath: 'postgres://sync:Pa55-word@db.internal/bizops' },
        globex: { ...two.connections.globex, dbPath: 'postgres://reader@db.internal:5432/bizops?schema=bizops' },
      },
    };
    const attempt = () => loadDeployment({ env: withFile(shared) });
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(
      'connections.acme.dbPath and connections.globex.dbPath: both are postgres://reader@db.internal:5432/bizops?schema=bizops; each connection needs its own mirror: set dbPath per connection, or put {connection} in its schema',
    );
    expect(() => mirrorPaths({ env: withFile(two, { BIZOPS_DATABASE_URL: 'postgres://sync:Pa55-word@db.internal/bizops' }) })).toThrow(
      /both are postgres:\/\/sync:\*\*\*@db\.internal\/bizops \(from BIZOPS_DATABASE_URL\); each connection needs its own mirror/,
    );
  });

  it('refuses a bad schema, another kind of URL, a file in BIZOPS_DATABASE_URL and two different mirrors, naming the variable, never the password', () => {
    const attempt = (env: Record<string, string>) => () => loadConfig({ env: withFile({}, env) });
    expect(attempt({ BIZOPS_DB: 'postgres://sync:Pa55-word@db/bizops?schema=Acme' })).toThrow(
      'BIZOPS_DB (dbPath): postgres://sync:***@db/bizops?schema=Acme: schema "Acme" must be lowercase letters, digits, _ and -',
    );
    expect(attempt({ BIZOPS_DB: 'mysql://sync:Pa55-word@db/bizops' })).toThrow(
      'BIZOPS_DB (dbPath): mysql://sync:***@db/bizops is neither a file path (SQLite) nor a postgres:// or postgresql:// URL (PostgreSQL)',
    );
    expect(attempt({ BIZOPS_DATABASE_URL: '/data/mirror.db' })).toThrow('BIZOPS_DATABASE_URL (dbPath): must be a postgres:// or postgresql:// URL (a SQLite file goes in BIZOPS_DB)');
    expect(attempt({ BIZOPS_DB: '/data/mirror.db', BIZOPS_DATABASE_URL: 'postgres://sync:Pa55-word@db/bizops' })).toThrow(
      'BIZOPS_DB and BIZOPS_DATABASE_URL (dbPath): both are set, to different mirrors (/data/mirror.db, postgres://sync:***@db/bizops); set one',
    );
    for (const env of [{ BIZOPS_DB: 'postgres://sync:Pa55-word@db/bizops?schema=Acme' }, { BIZOPS_DB: 'mysql://sync:Pa55-word@db/x' }]) {
      expect(attempt(env)).not.toThrow(/Pa55-word/);
    }
  });
});
