import { readFileSync, statfsSync } from 'node:fs';
import { defineConfig } from 'vitest/config';
import LongestFirstSequencer from './test/sequencer.ts';

/**
 * The tests' temporary files (SQLite mirrors, Chromium profiles, their own PostgreSQL and RabbitMQ
 * data directories) go to a RAM file system when the machine has one with room: Linux's /dev/shm,
 * a tmpfs mounted without noexec (a test runs a program from its temp dir) with at least 2 GiB free
 * (a container's default 64 MB is too small). Nothing there waits on the disk: a new mirror file
 * took 8-11 ms there against 22-29 ms in /tmp with another process's database writing to the disk.
 * An explicit TMPDIR wins (`TMPDIR=/tmp npm test` keeps them on the disk). The test workers inherit
 * it; the commands they start get their own environment.
 */
function ramTempDir(): string | undefined {
  try {
    const mount = readFileSync('/proc/mounts', 'utf8').split('\n').find((line) => line.split(' ')[1] === '/dev/shm');
    const [, , type, flags = ''] = mount?.split(' ') ?? [];
    if (type !== 'tmpfs' || flags.split(',').includes('noexec') || flags.split(',').includes('ro')) return undefined;
    const { bavail, bsize } = statfsSync('/dev/shm');
    return bavail * bsize >= 2 * 1024 ** 3 ? '/dev/shm' : undefined;
  } catch {
    return undefined;
  }
}
if (!process.env.TMPDIR) {
  const dir = ramTempDir();
  if (dir) process.env.TMPDIR = dir;
}

/** The suites that run against PostgreSQL too: every mirror contract they test holds on both back ends. */
const BOTH_BACK_ENDS = [
  'test/sync/**/*.test.ts',
  'test/notify/**/*.test.ts',
  'test/writes/**/*.test.ts',
  // verify keeps its scratch list in the mirror's database (verify_listed): both back ends.
  'test/jobs/verify.test.ts',
  // What status reads of the daemons serving a mirror (the `daemons` table): both back ends.
  'test/status/**/*.test.ts',
];

/**
 * Tests of those suites that run in the `sqlite` project only:
 * - test/writes/redis-down.test.ts: runs the CLI on a mirror file and reads the file with
 *   better-sqlite3 to show nothing was stored, and re-runs test/writes/http.test.ts in a child vitest;
 * - the files that open no mirror at all (a pure function, the webhook signer, the Redis rate
 *   budget, the sinks' opening and closing against their brokers): on PostgreSQL they would run the
 *   same code a second time.
 */
const SQLITE_ONLY = [
  'test/writes/redis-down.test.ts',
  'test/writes/redis-rate-budget.test.ts',
  'test/sync/read-ahead.test.ts',
  'test/sync/scan-check.test.ts',
  'test/notify/delivery.test.ts',
  'test/notify/signing.test.ts',
  'test/notify/rabbitmq-open.test.ts',
  'test/notify/sink-close.test.ts',
];

/**
 * The `streams` project: two throwaway streams registered (test/streams/throwaway-setup.ts) and the
 * tests that cover every stream run over them unedited: a new stream is its definition, its registry
 * line and its simulator declaration (docs/adding-a-stream.md).
 */
const WITH_THROWAWAY_STREAMS = ['test/streams/**/*.test.ts', 'test/notify/event-schemas.test.ts'];

export default defineConfig({
  test: {
    // A hang guard, not a speed check: a test that spawns the CLI several times took over 30 s on a
    // 2-core machine running five other busy processes (load average 10); none waits on time.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Test files start their own simulator on port 0 and their own mirrors (a SQLite file, a
    // PostgreSQL schema), so they can run in parallel. Three workers for both projects together on a
    // 2-core machine. 1,091 tests in a fresh clone's CI run: 169 s on a machine where `node -e 0`
    // costs 10 ms of CPU; 398-413 s on one where it costs 70-85 ms (a VM slow at starting processes
    // and at page faults: the suite is CPU-bound there, about 720 CPU-seconds on 2 cores, a third of
    // it in the commands and worker processes the tests start, a quarter in PostgreSQL's backends);
    // 603 s there with two CPU-burning processes beside it. Four workers on that machine: 461 s
    // against 398 s (more processes fighting for 2 CPUs); at a load of 27 on another, five tests ran
    // past their 60 s hang guard. 1,113 tests: 352 s on a machine where `node -e 0` costs 40-50 ms
    // (process accounting: the 326 commands and workers the tests start used about 0.95 s of CPU
    // each, 308 of the node processes' 461 CPU-seconds; PostgreSQL 91), 516 s with two CPU burners
    // beside it; four workers there 341 s.
    pool: 'forks',
    maxWorkers: 3,
    // The long files first, whatever their project, then the short ones project by project (test/sequencer.ts).
    sequence: { sequencer: LongestFirstSequencer },
    // A PostgreSQL database of the run's own, dropped at the end (test/postgres-database.ts); at the
    // end, the Redis keys of the simulators the tests started and closed (test/redis-leftovers.ts).
    globalSetup: ['test/postgres-database.ts', 'test/redis-leftovers.ts'],
    projects: [
      {
        extends: true,
        test: {
          // Every test on SQLite (the default back end). The workspace packages' own tests
          // (packages/simulator/test) run with the product's.
          name: 'sqlite',
          // One worker runs file after file without reloading the modules they share (a third of a
          // short file's CPU time): no test file mocks a module, stubs a global or changes
          // process.env, and every test starts its own simulator, mirror and Redis prefix. The setup
          // files run again for each file (test/deprecation-setup.ts adds its listener once).
          isolate: false,
          include: ['test/**/*.test.ts', 'packages/*/test/**/*.test.ts'],
          // The `streams` project runs these, with the throwaway streams beside the registered ones.
          exclude: WITH_THROWAWAY_STREAMS,
          // A DeprecationWarning from the project's own calls fails its test (test/deprecation-setup.ts).
          setupFiles: ['test/deprecation-setup.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'streams',
          // Isolated: the throwaway streams registered by its setup must not reach another file.
          include: WITH_THROWAWAY_STREAMS,
          setupFiles: ['test/deprecation-setup.ts', 'test/streams/throwaway-setup.ts'],
        },
      },
      {
        extends: true,
        test: {
          // The sync, notify and writes suites again with every mirror in a fresh PostgreSQL schema
          // (test/test-mirror.ts) of the run's own database on the server of BIZOPS_TEST_POSTGRES_URL
          // (default postgres://postgres@127.0.0.1:5432/postgres; test/postgres-database.ts).
          name: 'postgres',
          isolate: false,
          include: BOTH_BACK_ENDS,
          exclude: SQLITE_ONLY,
          env: { BIZOPS_TEST_MIRROR: 'postgres' },
          setupFiles: ['test/deprecation-setup.ts', 'test/postgres-setup.ts'],
        },
      },
    ],
  },
});
