/**
 * Start-up failures: a mirror path or
 * file that cannot be used makes `sync`, `backfill` and `daemon` exit (they never hang on the Redis
 * connection opened beside it) with ONE line on stderr and exit 2 (configuration: the path) or 1
 * (runtime: a damaged file); `status` reads the mirror read-only, never migrates it, and reports
 * `PRAGMA quick_check`; `config check` masks a password inside BIZOPS_BASE_URL. A path that cannot be
 * created (under /proc, /dev/null, a file used as a directory) ends the same way, also when SIGTERM
 * arrives meanwhile: no busy loop on a failed open.
 * Each command is awaited to its exit (no timing assertion). The tests run concurrently (each in a
 * directory of its own): each waits on its own child processes.
 */
import { chmodSync, closeSync, mkdirSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it, type TestContext } from 'vitest';
import { openMirror, SCHEMA_VERSION } from '../../src/mirror/database.ts';
import { spawn } from 'node:child_process';
import { BIN, runCli, tempDir, type TempDir } from '../helpers.ts';
import { REDIS_URL } from '../writes/support.ts';

/** A temporary directory of the test's own, removed when the test ends. */
function ownDir(onTestFinished: TestContext['onTestFinished']): TempDir {
  const dir = tempDir('bizops-start-');
  onTestFinished(() => {
    chmodSync(dir.path, 0o755);
    dir.remove();
  });
  return dir;
}

/** The environment of a deployment whose Redis answers; the API is never reached before the mirror opens. */
function env(dbPath: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    BIZOPS_BASE_URL: 'http://127.0.0.1:9',
    BIZOPS_TOKEN: 'tok_startup_test_secret',
    BIZOPS_DB: dbPath,
    REDIS_URL,
    BIZOPS_HTTP_PORT: '0',
    BIZOPS_LOG_LEVEL: 'silent',
    ...extra,
  };
}

/** A mirror with a few rows, closed (WAL checkpointed into the file). */
function validMirror(path: string): void {
  const db = openMirror(path);
  db.exec(`CREATE TABLE filler (id INTEGER PRIMARY KEY, text TEXT)`);
  const insert = db.prepare('INSERT INTO filler (text) VALUES (?)');
  for (let i = 0; i < 400; i++) insert.run('x'.repeat(200));
  db.close();
}

/** `runCli`, and a process still running when the test ends (it timed out: the bug is back) is killed, not left spinning. */
function runKilledAtTheEnd(args: string[], environment: NodeJS.ProcessEnv, onTestFinished: TestContext['onTestFinished']): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { env: environment });
  onTestFinished(() => void child.kill('SIGKILL'));
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += String(chunk)));
  child.stderr.on('data', (chunk) => (stderr += String(chunk)));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

function expectOneLine(stderr: string, pattern: RegExp): void {
  const lines = stderr.trim().split('\n');
  expect(lines, stderr).toHaveLength(1);
  expect(lines[0]).toMatch(pattern);
}

// `backfill` and `sync` are one command body (cli/commands/sync.ts runCommand, the reason apart) up to
// the mirror's open: `sync` stands for both here; `backfill` runs one of the UNCREATABLE cases below.
const COMMANDS = [['sync'], ['daemon']];

