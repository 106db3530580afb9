/**
 * Setup of the `postgres` test project (vitest.config.ts): drops the PostgreSQL schemas the test
 * helpers handed out (test/test-mirror.ts) after each test. Registered before the test files' own
 * hooks, so it runs after them (vitest runs after-hooks last registered first): the contexts and
 * connections a test file closes are closed by then.
 */
import { afterEach } from 'vitest';
import { dropTestMirrors } from './test-mirror.ts';

afterEach(dropTestMirrors);
