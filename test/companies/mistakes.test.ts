/**
 * The mistakes a user makes when configuring several connections, as the CLI
 * answers them: one line naming the connection and the key, exit 2 (configuration), never a silent
 * fallback to another mirror file and never a stack trace.
 */
import { writeFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { ConfigError, loadDeployment } from '../../src/config/load.ts';
import { deploymentQueueName } from '../../src/writes/queue/write-queue.ts';
import { runCli, simulator, tempDir, type TempDir } from '../helpers.ts';
import { REDIS_URL, requireRedis } from '../writes/support.ts';

let dir: TempDir | undefined;
let sim: RunningSimulator | undefined;
afterEach(async () => {
  await sim?.close();
  dir?.remove();
  dir = sim = undefined;
});

/** Writes `content` (an object as JSON, a string as it is) as the configuration file; returns an environment naming it. */
function withFile(content: unknown, env: Record<string, string> = {}): NodeJS.ProcessEnv {
  dir ??= tempDir();
  const path = dir.file('bizops-sync.json');
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return { PATH: process.env.PATH, BIZOPS_CONFIG: path, ...env };
}

const two = {
  baseUrl: 'http://127.0.0.1:4010',
  connections: {
    acme: { companyId: 'com_acme', tokens: { default: 'acme-token-value' } },
    globex: { companyId: 'com_globex', tokens: { default: 'globex-token-value' } },
  },
};

/** One line on stderr, no stack trace. */
function expectOneLine(stderr: string): void {
  expect(stderr.trim().split('\n')).toHaveLength(1);
  expect(stderr).not.toMatch(/\n\s+at /);
}

describe('configuration mistakes with connections', () => {
  it('a misspelt key inside a connection, or at the top level beside "connections", is refused naming the connection and the key', async () => {
    const misspelt = { ...two, connections: { ...two.connections, globex: { ...two.connections.globex, baseURL: 'http://127.0.0.1:4020' } } };
    expect(() => loadDeployment({ env: withFile(misspelt) })).toThrow(ConfigError);
    expect(() => loadDeployment({ env: withFile(misspelt) })).toThrow(/^unknown key connections\.globex\.baseURL in .*\.json; did you mean connections\.globex\.baseUrl\?$/);
    const checked = await runCli(['config', 'check'], withFile(misspelt));
    expect(checked.code).toBe(2);
    expectOneLine(checked.stderr);
    expect(checked.stderr).toContain('unknown key connections.globex.baseURL in ');

    expect(() => loadDeployment({ env: withFile({ ...two, sycn: { schedule: '* * * * *' } }) })).toThrow(/^unknown key sycn in .*; did you mean sync\?$/);
    expect(() => loadDeployment({ env: withFile({ ...two, colour: 'blue' }) })).toThrow(/^unknown key colour in .*; expected one of baseUrl, .*connections$/);
  });

  it('status and changes report an unreadable configuration file (exit 2) instead of reading ./data/mirror.db', async () => {
    const broken = withFile('{"connections": {"acme": ');
    const commands = [['status'], ['changes'], ['status', '--connection', 'acme']];
    // Independent processes, started at once.
    const [missing, ...results] = await Promise.all([
      runCli(['status'], { PATH: process.env.PATH, BIZOPS_CONFIG: '/nonexistent/bizops-sync.json' }),
      ...commands.map((command) => runCli(command, broken)),
    ]);
    for (const [index, command] of commands.entries()) {
      const result = results[index]!;
      expect(result.code, command.join(' ')).toBe(2);
      expectOneLine(result.stderr);
      expect(result.stderr).toMatch(/bizops-sync\.json: not valid JSON/);
      expect(result.stderr).not.toContain('mirror.db');
    }
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('BIZOPS_CONFIG: file /nonexistent/bizops-sync.json does not exist');
  });

  it('status and changes of one connection refuse a mirror file every connection shares (BIZOPS_DB), as config check does', async () => {
    const env = withFile(two, { BIZOPS_DB: '/data/mirror.db' });
    const commands = [['status', '--connection', 'acme'], ['changes', '--connection', 'globex'], ['status']];
    // Independent processes, started at once.
    const [checked, ...results] = await Promise.all([runCli(['config', 'check'], env), ...commands.map((command) => runCli(command, env))]);
    expect(checked.code).toBe(2);
    for (const [index, command] of commands.entries()) {
      const result = results[index]!;
      expect(result.code, command.join(' ')).toBe(2);
      expectOneLine(result.stderr);
      expect(result.stderr).toBe(checked.stderr);
      expect(result.stderr).toContain('connections.acme.dbPath and connections.globex.dbPath: both are /data/mirror.db (from BIZOPS_DB)');
    }
  });

  it('a write or a webhook endpoint not found in the chosen connection is reported for that connection', async () => {
    dir ??= tempDir();
    const env = withFile(two, { BIZOPS_DB: `${dir.path}/{connection}.db` });
    const [write, hooks] = await Promise.all([
      runCli(['write', 'wr_missing', '--connection', 'globex'], env),
      runCli(['webhooks', 'send-test', '--endpoint', 'crm', '--connection', 'acme'], env),
    ]);
    expect(write.code).toBe(2);
    expect(write.stderr.trim()).toBe(`bizops-sync: no write wr_missing in connection globex (mirror ${dir.path}/globex.db)`);
    expect(hooks.code).toBe(2);
    expectOneLine(hooks.stderr);
    expect(hooks.stderr).toContain('connection acme has no webhook endpoint: add "webhooks" to connections.acme in the config file');
  });

  it('a token of one connection typed into a command on another is masked in the error line; enqueue log lines name the connection', async () => {
    await requireRedis();
    sim = await simulator({ companies: 2 });
    dir ??= tempDir();
    const [one, two] = [sim.company(1), sim.company(2)];
    const env = withFile(
      {
        baseUrl: sim.url,
        connections: {
          acme: { companyId: one.id, tokens: { default: one.token }, dbPath: dir.file('acme.db') },
          globex: { companyId: two.id, tokens: { default: two.token }, dbPath: dir.file('globex.db') },
        },
      },
      { BIZOPS_LOG_FORMAT: 'json', BIZOPS_LOG_LEVEL: 'info' },
    );
    const enqueue = (...extra: string[]) => runCli(['enqueue', 'transaction.create', '--data', '{"type":"INCOME","amount":1250,"description":"Catering"}', '--connection', 'globex', ...extra], env);
    const queueName = deploymentQueueName({ companyId: two.id, baseUrl: sim.url, connection: 'globex' });
    try {
      // acme's token given where a token name belongs, on globex: the error echoes what was given.
      // Started at once with the enqueue that succeeds: independent processes.
      const [mistaken, queued] = await Promise.all([enqueue('--act-as', one.token), enqueue()]);
      expect(mistaken.code).toBe(2);
      expectOneLine(mistaken.stderr);
      expect(mistaken.stderr).toContain('actAs: no token named "[redacted]"');
      expect(mistaken.stderr).not.toContain(one.token);

      expect(queued.code).toBe(0);
      const lines = queued.stderr.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines.find((line) => line.msg === 'write queued')).toMatchObject({ connection: 'globex', writeId: queued.stdout.trim() });
    } finally {
      const redis = new Redis(REDIS_URL);
      const keys = await redis.keys(`*${queueName}*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    }
  });
});
