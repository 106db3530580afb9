/**
 * `describe` and `it` for the SQLite project only: tests of the command line, the configuration or
 * a broker, not of the mirror, which the `postgres` project would only repeat. On PostgreSQL they are
 * not registered at all (neither run nor reported as skipped).
 */
import { describe, it } from 'vitest';
import { TEST_MIRROR_BACKEND } from './test-mirror.ts';

/** `describe`, registered in the SQLite project only. */
export const describeOnSqlite: typeof describe = TEST_MIRROR_BACKEND === 'postgres' ? ((() => undefined) as unknown as typeof describe) : describe;

/** `it`, registered in the SQLite project only. */
export const itOnSqlite: typeof it = TEST_MIRROR_BACKEND === 'postgres' ? ((() => undefined) as unknown as typeof it) : it;
