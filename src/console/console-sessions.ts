/**
 * Sign-in sessions of the operator console (docs/operations.md "Operator console"): a random id of
 * 32 bytes in an HttpOnly, SameSite=Strict cookie, the session itself kept in the daemon's memory
 * (nothing in the cookie but the id), expiring a fixed time after sign-in. Each session has its own
 * CSRF token, which every form that changes state carries. A restart of the daemon signs everyone out.
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
  /** Epoch ms after which the session is gone. */
  readonly expiresAt: number;
  /** A one-time message shown on the next page (the outcome of an action), then cleared. */
  notice?: { kind: 'ok' | 'error'; text: string };
}

/** Options of `ConsoleSessions`. */
export interface ConsoleSessionsOptions {
  /** How long a session lasts after sign-in, seconds. */
  seconds: number;
  /** Most sessions kept at once; the one expiring first is dropped past it. Default 1000. */
  max?: number;
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
  readonly #max: number;
  readonly #now: () => number;

  constructor(options: ConsoleSessionsOptions) {
    this.#seconds = options.seconds;
    this.#max = options.max ?? 1000;
    this.#now = options.now ?? Date.now;
  }

  /** How long a session lasts, seconds (the cookie's Max-Age). */
  get seconds(): number {
    return this.#seconds;
  }

  /** Starts a session (after the key was checked). */
  create(mayAct: boolean): ConsoleSession {
    this.#prune();
    const session: ConsoleSession = {
      id: randomBytes(32).toString('base64url'),
      csrfToken: randomBytes(32).toString('base64url'),
      mayAct,
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

  /** Drops the expired sessions, then the ones expiring first while there are too many. */
  #prune(): void {
    const now = this.#now();
    for (const [key, session] of this.#sessions) if (session.expiresAt <= now) this.#sessions.delete(key);
    // Insertion order is expiry order (a fixed lifetime from creation).
    for (const key of this.#sessions.keys()) {
      if (this.#sessions.size < this.#max) break;
      this.#sessions.delete(key);
    }
  }
}
