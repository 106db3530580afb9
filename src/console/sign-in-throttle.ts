/**
 * Wrong keys at the console's sign-in (docs/operations.md "Operator console"): throttled per address
 * and for everyone, with a growing delay, so that guessing the read or write key through the form
 * runs at a few tries an hour instead of thousands a second, and the log gets one line per burst
 * instead of one per guess.
 *
 * - Per address (`addressKey`: an IPv4 address, an IPv6 /64): the first `freeFailures` wrong keys
 *   are answered at once; each later one pauses the address's sign-ins for `baseDelayMs`, doubled
 *   for every wrong key after it, at most `maxDelayMs`. A sign-in during a pause is refused
 *   unchecked (429): its key is not even compared, so it is no guess. The right key ends the
 *   address's count; an address without a wrong key for `forgetMs` is forgotten.
 * - For everyone: the same with `globalFreeFailures`, `globalMaxDelayMs` and `globalForgetMs`,
 *   counting every address's wrong keys, against guesses spread over many addresses. While it
 *   pauses sign-ins, sessions already open, bearer-key scripts, `/readyz` and the API go on.
 *
 * `failed` says when a burst starts (the first wrong key of an address, or of everyone, since it
 * was forgotten): the console logs that one line. In memory; a restart forgets every count.
 */

/** Options of `SignInThrottle` (ms and counts). */
export interface SignInThrottleOptions {
  /** Wrong keys an address may give before its sign-ins pause. Default 5. */
  freeFailures?: number;
  /** The first pause, ms; doubled for every further wrong key. Default 1000. */
  baseDelayMs?: number;
  /** Longest pause of one address, ms. Default 15 minutes. */
  maxDelayMs?: number;
  /** An address without a wrong key this long is forgotten, ms. Default 1 hour. */
  forgetMs?: number;
  /** Wrong keys from all addresses together before everyone's sign-ins pause. Default 100. */
  globalFreeFailures?: number;
  /** Longest pause of everyone's sign-ins, ms. Default 1 minute. */
  globalMaxDelayMs?: number;
  /** Everyone's count is forgotten after this long without a wrong key, ms. Default 10 minutes. */
  globalForgetMs?: number;
  /** Most addresses remembered; past it the one quiet longest is forgotten. Default 10,000. */
  maxAddresses?: number;
  /** The clock, epoch ms (tests). Default Date.now. */
  now?: () => number;
}

/** May a sign-in from an address be checked now? */
export type SignInVerdict = { allowed: true } | { allowed: false; retryAfterMs: number; scope: 'address' | 'everyone' };

/** What one wrong key did: whether it started a burst (log it), and the pause it set, if any. */
export interface SignInFailure {
  /** The first wrong key from this address since it was forgotten: log this one. */
  addressBurstStarted: boolean;
  /** The wrong key that made everyone's sign-ins pause, the first time since the count was forgotten: log this one. */
  globalPauseStarted: boolean;
  /** The address's wrong keys in its current burst. */
  failures: number;
  /** How long the address's sign-ins now pause, ms (0: none yet). */
  pauseMs: number;
}

/** One counted party: an address, or everyone. */
interface Count {
  failures: number;
  lastFailureAt: number;
  pausedUntil: number;
}

/**
 * The key an address is counted under: an IPv4 address as is (an IPv4-mapped IPv6 one too), an
 * IPv6 address by its /64 prefix (one host holds a whole /64), `unknown` when the socket has none.
 */