describe.concurrent('a mirror that cannot be opened ends the process with one line', () => {
  it.for(COMMANDS)('%s: BIZOPS_DB is a directory -> exit 2 naming BIZOPS_DB', async (args, { onTestFinished }) => {
    const dir = ownDir(onTestFinished);
    const result = await runCli(args, env(dir.path));
    expect(result.code).toBe(2);
    expectOneLine(result.stderr, /^bizops-sync: configuration error: BIZOPS_DB \(dbPath\): .* is a directory/);
  });

  it.for(COMMANDS)('%s: BIZOPS_DB under /proc -> exit 2 naming BIZOPS_DB', async (args) => {
    const result = await runCli(args, env('/proc/self/bizops-mirror.db'));
    expect(result.code).toBe(2);
    expectOneLine(result.stderr, /^bizops-sync: configuration error: BIZOPS_DB \(dbPath\): cannot use \/proc\/self\/bizops-mirror\.db/);
  });

  // A path that cannot be created is no outage to wait out: Node's recursive mkdir never returned
  // under /proc (a native loop: 50-70% CPU, SIGTERM never handled), so these hung until the test's timeout.
  const UNCREATABLE: readonly (readonly [string, string, (dir: TempDir) => string, RegExp])[] = [
    ['sync', 'a directory under /proc', () => '/proc/nope/x.db', /cannot use \/proc\/nope\/x\.db for the mirror \(ENOENT/],
    ['daemon', 'a directory under /proc', () => '/proc/nope/x.db', /cannot use \/proc\/nope\/x\.db for the mirror \(ENOENT/],
    ['backfill', 'a directory under /proc', () => '/proc/nope/deeper/x.db', /cannot use \/proc\/nope\/deeper\/x\.db for the mirror \(ENOENT/],
    ['sync', '/dev/null', () => '/dev/null', /\/dev\/null is not a regular file/],
    ['daemon', '/dev/null', () => '/dev/null', /\/dev\/null is not a regular file/],
    ['sync', 'a file used as a directory', (tmp) => (writeFileSync(tmp.file('plain'), 'x'), `${tmp.file('plain')}/sub/x.db`), /plain is a file, not a directory/],
    ['daemon', 'a file used as a directory', (tmp) => (writeFileSync(tmp.file('plain'), 'x'), `${tmp.file('plain')}/x.db`), /plain is a file, not a directory/],
  ];
  it.for(UNCREATABLE)('%s: BIZOPS_DB is %s -> exit 2, one line naming BIZOPS_DB', async ([command, _what, path, reason], { onTestFinished }) => {
    const dir = ownDir(onTestFinished);
    const result = await runKilledAtTheEnd(command === 'backfill' ? [command, '--no-progress'] : [command], env(path(dir)), onTestFinished);
    expect(result.code, result.stderr).toBe(2);
    expectOneLine(result.stderr, /^bizops-sync: configuration error: BIZOPS_DB \(dbPath\): /);
    expect(result.stderr).toMatch(reason);
  });

  it('sync: BIZOPS_DB under /proc and a SIGTERM while it starts -> it ends, one line at most', async ({ onTestFinished }) => {
    const child = spawn(process.execPath, [BIN, 'sync'], { env: env('/proc/nope/x.db') });
    onTestFinished(() => void child.kill('SIGKILL'));
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += String(chunk)));
    const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
    await new Promise((resolve) => child.once('spawn', resolve));
    child.kill('SIGTERM');
    const { code, signal } = await closed;
    // Ended by the signal before its handler was in place, or by the open's failure (exit 2, one line),
    // or by the handled SIGTERM: never a process that keeps running.
    if (signal === null && code !== 0) {
      expect(code).toBe(2);
      expectOneLine(stderr, /^bizops-sync: configuration error: BIZOPS_DB \(dbPath\): cannot use \/proc\/nope\/x\.db/);
    } else expect(stderr.trim().split('\n').filter(Boolean).length).toBeLessThanOrEqual(1);
  });

  it.for(COMMANDS)('%s: a read-only directory -> exit 2 naming BIZOPS_DB', async (args, { onTestFinished }) => {
    const dir = ownDir(onTestFinished);
    const readOnly = dir.file('ro');
    mkdirSync(readOnly);
    chmodSync(readOnly, 0o555);
    // root ignores permissions: stand in a read-only pseudo file system (/sys) for the read-only mount.
    const path = process.getuid?.() === 0 ? '/sys/bizops-mirror.db' : `${readOnly}/mirror.db`;
    const result = await runCli(args, env(path));
    expect(result.code).toBe(2);
    expectOneLine(result.stderr, /^bizops-sync: configuration error: BIZOPS_DB \(dbPath\): cannot use /);
  });

  it.for(COMMANDS)('%s: a corrupted header -> exit 1 saying the mirror is damaged', async (args, { onTestFinished }) => {
    const dir = ownDir(onTestFinished);
    const path = dir.file('mirror.db');
    validMirror(path);
    const fd = openSync(path, 'r+');
    writeSync(fd, Buffer.from('this is no longer sqlite'), 0, 24, 0);
    closeSync(fd);
    const result = await runCli(args, env(path));
    expect(result.code).toBe(1);
    expectOneLine(result.stderr, /^bizops-sync: the mirror .*mirror\.db is damaged \(/);
  });
});

/** Overwrites the middle of the file's last pages: the header stays valid, a table's pages do not. */
function damagePages(path: string): void {
  const size = readFileSync(path).length;
  const fd = openSync(path, 'r+');
  writeSync(fd, Buffer.alloc(4096 * 3, 0xa5), 0, 4096 * 3, size - 4096 * 4);
  closeSync(fd);
}

describe.concurrent('a damaged page', () => {
  it('the daemon refuses to start, one line, exit 1', async ({ onTestFinished }) => {
    const dir = ownDir(onTestFinished);
    const path = dir.file('mirror.db');
    validMirror(path);
    damagePages(path);
    const result = await runCli(['daemon'], env(path));
    expect(result.code).toBe(1);
    expectOneLine(result.stderr, /^bizops-sync: the mirror .*mirror\.db is damaged \(/);
  });

  it('status reports it (quick_check) and exits 1 or prints the warning', async ({ onTestFinished }) => {
    const dir = ownDir(onTestFinished);
    const path = dir.file('mirror.db');
    validMirror(path);
    damagePages(path);
    const result = await runCli(['status', '--json'], env(path));
    if (result.code === 0) expect(JSON.parse(result.stdout).quickCheck).not.toBe('ok');
    else {
      expect(result.code).toBe(1);
      expectOneLine(result.stderr, /is damaged/);
    }
  });
});

describe.concurrent('status on a damaged mirror: one line naming the file, exit 1', () => {
  it('a corrupted header', async ({ onTestFinished }) => {
    const dir = ownDir(onTestFinished);
    const path = dir.file('mirror.db');
    validMirror(path);
    const fd = openSync(path, 'r+');
    writeSync(fd, Buffer.from('this is no longer sqlite'), 0, 24, 0);
    closeSync(fd);
    const result = await runCli(['status'], env(path));
    expect(result.code).toBe(1);
    expectOneLine(result.stderr, /^bizops-sync: the mirror .*mirror\.db is damaged \(/);
  });

  it.for(['sync_state', 'transactions', 'changes'])('a damaged page of a table status reads (%s): one line, quick_check or SQLite says so', async (table, { onTestFinished }) => {
    const dir = ownDir(onTestFinished);
    const path = dir.file('mirror.db');
    validMirror(path);
    const db = new Database(path);
    // Enough rows that the table's root is an interior page over many leaves (as in a real mirror).
    const insert = db.prepare(
      `INSERT INTO transactions (id, type, status, amount, raw, content_hash, first_seen_at, synced_at) VALUES (?, 'INCOME', 'CONFIRMED', 100, ?, 'h', 't', 't')`,
    );
    for (let i = 0; i < 2000; i++) insert.run(`txn_${i}`, 'x'.repeat(150));
    const { rootpage } = db.prepare(`SELECT rootpage FROM sqlite_master WHERE name = ?`).get(table) as { rootpage: number };
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    db.close();
    const garbage = Buffer.from(Array.from({ length: pageSize }, (_, i) => ((i * 2654435761) >>> 24) & 0xff));
    const fd = openSync(path, 'r+');
    writeSync(fd, garbage, 0, pageSize, (rootpage - 1) * pageSize);
    closeSync(fd);
    const result = await runCli(['status'], env(path));
    expect(result.code).toBe(1);
    expectOneLine(result.stderr, /^bizops-sync: the mirror .*mirror\.db is damaged \(/);
  });
});

describe.concurrent('status reads without writing', () => {
  it('a healthy mirror: quickCheck ok', async ({ onTestFinished }) => {
    const dir = ownDir(onTestFinished);
    const path = dir.file('mirror.db');
    validMirror(path);
    const result = await runCli(['status', '--json'], env(path));
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout).quickCheck).toBe('ok');
  });

  it('an older schema is not migrated: one line saying what migrates it, the file unchanged', async ({ onTestFinished }) => {
    const dir = ownDir(onTestFinished);
    const path = dir.file('mirror.db');
    validMirror(path);
    const old = new Database(path);
    old.pragma(`user_version = ${SCHEMA_VERSION - 1}`);
    old.close();
    const before = readFileSync(path);
    const result = await runCli(['status'], env(path));
    expect(result.code).toBe(1);
    expectOneLine(result.stderr, new RegExp(`schema version ${SCHEMA_VERSION - 1}.*does not migrate it: run \`bizops-sync sync\``));
    const after = new Database(path, { readonly: true });
    expect(after.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION - 1);
    after.close();
    expect(readFileSync(path).equals(before)).toBe(true);
  });
});

describe.concurrent('config check', () => {
  it('masks a password inside BIZOPS_BASE_URL', async ({ onTestFinished }) => {
    const dir = ownDir(onTestFinished);
    writeFileSync(dir.file('unused'), '');
    const result = await runCli(['config', 'check'], env(dir.file('mirror.db'), { BIZOPS_BASE_URL: 'https://sync:hunter2-secret@api.example.com' }));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).not.toContain('hunter2-secret');
    expect(JSON.parse(result.stdout).baseUrl).toBe('https://sync:***@api.example.com/');
  });
});
