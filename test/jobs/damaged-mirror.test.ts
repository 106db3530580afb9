/**
 * A mirror damaged after it was written, found by the commands that read it in their work rather
 * than at open: a real mirror filled by a backfill of every stream from the simulator (in this
 * process, as the command's engine does it), then its header or one of
 * its tables' pages (the table's root, in the middle of the file) overwritten. `sync`, `backfill` and
 * `changes` end with the documented line naming the file and the remedy (docs/operations.md "A
 * damaged mirror"), exit 1, never a bare SQLite message ("database disk image is malformed").
 * The cases run concurrently, each on a copy of its own.
 */
import { closeSync, copyFileSync, openSync, statSync, writeSync } from 'node:fs';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { STREAM_NAMES } from '../../src/streams/definitions.ts';
import { runCli, simulator, tempDir, testConfig, testContext, type TempDir } from '../helpers.ts';
import { cliEnv } from '../daemon/helpers.ts';
import { REDIS_URL } from '../writes/support.ts';

let sim: RunningSimulator;
let dir: TempDir;
/** One mirror written by a backfill from the simulator, its write-ahead log folded into the file; each case damages a copy. */
let pristine: string;
beforeAll(async () => {
  sim = await simulator({ size: { transactions: 600, deals: 20, onboardings: 5, customers: 5 } });
  dir = tempDir('bizops-damaged-');
  pristine = dir.file('pristine.db');
  const context = await testContext(testConfig(sim, pristine));
  try {
    for (const stream of STREAM_NAMES) expect((await context.engine.run(stream, 'backfill')).status, stream).toBe('succeeded');
  } finally {
    await context.close();
  }
  const db = new Database(pristine);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
});
afterAll(async () => {
  await sim.close();
  dir.remove();
});

function env(dbPath: string): NodeJS.ProcessEnv {
  return cliEnv({ BIZOPS_BASE_URL: sim.url, BIZOPS_TOKEN: String(sim.tokens.admin), BIZOPS_DB: dbPath, BIZOPS_CONFIG: '', REDIS_URL, BIZOPS_LOG_LEVEL: 'silent' });
}

/** A copy of the backfilled mirror. */
function backfilledMirror(name: string): string {
  const path = dir.file(name);
  copyFileSync(pristine, path);
  return path;
}

/** Overwrites `table`'s root page (an interior page over many leaves, in the middle of the file) with noise. */
function damageTable(path: string, table: string): void {
  const db = new Database(path, { readonly: true });
  const { rootpage } = db.prepare('SELECT rootpage FROM sqlite_master WHERE name = ?').get(table) as { rootpage: number };
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  db.close();
  const pages = statSync(path).size / pageSize;
  expect(rootpage, 'the damaged page lies inside the file, not at its start').toBeGreaterThan(1);
  expect(rootpage).toBeLessThan(pages);
  const noise = Buffer.from(Array.from({ length: pageSize }, (_, i) => ((i * 2654435761) >>> 24) & 0xff));
  const fd = openSync(path, 'r+');
  writeSync(fd, noise, 0, pageSize, (rootpage - 1) * pageSize);
  closeSync(fd);
}

function damageHeader(path: string): void {
  const fd = openSync(path, 'r+');
  writeSync(fd, Buffer.from('this is no longer sqlite'), 0, 24, 0);
  closeSync(fd);
}

/** The documented line: the file, what SQLite said, the remedy; alone on stderr. */
function expectDamagedLine(result: { code: number | null; stdout: string; stderr: string }, path: string): void {
  expect(result.code, result.stderr).toBe(1);
  const lines = result.stderr.trim().split('\n');
  expect(lines, result.stderr).toHaveLength(1);
  const line = lines[0]!;
  const prefix = `bizops-sync: the mirror ${path} is damaged (`;
  expect(line.startsWith(prefix), line).toBe(true);
  expect(line.endsWith('); restore it from a backup, or move it away and run `bizops-sync backfill`'), line).toBe(true);
  expect(result.stdout).not.toMatch(/malformed|not a database/);
}

describe.concurrent('a damaged mirror found while working: the one documented line, exit 1', () => {
  it('changes: a corrupt header', async () => {
    const path = backfilledMirror('header.db');
    damageHeader(path);
    expectDamagedLine(await runCli(['changes'], env(path)), path);
  });

  it.each([
    ['changes', 'changes'],
    ['sync', 'transactions'],
    ['backfill', 'transactions'],
    ['sync', 'changes'],
    ['backfill', 'sync_state'],
  ])('%s: a damaged page of %s', async (command, table) => {
    const path = backfilledMirror(`${command}-${table}.db`);
    damageTable(path, table);
    // A change for the sync to write: a page that reads and writes the damaged table.
    if (command === 'sync') sim.world.churnTick(20);
    const args = command === 'backfill' ? ['backfill', '--no-progress'] : [command];
    expectDamagedLine(await runCli(args, env(path)), path);
  });
});
