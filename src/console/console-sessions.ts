/**
 * Sign-in sessions of the operator console (docs/operations.md "Operator console"): a random id of
 * 32 bytes in an HttpOnly, SameSite=Strict cookie, the session itself kept in the daemon's memory
 * (nothing in the cookie but the id), expiring a fixed time after sign-in. Each session has its own
 * CSRF token, which every form that changes state carries. A restart of the daemon signs everyone out.
 *
 * Sessions are capped per key and per address: the read key's sessions and the write key's are
 * counted apart (at most `maxPerKey` each), and within each, one address (`addressKey`: an IPv4
 * address, an IPv6 /64) holds at most `maxPerAddress`. Past a cap, the session of that key (and
 * address) expiring first is dropped: a flood of sign-ins with the read key, from one address or
 * many, signs out only read-key sessions, never the write-key operator.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** One signed-in browser. */
export interface ConsoleSession {
  /** The cookie's value (never logged, never rendered). */
  readonly id: string;
  /** The token the session's forms carry (hidden field `csrf`). */
  readonly csrfToken: string;
  /** True when the write key was given at sign-in: the action buttons (replay, enable) work. */
  readonly mayAct: boolean;
  /** The address it signed in from (`addressKey`), for the per-address cap. */
  readonly address: string;
  /** Epoch ms after which the session is gone. */
  readonly expiresAt: number;
  /** A one-time message shown on the next page (the outcome of an action), then cleared. */
  notice?: { kind: 'ok' | 'error'; text: string };
}

/** Options of `ConsoleSessions`. */
export interface ConsoleSessionsOptions {
  /** How long a session lasts after sign-in, seconds. */
  seconds: number;
  /** Most sessions of one key (read or write) kept at once; past it that key's session expiring first is dropped. Default 500. */
  maxPerKey?: number;
  /** Most sessions of one key from one address; past it that address's session of the key expiring first is dropped. Default 20. */
  maxPerAddress?: number;
  /** The clock (tests). Default Date.now. */
  now?: () => number;
}

/** SHA-256 of a secret value, as the map's key and for constant-time comparison. */
function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** True when `presented` equals `expected`, compared in constant time (no length leak). */
export function secretEquals(presented: string, expected: string): boolean {
  return timingSafeEqual(digest(presented), digest(expected));
}

/** The sessions of one daemon, in memory. */
export class ConsoleSessions {
  readonly #sessions = new Map<string, ConsoleSession>();
  readonly #seconds: number;
  readonly #maxPerKey: number;
  readonly #maxPerAddress: number;
  readonly #now: () => number;

  constructor(options: ConsoleSessionsOptions) {
    this.#seconds = options.seconds;
    this.#maxPerKey = options.maxPerKey ?? 500;
    this.#maxPerAddress = options.maxPerAddress ?? 20;
    this.#now = options.now ?? Date.now;
  }

  /** How long a session lasts, seconds (the cookie's Max-Age). */
  get seconds(): number {
    return this.#seconds;
  }

  /**
   * Starts a session (after the key was checked), dropping first the expired ones and, past a cap,
   * the one of the same key (and address) expiring first (module header).
   * @param address where the browser signed in from (`addressKey`)
   */
  create(mayAct: boolean, address = 'unknown'): ConsoleSession {
    this.#prune(mayAct, address);
    const session: ConsoleSession = {
      id: randomBytes(32).toString('base64url'),
      csrfToken: randomBytes(32).toString('base64url'),
      mayAct,
      address,
      expiresAt: this.#now() + this.#seconds * 1000,
    };
    this.#sessions.set(digest(session.id).toString('hex'), session);
    return session;
  }

  /** The live session with this id, or undefined (unknown, or expired: then forgotten). */
  get(id: string | undefined): ConsoleSession | undefined {
    if (!id) return undefined;
    const key = digest(id).toString('hex');
    const session = this.#sessions.get(key);
    if (!session) return undefined;
    if (session.expiresAt <= this.#now()) {
      this.#sessions.delete(key);
      return undefined;
    }
    return session;
  }

  /** Ends a session (sign-out). */
  delete(id: string): void {
    this.#sessions.delete(digest(id).toString('hex'));
  }

  /**
   * Drops the expired sessions, then makes room for one more session of this key from this
   * address: the ones of the key from the address expiring first past `maxPerAddress`, then the
   * ones of the key expiring first past `maxPerKey`. The other key's sessions are never dropped.
   */
  #prune(mayAct: boolean, address: string): void {
    const now = this.#now();
    // Insertion order is expiry order (a fixed lifetime from creation).
    const sameKey: string[] = [];
    const sameAddress: string[] = [];
    for (const [key, session] of this.#sessions) {
      if (session.expiresAt <= now) this.#sessions.delete(key);
      else if (session.mayAct === mayAct) {
        sameKey.push(key);
        if (session.address === address) sameAddress.push(key);
      }
    }
    const dropped = new Set<string>();
    for (let index = 0; index <= sameAddress.length - this.#maxPerAddress; index += 1) dropped.add(sameAddress[index]!);
    for (let index = 0, left = sameKey.length - dropped.size; left >= this.#maxPerKey && index < sameKey.length; index += 1) {
      if (dropped.has(sameKey[index]!)) continue;
      dropped.add(sameKey[index]!);
      left -= 1;
    }
    for (const key of dropped) this.#sessions.delete(key);
  }
}
