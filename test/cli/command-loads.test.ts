/**
 * A command loads only what it runs (docs/operations.md "Start-up"), now that jobs/ and cli/ reach
 * src/ through the folders' faces (docs/architecture.md "Folder faces"): a face that re-exported a
 * heavy part, or a logging library loaded with the face, would make every command that imports it
 * pay for it. Each command runs as a user runs it, and the npm packages it loaded are recorded.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openMirror } from '../../src/mirror/database.ts';
import { BIN, tempDir, type TempDir } from '../helpers.ts';

/** Libraries of the parts a reading command does not run: logging, HTTP client, Redis, queue, metrics, webhook signing. */
const WORKER_LIBRARIES = ['pino', 'undici', 'p-retry', 'ioredis', 'bullmq', 'prom-client', 'standardwebhooks'];
/** The mirror's drivers, which a command that opens no mirror does not need. */
const MIRROR_DRIVERS = ['better-sqlite3', 'pg'];
/** The tracing API: loaded by the parts that trace (the sync run, the write engine, the sinks), never by a command that runs none of them. */
const TRACING = ['@opentelemetry/api'];
/** The sync run (loaded by `sync`, `backfill`, `verify`, the daemon), which a reading command does not run. */
const SYNC_RUN = ['src/sync/stream-run.ts'];

let dir: TempDir;
beforeAll(() => {
  dir = tempDir('bizops-loads-');
  openMirror(dir.file('mirror.db')).close();
});
afterAll(() => dir.remove());

/** The npm packages and the src/ modules (`src/notify/index.ts`) `bizops-sync ...args` loaded, and its exit code. */
function packagesLoadedBy(args: string[]): { code: number | null; packages: string[]; stderr: string } {
  const record = dir.file(`packages-${args.join('-').replace(/\W+/g, '_')}.txt`);
  const hook = new URL('./fixtures/record-packages.mjs', import.meta.url).pathname;
  const result = spawnSync(process.execPath, ['--import', hook, BIN, ...args], {
    encoding: 'utf8',
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      RECORD_PACKAGES_TO: record,
      BIZOPS_DB: dir.file('mirror.db'),
      BIZOPS_BASE_URL: 'http://127.0.0.1:1',
      BIZOPS_TOKEN: 'tok_test_loads_0123456789',
      BIZOPS_COMPANY_ID: 'co_loads',
    },
  });
  return { code: result.status, packages: readFileSync(record, 'utf8').split('\n').filter(Boolean), stderr: result.stderr };
}

describe('what a command loads', () => {
  it.each([
    [['--help'], 0],
    [['config', 'check'], 0],
    [['sync', '--stream', 'nope'], 2],
  ])('bizops-sync %j loads neither the worker libraries nor a mirror driver nor more of src/notify/ than the event filter', (args, code) => {
    const loaded = packagesLoadedBy(args);
    expect(loaded.code, loaded.stderr).toBe(code);
    expect(loaded.packages).toContain('commander');
    expect(loaded.packages.filter((name) => [...WORKER_LIBRARIES, ...MIRROR_DRIVERS, ...TRACING].includes(name))).toEqual([]);
    // `config check` (and the daemon's start) checks the webhooks' and sinks' event patterns: the filter alone.
    expect(loaded.packages.filter((name) => name.startsWith('src/notify/') && name !== 'src/notify/event-filter/index.ts')).toEqual([]);
  });


  it.each([
    [['status'], 0],
    [['changes', '--since', '0'], 0],
    [['write', 'wr_missing'], 2],
    [['status', '--db', '/nonexistent/mirror.db'], 1],
  ])('bizops-sync %j reads the SQLite mirror without the worker libraries nor the PostgreSQL driver', (args, code) => {
    const loaded = packagesLoadedBy(args);
    expect(loaded.code, loaded.stderr).toBe(code);
    expect(loaded.packages).toContain('better-sqlite3');
    expect(loaded.packages.filter((name) => [...WORKER_LIBRARIES, ...TRACING, ...SYNC_RUN, 'pg'].includes(name))).toEqual([]);
  });
});
