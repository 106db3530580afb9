/**
 * Fault injection for tests: the next matching request(s) get a failure instead of (or on top of)
 * the normal answer. Faults are checked in the order injected; each applies `times` times (default 1).
 * List faults (`truncate-list`, `unstable-order`, `endless-list`, `capped-list`, `duplicate-id`,
 * `id-less-item`, `backwards-updated-at`, `timestamp-style`) change what a list endpoint pages;
 * give them a large `times` to keep a misbehaving list for a whole test.
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
  /**
   * Query parameters the request must carry with exactly these values (`{ offset: '200' }`: that
   * page only, however early a reader asks for it); `null` for one it must not carry
   * (`{ updatedAfter: null }`: complete scans only, not incremental runs); others are not looked at.
   */
  query?: Record<string, string | null>;
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
  /**
   * Hold the request until `until` settles, then answer it as usual (the handler runs then): a test's
   * gate, to have something happen (a database stopped, a process paused) while a request is in flight.
   */
  | { kind: 'hold'; until: Promise<unknown> }
  /**
   * Answer from the world as it is when the request arrives (the handler runs at once: a write
   * commits), but send that answer only once `until` settles: a page read before something else
   * changed the record, delivered after it.
   */
  | { kind: 'hold-answer'; until: Promise<unknown> }
  /** Destroy the socket immediately, before reading or processing the request. */
  | { kind: 'refuse' }
  /** Answer normally but without a `Date` header (a proxy that strips it). The handler runs. */
  | { kind: 'no-date-header' }
  /**
   * Answer normally, but send the body `chunkBytes` at a time (default 50) with `intervalMs` between
   * chunks (default 200): each pause is shorter than any between-chunk timeout, so only a deadline on
   * the whole request ends it. The handler runs.
   */
  | { kind: 'trickle-body'; chunkBytes?: number; intervalMs?: number }
  /**
   * 200 whose list items from `index` (default 0), `count` of them (default 1), fail the schema while
   * keeping their `id`: their `field` (default `status`) becomes `value` (default the number 12345).
   * List responses only; the handler runs.
   */
  | { kind: 'invalid-item'; index?: number; count?: number; field?: string; value?: unknown }
  /**
   * Every item of a list page served with its keys in reverse order: the same fields and values in
   * another order (JSON objects are unordered; spec §2 shows each item's fields in one order only).
   */
  | { kind: 'key-order' }
  /**
   * A commit the client never hears of in time: hold the request until the CLIENT closes the
   * connection (its timeout), wait `ms` more (default 0), then run the handler (the write commits);
   * nobody is left to read the answer.
   */
  | { kind: 'slow-commit'; ms?: number }
  /**
   * A commit that comes late whatever the client does: run the handler (the write commits) `ms`
   * after the request arrived (default 0) and, with `afterNextMatch`, only once the NEXT request
   * matching this fault's `match` has run its handler (a re-send committed first). The answer goes
   * out if the client is still there.
   */
  | { kind: 'late-commit'; ms?: number; afterNextMatch?: boolean }
  /**
   * A list page (spec §1 Pagination) that reaches `atOffset` ends there with `hasMore: false`, while
   * `pagination.total` still counts every record (a gateway cutting a list short). Pages at or past
   * `atOffset` are empty with `hasMore: false`. Other endpoints answer normally. With `cutTotal`,
   * those pages also say `total: atOffset` (a gateway rewriting the count), while earlier pages
   * still say the real total.
   */
  | { kind: 'truncate-list'; atOffset: number; cutTotal?: boolean }
  /**
   * A list page whose records tie on the sort field (same createdAt) gets those ties in a random
   * order, drawn again for every request: the records at a page boundary differ between requests.
   * With `seed`, the orders come from one seeded generator per injected fault (the same requests in
   * the same sequence get the same orders: deterministic tests); without, from Math.random.
   */
  | { kind: 'unstable-order'; seed?: number }
  /**
   * A list that never ends: every page says `hasMore: true`. Past the last record, `repeat` answers
   * the last page's records again; `past-total` answers records from the start again (wrapping).
   */
  | { kind: 'endless-list'; mode: 'repeat' | 'past-total' }
  /**
   * A list capped like a search engine's result window: nothing is served at or past offset `cap`,
   * and every page says `total: cap` (the real total when smaller) with `hasMore` false at the cap.
   * With `reportedTotal`, every page says that total instead (a window whose count is an estimate,
   * smaller or larger than what it serves).
   */
  | { kind: 'capped-list'; cap: number; reportedTotal?: number }
  /**
   * One record served at two positions: the record at position `position` (default 0) is served
   * again at position `at` (default `position + 1`), inserted there (the total counts it twice), with
   * `patch` applied to that copy (default `{ description: 'a second copy' }`): another version.
   */
  | { kind: 'duplicate-id'; position?: number; at?: number; patch?: Record<string, unknown> }
  /**
   * An item with no id at position `position` (default 0): a copy of the record there without its
   * `id`, inserted (the total counts it); with `instead`, the record itself is served without its id
   * in its own place (the total unchanged: the record is listed, but cannot be named); with
   * `nullId`, the item carries `id: null` rather than no `id`.
   */
  | { kind: 'id-less-item'; position?: number; instead?: boolean; nullId?: boolean }
  /**
   * Every ISO 8601 instant of the items served (`createdAt`, `updatedAt`, ... as `...T...Z`) written in
   * another style naming the same instant: `+00:00` for the `Z` (`2025-11-01T07:41:35.578+00:00`),
   * or `no-fraction` (a `.000` fraction left out: `2025-11-01T07:41:35Z`). Filters and order are the
   * list's as ever (spec §1 convention 4 says only "ISO 8601 strings in UTC").
   */
  | { kind: 'timestamp-style'; style: '+00:00' | 'no-fraction' }
  /**
   * One record's `updatedAt` served (and filtered on) as `updatedAt`, whatever the record's own:
   * a stamp that went backwards, e.g. an import that rewrote it. The record is named by `id`.
   */
  | { kind: 'backwards-updated-at'; id: string; updatedAt: string };

