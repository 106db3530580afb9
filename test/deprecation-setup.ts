/**
 * Setup of every test project (vitest.config.ts): a `DeprecationWarning` raised by a call from the
 * project's own code (a frame of src/, jobs/, cli/ or packages/ in the warning's stack, not only
 * node_modules) fails the test it happened in. Such a warning announces a break with the library's
 * next major version (node-postgres: "Calling client.query() when the client is already executing a
 * query is deprecated", sent for a query issued on a busy client), and Node prints it once per
 * process, easy to miss. Deprecations that libraries raise from their own calls are left alone.
 */
import { afterAll, afterEach, expect } from 'vitest';

/** A path of the project's own code, outside node_modules. */
const OWN_FRAME = /\/(src|jobs|cli|bin|packages\/[^/]+\/src)\/[^\s:)]+\.(ts|js|mjs)/;

/**
 * The warnings not yet checked, one list per process: the test files of a worker that does not
 * isolate them (vitest.config.ts `isolate: false`) run this file each, in one global scope, so the
 * listener is added once and every file reads the same list.
 */
const WARNINGS = Symbol.for('bizops-sync.test.deprecations');
const shared = globalThis as typeof globalThis & { [WARNINGS]?: string[] };
const raised: string[] = shared[WARNINGS] ?? listen((shared[WARNINGS] = []));

function listen(list: string[]): string[] {
  process.on('warning', (warning) => {
    if (warning.name !== 'DeprecationWarning') return;
    const frames = (warning.stack ?? '').split('\n').slice(1);
    const own = frames.find((frame) => OWN_FRAME.test(frame) && !frame.includes('/node_modules/'));
    if (own) list.push(`${warning.message} (called from ${own.trim()})`);
  });
  return list;
}

/** Fails when a warning arrived since the last check. Node emits a warning on the next tick after the call: let it arrive first. */
async function noDeprecations(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  expect(raised.splice(0), "DeprecationWarning from the project's own calls").toEqual([]);
}

afterEach(noDeprecations);
// A warning emitted after the file's last test (by its after-hooks' closing work) too.
afterAll(noDeprecations);
