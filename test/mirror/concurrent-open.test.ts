/**
 * Two processes opening a new SQLite mirror at once (a `sync` beside a starting daemon): each
 * migration's transaction takes the write lock before it reads the file's version, so the second
 * process waits for the first's commit and finds the migration applied, never applying it again
 * ("duplicate column name", "table ... already exists").
 */
import { spawn } from 'node:child_process';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { SCHEMA_VERSION } from '../../src/mirror/database.ts';
import { MIGRATIONS } from '../../src/mirror/migrations/index.ts';
import { freshSqlitePath, removeTestMirrors } from '../sql-backends.ts';

afterEach(removeTestMirrors);

const DATABASE_MODULE = new URL('../../src/mirror/database.ts', import.meta.url).href;

/** A child process that says `opening`, opens the mirror at `path` and says `opened`; its exit code and output. */
function openInChild(path: string, onOpening: () => void): Promise<{ code: number | null; output: string }> {
  const script = `
    import { openMirror } from ${JSON.stringify(DATABASE_MODULE)};
    process.stdout.write('opening\\n');
    openMirror(${JSON.stringify(path)}).close();
    process.stdout.write('opened\\n');`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script]);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    const before = output;
    output += chunk.toString();
    if (!before.includes('opening') && output.includes('opening')) onOpening();
  });
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, output })));
}

describe('a new mirror opened by two processes at once', () => {
  it('is migrated once: the process that waited for the write lock finds every migration applied', async () => {
    const path = freshSqlitePath();
    // This connection plays the first process: it holds the write lock of a new, empty file
    // while the child starts opening, then applies every migration and commits.
    const first = new Database(path);
    first.pragma('journal_mode = WAL');
    first.exec('BEGIN IMMEDIATE');
    let opening!: () => void;
    const childSaidOpening = new Promise<void>((resolve) => (opening = resolve));
    const child = openInChild(path, opening);
    await childSaidOpening;
    // The child now reads the version (0) and waits on the lock (its busy_timeout is 5 s). Whether
    // it read before it waited or not, its open must succeed once this commit lands.
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (const migration of MIGRATIONS) first.exec(migration.sql);
    first.pragma(`user_version = ${SCHEMA_VERSION}`);
    first.exec('COMMIT');
    first.close();

    const { code, output } = await child;
    expect(output).not.toMatch(/duplicate column|already exists/);
    expect(code, output).toBe(0);
    expect(output).toContain('opened');
    const check = new Database(path, { readonly: true });
    expect(check.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    check.close();
  });

  it('by four processes at once, every one opens it and it ends at the latest version', async () => {
    const path = freshSqlitePath();
    const results = await Promise.all(Array.from({ length: 4 }, () => openInChild(path, () => {})));
    for (const { code, output } of results) expect(code, output).toBe(0);
    const check = new Database(path, { readonly: true });
    expect(check.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    check.close();
  });
});
