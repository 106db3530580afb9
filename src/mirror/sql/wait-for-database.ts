/**
 * Waiting for the mirror's database when it is away for a while (a PostgreSQL failover or restart,
 * a connection pooler restarting, an administrator ending sessions): work that failed with
 * `DatabaseUnavailableError` (src/mirror/sql/executor.ts) is tried again, with a growing pause
 * (p-retry: 250 ms doubling up to 5 s, jittered), until it succeeds or `waitMs` has passed since
 * the first failure; then the last error is thrown. Any other error is thrown at once.
 *
 * Only for work that may run twice: a transaction that failed rolled back, but one whose COMMIT was
 * cut off may have committed. The sync engine's page commits are such work (a page applied again
 * finds its records' hashes stored and changes nothing; docs/sync.md "When the database goes away").
 */
import pRetry from 'p-retry';
import { DatabaseUnavailableError } from './executor.ts';

/** Options of `whileDatabaseAway`. */
export interface DatabaseWaitOptions {
  /** How long to keep trying after the first failure, ms; 0 tries once. */
  waitMs: number;
  /** Stops waiting (the abort's reason is thrown). */
  signal?: AbortSignal;
  /** Called on each failure that will be tried again (for a log line), with the pause before the next try, ms. */
  onWait?: (error: DatabaseUnavailableError, attempt: number, delayMs: number) => void;
}

/**
 * Runs `work`, trying again while it fails with `DatabaseUnavailableError`, for at most
 * `options.waitMs` (module comment).
 * @throws the last DatabaseUnavailableError when the database did not come back in time; any other
 *   error of `work` at once
 */
export async function whileDatabaseAway<T>(work: () => Promise<T>, options: DatabaseWaitOptions): Promise<T> {
  if (options.waitMs <= 0) return work();
  return pRetry(work, {
    retries: Number.POSITIVE_INFINITY,
    maxRetryTime: options.waitMs,
    minTimeout: 250,
    maxTimeout: 5_000,
    factor: 2,
    randomize: true,
    signal: options.signal,
    // Anything but a database away for now ends the waiting at once.
    shouldRetry: ({ error }) => error instanceof DatabaseUnavailableError,
    onFailedAttempt: ({ error, attemptNumber, retryDelay }) => {
      if (error instanceof DatabaseUnavailableError && retryDelay > 0) options.onWait?.(error, attemptNumber, retryDelay);
    },
  });
}
