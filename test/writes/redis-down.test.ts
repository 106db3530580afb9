/**
 * Redis down: an `enqueue` fails fast with one line naming REDIS_URL (no ioredis
 * stack trace, nothing stored), and a test file that needs Redis fails at once with a message
 * naming REDIS_URL instead of hanging. Each process is awaited to its exit (no timing assertion).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { closedPort } from '../client/test-server.ts';
import { runCli, tempDir, type TempDir } from '../helpers.ts';

let dir: TempDir;
beforeEach(() => {
  dir = tempDir('bizops-redis-down-');
});
afterEach(() => dir.remove());

describe('Redis does not answer', () => {
  it('enqueue: one line naming REDIS_URL (password masked), exit 1, nothing stored', async () => {
    const port = await closedPort();
    const dbPath = dir.file('mirror.db');
    const result = await runCli(['enqueue', 'transaction.create', '--data', '{"type":"INCOME","amount":1250}'], {
      PATH: process.env.PATH,
      BIZOPS_BASE_URL: 'http://127.0.0.1:9',
      BIZOPS_TOKEN: 'tok_redis_down_test',
      BIZOPS_DB: dbPath,
      REDIS_URL: `redis://:hunter2@127.0.0.1:${port}`,
    });
    expect(result.code).toBe(1);
    const lines = result.stderr.trim().split('\n');
    expect(lines, result.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^bizops-sync: REDIS_URL \\(redis://:\\*\\*\\*@127\\.0\\.0\\.1:${port}\\) does not answer \\(.*ECONNREFUSED`));
    expect(result.stderr).not.toContain('hunter2');
    if (existsSync(dbPath)) {
      const db = new Database(dbPath, { readonly: true });
      expect(db.prepare('SELECT COUNT(*) AS n FROM writes').get()).toEqual({ n: 0 });
      db.close();
    }
  });

  it('a test file that needs Redis fails with a message naming REDIS_URL', { timeout: 150_000 }, async () => {
    const port = await closedPort();
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const vitest = fileURLToPath(new URL('../../node_modules/vitest/vitest.mjs', import.meta.url));
    // The sqlite project only, and no PostgreSQL: the run's global setup would otherwise make (and
    // drop) a database of its own on the shared server, whose forced checkpoint waits behind every
    // other test's writes when the whole suite runs beside it.
    const child = spawn(process.execPath, [vitest, 'run', '--project', 'sqlite', 'test/writes/http.test.ts', '--reporter=dot'], {
      cwd: root,
      env: { ...process.env, REDIS_URL: `redis://127.0.0.1:${port}`, BIZOPS_TEST_POSTGRES_URL: `postgres://postgres@127.0.0.1:${await closedPort()}/none`, CI: '1' },
    });
    let output = '';
    const result = await new Promise<{ code: number | null; output: string }>((resolve) => {
      child.stdout.on('data', (chunk) => (output += String(chunk)));
      child.stderr.on('data', (chunk) => (output += String(chunk)));
      child.on('close', (code) => resolve({ code, output }));
      // A hang guard, not a timing assertion: a run that has not ended after 120 s fails with what it printed.
      setTimeout(() => child.kill('SIGKILL'), 120_000).unref();
    });
    expect(result.code, result.output).not.toBe(0);
    expect(result.output).toContain(`these tests need Redis: REDIS_URL (redis://127.0.0.1:${port}) does not answer`);
  });
});
