/**
 * Setup of the `postgres` test project (vitest.config.ts): drops the PostgreSQL schemas the test
 * helpers handed out (test/test-mirror.ts): those asked for during a test after it, those asked for
 * in a `beforeAll` after the file. Registered before the test files' own hooks, so the after-hooks
 * run after theirs (vitest runs after-hooks last registered first): the contexts and connections a
 * test file closes are closed by then. The drops share one admin connection per file, ended after it.
 */
import { afterAll, afterEach, beforeEach } from 'vitest';
import { closeTestServer, dropTestMirrors, markTest } from './test-mirror.ts';

beforeEach(() => markTest(true));
afterEach(async () => {
  markTest(false);
  await dropTestMirrors('test');
});
afterAll(async () => {
  try {
    await dropTestMirrors('file');
  } finally {
    await closeTestServer();
  }
});