export function addressKey(remote: string | undefined): string {
  if (!remote) return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(remote);
  if (mapped) return mapped[1]!;
  if (!remote.includes(':')) return remote;
  const [head = '', tail = ''] = remote.toLowerCase().split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === '' ? [] : tail.split(':');
  const groups = remote.includes('::') ? [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right] : left;
  return `${groups
    .slice(0, 4)
    .map((group) => group.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/** The growing pause after `failures` wrong keys: none up to `free`, then `base` doubled per further one, at most `max`, ms. */
function pauseFor(failures: number, free: number, base: number, max: number): number {
  if (failures <= free) return 0;
  return Math.min(max, base * 2 ** Math.min(failures - free - 1, 40));
}

/** The console's sign-in throttle (module header), in memory. */
export class SignInThrottle {
  readonly #addresses = new Map<string, Count>();
  #everyone: Count = { failures: 0, lastFailureAt: Number.NEGATIVE_INFINITY, pausedUntil: 0 };
  readonly #free: number;
  readonly #base: number;
  readonly #max: number;
  readonly #forget: number;
  readonly #globalFree: number;
  readonly #globalMax: number;
  readonly #globalForget: number;
  readonly #maxAddresses: number;
  readonly #now: () => number;

  constructor(options: SignInThrottleOptions = {}) {
    this.#free = options.freeFailures ?? 5;
    this.#base = options.baseDelayMs ?? 1000;
    this.#max = options.maxDelayMs ?? 15 * 60_000;
    this.#forget = options.forgetMs ?? 60 * 60_000;
    this.#globalFree = options.globalFreeFailures ?? 100;
    this.#globalMax = options.globalMaxDelayMs ?? 60_000;
    this.#globalForget = options.globalForgetMs ?? 10 * 60_000;
    this.#maxAddresses = options.maxAddresses ?? 10_000;
    this.#now = options.now ?? Date.now;
  }

  /** Whether a sign-in from `address` (`addressKey`) may be checked now; when not, for how long. */
  check(address: string): SignInVerdict {
    const now = this.#now();
    const own = this.#current(address, now);
    const ownWait = own ? own.pausedUntil - now : 0;
    const everyoneWait = this.#currentEveryone(now).pausedUntil - now;
    if (ownWait <= 0 && everyoneWait <= 0) return { allowed: true };
    return ownWait >= everyoneWait ? { allowed: false, retryAfterMs: ownWait, scope: 'address' } : { allowed: false, retryAfterMs: everyoneWait, scope: 'everyone' };
  }

  /** Counts a wrong key from `address`; see `SignInFailure`. */
  failed(address: string): SignInFailure {
    const now = this.#now();
    const previous = this.#current(address, now);
    const count: Count = previous ?? { failures: 0, lastFailureAt: now, pausedUntil: 0 };
    count.failures += 1;
    count.lastFailureAt = now;
    const pauseMs = pauseFor(count.failures, this.#free, this.#base, this.#max);
    count.pausedUntil = now + pauseMs;
    // Re-inserted: the map's order is the order of last wrong keys, oldest first.
    this.#addresses.delete(address);
    this.#addresses.set(address, count);
    for (const oldest of this.#addresses.keys()) {
      if (this.#addresses.size <= this.#maxAddresses) break;
      this.#addresses.delete(oldest);
    }
    const everyone = this.#currentEveryone(now);
    const wasPaused = everyone.failures > this.#globalFree;
    everyone.failures += 1;
    everyone.lastFailureAt = now;
    everyone.pausedUntil = now + pauseFor(everyone.failures, this.#globalFree, this.#base, this.#globalMax);
    return { addressBurstStarted: previous === undefined, globalPauseStarted: !wasPaused && everyone.failures > this.#globalFree, failures: count.failures, pauseMs };
  }

  /** The right key from `address`: its count ends (everyone's stays). */
  succeeded(address: string): void {
    this.#addresses.delete(address);
  }

  /** The address's count, or undefined when it has none or it was forgotten. */
  #current(address: string, now: number): Count | undefined {
    const count = this.#addresses.get(address);
    if (count && now - count.lastFailureAt >= this.#forget && now >= count.pausedUntil) {
      this.#addresses.delete(address);
      return undefined;
    }
    return count;
  }

  /** Everyone's count, started afresh when it was quiet for `globalForgetMs`. */
  #currentEveryone(now: number): Count {
    if (now - this.#everyone.lastFailureAt >= this.#globalForget && now >= this.#everyone.pausedUntil) this.#everyone = { failures: 0, lastFailureAt: Number.NEGATIVE_INFINITY, pausedUntil: 0 };
    return this.#everyone;
  }
}
