/**
 * Fault injection for tests: the next matching request(s) get a failure instead of (or on top of)
 * the normal answer. Faults are checked in the order injected; each applies `times` times (default 1).
 */

/** Which requests a fault applies to; omitted members match every request. */
export interface FaultMatch {
  /** HTTP method, case-insensitive. */
  method?: string;
  /**
   * A string matches the pathname exactly, with or without the `/api/public/v1` prefix
   * (`/transactions` or `/api/public/v1/transactions`). A RegExp is tested against both forms.
   */
  path?: string | RegExp;
}

interface FaultBase {
  match?: FaultMatch;
  /** How many requests it applies to; default 1. */
  times?: number;
}

/** The fault kinds (see FaultInjector). */
export type FaultKind =
  /** Answer with this status (default body `{ message }`), before the handler runs; consumes no budget. */
  | { kind: 'status'; status: number; body?: unknown; headers?: Record<string, string> }
  /** 429 with `Retry-After` verbatim ('2' or an HTTP date) and body `{ message, err, retryAfter }` (seconds). */
  | { kind: 'rate-limit'; retryAfter: string }
  /** Send status, headers and part of the body, then destroy the socket. The handler runs (a write commits). */
  | { kind: 'reset-mid-body' }
  /** 200 with a truncated, invalid JSON body. The handler runs. */
  | { kind: 'malformed-json' }
  /** 200 whose first item (or single record) has `id` as a number instead of a string. The handler runs. */
  | { kind: 'invalid-record' }
  /** Perform the request (the write commits), then destroy the socket without answering. */
  | { kind: 'lose-response-after-commit' }
  /** Delay the response by `ms` (on top of `latencyMs`). */
  | { kind: 'latency'; ms: number }
  /** Destroy the socket immediately, before reading or processing the request. */
  | { kind: 'refuse' }
  /**
   * A commit the client never hears of in time: hold the request until the CLIENT closes the
   * connection (its timeout), wait `ms` more (default 0), then run the handler (the write commits);
   * nobody is left to read the answer.
   */
  | { kind: 'slow-commit'; ms?: number };

/** A fault to inject: one `FaultKind`, which requests it matches, and how many times it applies. */
export type Fault = FaultBase & FaultKind;

const API_PREFIX = '/api/public/v1';

function matches(fault: Fault, method: string, pathname: string): boolean {
  const match = fault.match;
  if (!match) return true;
  if (match.method && match.method.toUpperCase() !== method.toUpperCase()) return false;
  if (match.path === undefined) return true;
  const relative = pathname.startsWith(API_PREFIX) ? pathname.slice(API_PREFIX.length) || '/' : pathname;
  if (typeof match.path === 'string') {
    return match.path === pathname || match.path === relative;
  }
  match.path.lastIndex = 0;
  if (match.path.test(pathname)) return true;
  match.path.lastIndex = 0;
  return match.path.test(relative);
}

/** The pending faults of one simulator, checked in injection order against each API request. */
export class FaultInjector {
  private readonly pending: { fault: Fault; remaining: number }[] = [];

  /**
   * Queues a fault for the next matching request(s).
   * @throws Error when the kind is unknown or `times` is not a positive integer
   */
  inject(fault: Fault): void {
    const kinds = ['status', 'rate-limit', 'reset-mid-body', 'malformed-json', 'invalid-record', 'lose-response-after-commit', 'latency', 'refuse', 'slow-commit'];
    if (!kinds.includes(fault.kind)) throw new Error(`fault kind must be one of ${kinds.join(', ')}, got ${String(fault.kind)}`);
    const times = fault.times ?? 1;
    if (!Number.isInteger(times) || times < 1) throw new Error(`fault times must be a positive integer, got ${String(fault.times)}`);
    if (fault.kind === 'status' && !(Number.isInteger(fault.status) && fault.status >= 100 && fault.status <= 599)) {
      throw new Error(`status fault needs an HTTP status 100..599, got ${String(fault.status)}`);
    }
    this.pending.push({ fault, remaining: times });
  }

  /** Removes every pending fault. */
  clear(): void {
    this.pending.length = 0;
  }

  /** Faults still pending, with how many times each will still apply. */
  list(): { fault: Fault; remaining: number }[] {
    return this.pending.map((entry) => ({ ...entry }));
  }

  /** Takes (and counts down) the first fault matching this request, if any. */
  take(method: string, pathname: string): Fault | undefined {
    const index = this.pending.findIndex((entry) => matches(entry.fault, method, pathname));
    if (index < 0) return undefined;
    const entry = this.pending[index] as { fault: Fault; remaining: number };
    entry.remaining -= 1;
    if (entry.remaining <= 0) this.pending.splice(index, 1);
    return entry.fault;
  }
}
