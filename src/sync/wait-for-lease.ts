/**
 * A one-off run that waits for a stream another process holds (`--wait`: `backfill`, `sync`, a range
 * backfill, `verify --repair`), docs/operations.md "A one-off run beside the daemon (--wait)".
 *
 * While its attempts find the stream busy, the waiter holds a lease REQUEST for the stream
 * (`wait:stream:<stream>`, src/mirror/leases.ts `leaseRequestName`), renewed at every attempt and
 * expiring like any lease, so a killed waiter's request lapses within `sync.leaseSeconds`. A daemon
 * holding the stream sees it at its lease keeper's next round (a third of a lease), lets a run in
 * progress finish, releases the lease and does not take it back while the request lives; the waiter's
 * next attempt takes it (fence + 1) and runs. The request is released once the waiter ran (or gave up).
 * A second waiter finds the request held and waits behind the first.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../logging/index.ts';
import { leaseRequestName, streamLeaseName, type HeldLease, type Leases } from '../mirror/leases.ts';

/** Options of `attemptUntilFree`. */
export interface AttemptUntilFreeOptions<T> {
  /** The mirror's leases; their length is the request's. */
  leases: Leases;
  /** The stream waited for. */
  stream: string;
  /** The holder name the attempts take the stream's lease with (the request is held by the same name). */
  holder: string;
  /** One try of the run: takes the stream's lease itself, or reports it busy. */
  attempt: () => Promise<T>;
  /** Whether an attempt's result says the stream was busy (another holder's lease). */
  busy: (result: T) => boolean;
  /** Milliseconds between attempts; keep it under a third of the lease so the request stays live. */
  pollMs: number;
  /** Ends the wait: the last (busy) result is returned. */
  signal?: AbortSignal;
  logger: Logger;
}

/**
 * Runs `attempt`, and while it reports the stream busy, records a request for the stream's lease and
 * tries again every `pollMs` until it is not busy or `signal` aborts.
 * @returns the first result not busy, or the last busy one when `signal` aborted
 * @throws what `attempt` throws (the request is released first); a failure to write the request is
 *   logged and tried again at the next attempt
 */
export async function attemptUntilFree<T>(options: AttemptUntilFreeOptions<T>): Promise<T> {
  const { leases, stream, holder, attempt, busy, pollMs, signal, logger } = options;
  let result = await attempt();
  if (!busy(result) || signal?.aborted) return result;
  const requestName = leaseRequestName(streamLeaseName(stream));
  let request: HeldLease | undefined;
  let behindAnother = false;
  try {
    while (busy(result) && !signal?.aborted) {
      try {
        const asked = await leases.acquire(requestName, holder);
        if (asked?.taken) logger.info({ stream, request: requestName }, 'waiting for the stream\'s lease to be free (--wait): asked its holder to yield it');
        if (!asked && !request && !behindAnother) logger.info({ stream }, 'waiting for the stream behind another one-off run waiting for it (--wait)');
        behindAnother ||= !asked;
        request = asked?.lease ?? request;
      } catch (error) {
        logger.warn({ stream, err: { message: (error as Error).message } }, 'could not record the wait for the stream; trying again');
      }
      await sleep(pollMs, undefined, { signal }).catch(() => undefined);
      if (!signal?.aborted) result = await attempt();
    }
  } finally {
    if (request) await leases.release(request).catch(() => undefined);
  }
  return result;
}