/** The fault kinds that change a list page's items or pagination (applied by list.ts `listPage`). */
export type ListFault = Extract<
  FaultKind,
  { kind: 'truncate-list' | 'unstable-order' | 'endless-list' | 'capped-list' | 'duplicate-id' | 'id-less-item' | 'backwards-updated-at' | 'timestamp-style' }
>;

const LIST_FAULT_KINDS: readonly string[] = ['truncate-list', 'unstable-order', 'endless-list', 'capped-list', 'duplicate-id', 'id-less-item', 'backwards-updated-at', 'timestamp-style'];

/** True for the faults list.ts applies to a list page. */
export function isListFault(fault: Fault | undefined): fault is Fault & ListFault {
  return fault !== undefined && LIST_FAULT_KINDS.includes(fault.kind);
}

/** A fault to inject: one `FaultKind`, which requests it matches, and how many times it applies. */
export type Fault = FaultBase & FaultKind;

const API_PREFIX = '/api/public/v1';

function matches(fault: Fault, method: string, pathname: string, query: URLSearchParams): boolean {
  const match = fault.match;
  if (!match) return true;
  if (match.method && match.method.toUpperCase() !== method.toUpperCase()) return false;
  if (match.query && !Object.entries(match.query).every(([name, value]) => query.get(name) === value)) return false;
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
  private readonly commitWaiters: { match: Fault; after: number; resolve(): void }[] = [];
  private handled = 0;

  /** The server calls this after a request's handler ran (its write committed): wakes `nextCommit` waiters it matches. */
  noteCommit(method: string, pathname: string, query: URLSearchParams = new URLSearchParams()): void {
    const sequence = ++this.handled;
    for (let index = this.commitWaiters.length - 1; index >= 0; index--) {
      const waiter = this.commitWaiters[index]!;
      if (sequence > waiter.after && matches(waiter.match, method, pathname, query)) {
        this.commitWaiters.splice(index, 1);
        waiter.resolve();
      }
    }
  }

  /** Resolves once a request handled after this call matches `fault.match` (the `late-commit` fault's `afterNextMatch`). */
  nextCommit(fault: Fault): Promise<void> {
    return new Promise((resolve) => this.commitWaiters.push({ match: fault, after: this.handled, resolve }));
  }

  /**
   * Queues a fault for the next matching request(s).
   * @throws Error when the kind is unknown or `times` is not a positive integer
   */
  inject(fault: Fault): void {
    const kinds = [
      'status',
      'rate-limit',
      'reset-mid-body',
      'malformed-json',
      'invalid-record',
      'lose-response-after-commit',
      'latency',
      'hold',
      'hold-answer',
      'refuse',
      'slow-commit',
      'late-commit',
      'no-date-header',
      'trickle-body',
      'invalid-item',
      'key-order',
      'truncate-list',
      'unstable-order',
      'endless-list',
      'capped-list',
      'duplicate-id',
      'id-less-item',
      'backwards-updated-at',
      'timestamp-style',
    ];
    if (!kinds.includes(fault.kind)) throw new Error(`fault kind must be one of ${kinds.join(', ')}, got ${String(fault.kind)}`);
    const times = fault.times ?? 1;
    if (!Number.isInteger(times) || times < 1) throw new Error(`fault times must be a positive integer, got ${String(fault.times)}`);
    if (fault.kind === 'status' && !(Number.isInteger(fault.status) && fault.status >= 100 && fault.status <= 599)) {
      throw new Error(`status fault needs an HTTP status 100..599, got ${String(fault.status)}`);
    }
    if (fault.kind === 'hold' && !(fault.until instanceof Promise)) throw new Error('hold fault needs until, a Promise');
    if (fault.kind === 'truncate-list' && !(Number.isInteger(fault.atOffset) && fault.atOffset >= 0)) {
      throw new Error(`truncate-list fault needs atOffset, a non-negative integer, got ${String(fault.atOffset)}`);
    }
    if (fault.kind === 'unstable-order' && fault.seed !== undefined && !Number.isInteger(fault.seed)) {
      throw new Error(`unstable-order fault seed must be an integer, got ${String(fault.seed)}`);
    }
    const position = (name: string, value: unknown) => {
      if (value !== undefined && !(Number.isInteger(value) && (value as number) >= 0)) throw new Error(`${fault.kind} fault ${name} must be a non-negative integer, got ${String(value)}`);
    };
    if (fault.kind === 'capped-list' && !(Number.isInteger(fault.cap) && fault.cap >= 0)) throw new Error(`capped-list fault needs cap, a non-negative integer, got ${String(fault.cap)}`);
    if (fault.kind === 'capped-list') position('reportedTotal', fault.reportedTotal);
    if (fault.kind === 'duplicate-id') {
      position('position', fault.position);
      position('at', fault.at);
    }
    if (fault.kind === 'id-less-item') position('position', fault.position);
    if (fault.kind === 'timestamp-style' && fault.style !== '+00:00' && fault.style !== 'no-fraction') {
      throw new Error(`timestamp-style fault needs style "+00:00" or "no-fraction", got ${String(fault.style)}`);
    }
    if (fault.kind === 'backwards-updated-at' && (typeof fault.id !== 'string' || Number.isNaN(Date.parse(fault.updatedAt)))) {
      throw new Error('backwards-updated-at fault needs id (a record id) and updatedAt (an ISO timestamp)');
    }
    if (fault.kind === 'endless-list' && fault.mode !== 'repeat' && fault.mode !== 'past-total') {
      throw new Error(`endless-list fault needs mode "repeat" or "past-total", got ${String(fault.mode)}`);
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
  take(method: string, pathname: string, query: URLSearchParams = new URLSearchParams()): Fault | undefined {
    const index = this.pending.findIndex((entry) => matches(entry.fault, method, pathname, query));
    if (index < 0) return undefined;
    const entry = this.pending[index] as { fault: Fault; remaining: number };
    entry.remaining -= 1;
    if (entry.remaining <= 0) this.pending.splice(index, 1);
    return entry.fault;
  }
}
