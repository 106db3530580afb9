/**
 * A command loads only what it runs (docs/operations.md "Start-up"), now that jobs/ and cli/ reach
 * src/ through the folders' faces (docs/architecture.md "Folder faces"): a face that re-exported a
 * heavy part, or a logging library loaded with the face, would make every command that imports it
 * pay for it. Each command runs as a user runs it, and the npm packages it loaded are recorded.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openMirror } from '../../src/mirror/database.ts';
import { BIN, simulator, tempDir, type TempDir } from '../helpers.ts';

/** Libraries of the parts a reading command does not run: logging, HTTP client, Redis, queue, metrics, webhook signing. */
const WORKER_LIBRARIES = ['pino', 'undici', 'p-retry', 'ioredis', 'bullmq', 'prom-client', 'standardwebhooks'];
/** The mirror's drivers, which a command that opens no mirror does not need. */
const MIRROR_DRIVERS = ['better-sqlite3', 'pg'];
/** The tracing API: loaded by the parts that trace (the sync run, the write engine, the sinks), never by a command that runs none of them. */
const TRACING = ['@opentelemetry/api'];
/** The sync run (loaded by `sync`, `backfill`, `verify`, the daemon), which a reading command does not run. */
const SYNC_RUN = ['src/sync/stream-run.ts'];
/**
 * What a one-off `sync` or `backfill` runs without (docs/operations.md "Start-up"): the schedules'
 * library (its configuration's cron expressions are checked without it), the tracing API (no OTLP
 * endpoint set), the write queue, the metrics, the webhook signing; and at BIZOPS_LOG_LEVEL=warn,
 * where a run that goes well writes no line, pino (loaded with the first line written).
 */
const NOT_IN_A_ONE_OFF_RUN = ['node-cron', ...TRACING, 'bullmq', 'prom-client', 'standardwebhooks', 'pino'];

let dir: TempDir;
beforeAll(() => {
  dir = tempDir('bizops-loads-');
  openMirror(dir.file('mirror.db')).close();
});
afterAll(() => dir.remove());

/**
 * The npm packages and the src/ modules (`src/notify/index.ts`) `bizops-sync ...args` loaded, and its
 * exit code. `env` adds to (or replaces) the environment's variables: the API at 127.0.0.1:1 by default.
 */
async function packagesLoadedBy(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; packages: string[]; stderr: string }> {
  const record = dir.file(`packages-${args.join('-').replace(/\W+/g, '_')}.txt`);
  const hook = new URL('./fixtures/record-packages.mjs', import.meta.url).pathname;
  const child = spawn(process.execPath, ['--import', hook, BIN, ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      RECORD_PACKAGES_TO: record,
      BIZOPS_DB: dir.file('mirror.db'),
      BIZOPS_BASE_URL: 'http://127.0.0.1:1',
      BIZOPS_TOKEN: 'tok_test_loads_0123456789',
      BIZOPS_COMPANY_ID: 'co_loads',
      ...env,
    },
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, packages: readFileSync(record, 'utf8').split('\n').filter(Boolean), stderr };
}

describe('what a command loads', () => {
  it.each([
    [['--help'], 0],
    [['config', 'check'], 0],
    [['sync', '--stream', 'nope'], 2],
  ])('bizops-sync %j loads neither the worker libraries nor a mirror driver nor more of src/notify/ than the event filter', async (args, code) => {
    const loaded = await packagesLoadedBy(args);
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
  ])('bizops-sync %j reads the SQLite mirror without the worker libraries nor the PostgreSQL driver', async (args, code) => {
    const loaded = await packagesLoadedBy(args);
    expect(loaded.code, loaded.stderr).toBe(code);
    expect(loaded.packages).toContain('better-sqlite3');
    expect(loaded.packages.filter((name) => [...WORKER_LIBRARIES, ...TRACING, ...SYNC_RUN, 'pg'].includes(name))).toEqual([]);
  });

  it.each([
    [['status'], 'src/notify/pull/consumer-listing.ts'],
    [['changes', '--since', '0'], 'src/notify/changelog-reader.ts'],
  ])('bizops-sync %j loads neither the HTTP pull API (its routes\' schemas, the page reader) nor the event schemas and write kinds behind it', async (args, used) => {
    const loaded = await packagesLoadedBy(args);
    expect(loaded.code, loaded.stderr).toBe(0);
    // It read what it shows: the consumers' listing (status), the changelog (changes).
    expect(loaded.packages).toContain(used);
    expect(loaded.packages.filter((name) => ['src/notify/pull/consumers.ts', 'src/notify/pull/changes-page.ts', 'src/notify/event-schemas.ts', 'src/writes/kinds/index.ts', 'src/http/route.ts'].includes(name))).toEqual([]);
  });
});

describe('what a one-page sync loads', () => {
  it.each([['sync'], ['backfill']])(
    'bizops-sync %s --stream deals against the simulator, with the schedules of config/bizops-sync.json, loads none of the daemon\'s libraries, nor the tracing API, nor pino at level warn',
    async (command) => {
      const sim = await simulator({ rateLimit: false, size: { transactions: 5, deals: 5, onboardings: 2 } });
      try {
        const loaded = await packagesLoadedBy([command, '--stream', 'deals', '--no-progress', '--db', dir.file(`one-page-${command}.db`)], {
          BIZOPS_BASE_URL: sim.url,
          BIZOPS_TOKEN: String(sim.tokens.admin),
          BIZOPS_CONFIG: new URL('../../config/bizops-sync.json', import.meta.url).pathname,
          BIZOPS_LOG_LEVEL: 'warn',
          ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
        });
        expect(loaded.code, loaded.stderr).toBe(0);
        // It ran: the page came through the HTTP client into the mirror.
        expect(loaded.packages).toEqual(expect.arrayContaining(['undici', 'better-sqlite3', 'src/sync/stream-run.ts']));
        expect(loaded.packages.filter((name) => NOT_IN_A_ONE_OFF_RUN.includes(name))).toEqual([]);
        expect(sim.requests.some((request) => request.path.startsWith('/api/public/v1/deals'))).toBe(true);
      } finally {
        await sim.close();
      }
    },
  );

  it('bizops-sync sync --stream deals compiles none of Node\'s own modules from source: no V8 flag changes the flag hash during its start-up', async () => {
    // A V8 flag set as the command starts (--heap-growing-percent) made V8 reject the code cache Node
    // ships for its built-in modules (node:http2, node:crypto, ...): Node says so under NODE_DEBUG_NATIVE=CODE_CACHE.
    const sim = await simulator({ rateLimit: false, size: { transactions: 5, deals: 5, onboardings: 2 } });
    try {
      const loaded = await packagesLoadedBy(['sync', '--stream', 'deals', '--no-progress', '--db', dir.file('code-cache.db')], {
        BIZOPS_BASE_URL: sim.url,
        BIZOPS_TOKEN: String(sim.tokens.admin),
        BIZOPS_LOG_LEVEL: 'warn',
        NODE_DEBUG_NATIVE: 'CODE_CACHE',
        ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
      });
      expect(loaded.code, loaded.stderr).toBe(0);
      // Node's debug lines are there (the check would pass vacuously otherwise), the built-ins the run loads among them.
      expect(loaded.stderr).toMatch(/Code cache of http2 \S+ is accepted/);
      expect(loaded.stderr.split('\n').filter((line) => / is rejected$/.test(line))).toEqual([]);
    } finally {
      await sim.close();
    }
  });
});
