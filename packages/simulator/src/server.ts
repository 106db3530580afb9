/**
 * The simulator's HTTP front door (node:http): authentication (spec §5), faults, the per-company rate
 * limit (spec §8), routing to endpoint handlers, and the `{ message, content }` envelope (spec §1.3).
 *
 * Order for an API request: log it -> `refuse` fault (socket destroyed before reading) -> read body ->
 * authenticate (401) -> `status`/`rate-limit` faults (answered without consuming budget) -> rate limit
 * (429, consumes nothing) -> latency -> scope check (403) -> handler -> body-level faults.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { isListFault, type Fault, type FaultInjector } from './faults.ts';
import { HttpError } from './http-error.ts';
import type { FixedWindowRateLimiter } from './rate-limit.ts';
import type { Router } from './router.ts';
import type { HandlerResult } from './routes/types.ts';
import type { TokenDefinition } from './tokens.ts';
import type { World } from './world.ts';

/** The path prefix of every API endpoint (spec §1.1, §9). */
export const API_PREFIX = '/api/public/v1';

/** One request the simulator received (admin requests excluded). */
export interface RequestLogEntry {
  /** ms epoch (real time) when it arrived. */
  at: number;
  method: string;
  /** The full pathname, e.g. `/api/public/v1/transactions`. */
  path: string;
  /** The query string without `?` ('' when none). */
  query: string;
  /** The status sent; 0 when no status line was sent (refused or lost after commit). */
  status: number;
  /** The company key (`A`, `B`, `C1`..), or null when the token was missing or unknown. */
  company: string | null;
  tokenName: string | null;
  /** The `Idempotency-Key` header as received (the spec is silent on it; the simulator ignores it), or null. */
  idempotencyKey: string | null;
  /** Start (ms epoch) of the rate-limit window that counted this request; absent when it was not counted (429, fault, no limit). */
  rateWindowStartMs?: number;
  /** Separate writes that carried the body, when the `trickle-body` fault sent it (chunks of at most `chunkBytes`). */
  bodyWrites?: number;
}

/**
 * What `handleApiRequest` needs: the world, the bearer tokens it accepts, faults, rate limiter (null
 * for none), router, request log, added latency (ms) and clock (ms epoch).
 */
export interface ApiServerDependencies {
  world: World;
  /** Bearer string -> token definition (`tokenLookup`): TOKEN_TABLE plus the extra companies' tokens. */
  tokens: ReadonlyMap<string, TokenDefinition>;
  faults: FaultInjector;
  limiter: FixedWindowRateLimiter | null;
  router: Router;
  requests: RequestLogEntry[];
  latencyMs: number;
  clock: () => number;
}

/** Per-company request counters (see `countRequestsByCompany`). */
export interface CompanyRequestCounts {
  /** API requests authenticated as the company's tokens, whatever their outcome (429s included). */
  requests: number;
  /** Those answered 429 by the rate limit or an injected `rate-limit` fault. */
  rateLimited: number;
  /** Those counted against the company's rate budget (spec §8): the limiter let them through. */
  counted: number;
  /** Responses by HTTP status (0: no status line was sent). */
  byStatus: Record<string, number>;
}

/**
 * Counts a request log per company key (`A`, `B`, `C1`..), every company in `companyKeys` present
 * even with no requests; requests without a valid token are left out.
 */
export function countRequestsByCompany(requests: readonly RequestLogEntry[], companyKeys: readonly string[]): Record<string, CompanyRequestCounts> {
  const counts: Record<string, CompanyRequestCounts> = {};
  for (const key of companyKeys) counts[key] = { requests: 0, rateLimited: 0, counted: 0, byStatus: {} };
  for (const entry of requests) {
    if (entry.company === null) continue;
    const company = (counts[entry.company] ??= { requests: 0, rateLimited: 0, counted: 0, byStatus: {} });
    company.requests += 1;
    if (entry.status === 429) company.rateLimited += 1;
    if (entry.rateWindowStartMs !== undefined) company.counted += 1;
    company.byStatus[entry.status] = (company.byStatus[entry.status] ?? 0) + 1;
  }
  return counts;
}

/** Reads the whole request body as text. */
export function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

/**
 * Sends a JSON body with Content-Length and the simulator clock's Date header (`clock` null: no
 * Date header at all, the `no-date-header` fault).
 */
export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string>, clock: (() => number) | null): void {
  const text = JSON.stringify(body);
  if (clock === null) response.sendDate = false;
  response.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(text)),
    ...(clock === null ? {} : { Date: new Date(clock()).toUTCString() }),
    ...headers,
  });
  response.end(text);
}

/**
 * Sends a JSON body `chunkBytes` at a time with `intervalMs` between chunks (the `trickle-body`
 * fault); stops when the client goes away. Calls `onWrite` after each chunk is written.
 */
async function trickleJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string>, clock: () => number, chunkBytes: number, intervalMs: number, onWrite: () => void): Promise<void> {
  const bytes = Buffer.from(JSON.stringify(body));
  response.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(bytes.length),
    Date: new Date(clock()).toUTCString(),
    ...headers,
  });
  for (let start = 0; start < bytes.length; start += chunkBytes) {
    if (response.destroyed || response.socket?.destroyed !== false) return;
    response.write(bytes.subarray(start, start + chunkBytes));
    onWrite();
    await sleep(intervalMs);
  }
  if (!response.destroyed) response.end();
}

/**
 * Replaces the list items of a response content (its first array) from `from`, `count` of them, by
 * what `rewrite` makes of each (items that are not objects are left as they are).
 */
function rewriteListItems(content: Record<string, unknown>, rewrite: (item: Record<string, unknown>) => Record<string, unknown>, from = 0, count = Number.POSITIVE_INFINITY): void {
  const items = Object.values(content).find(Array.isArray);
  if (items === undefined) return;
  for (let at = from; at < Math.min(items.length, from + count); at++) {
    if (typeof items[at] === 'object' && items[at] !== null) items[at] = rewrite(items[at] as Record<string, unknown>);
  }
}

/** Makes `count` list items from `index` invalid but keeps their ids: `field` becomes `value` (the `invalid-item` fault). */
function corruptListItems(content: Record<string, unknown>, index: number, count: number, field: string, value: unknown): void {
  rewriteListItems(content, (item) => ({ ...item, [field]: value }), index, count);
}

/** Each item of the content's list (its first array) rebuilt with its keys in reverse order (`key-order` fault). */
function reverseListItemKeys(content: Record<string, unknown>): void {
  rewriteListItems(content, (item) => Object.fromEntries(Object.entries(item).reverse()));
}

/** Seconds a Retry-After value (delta seconds or an HTTP date) stands for, rounded up, at least 0. */
function retryAfterSeconds(value: string): number {
  if (/^\s*\d+\s*$/.test(value)) return Number(value);
  const date = Date.parse(value);
  return Number.isNaN(date) ? 1 : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

/** Makes the first record of a response content invalid: its `id` (or first string field) becomes a number. */
function corruptFirstRecord(content: Record<string, unknown>): void {
  const corrupt = (record: Record<string, unknown>) => {
    const field = 'id' in record ? 'id' : Object.keys(record).find((key) => typeof record[key] === 'string');
    if (field) record[field] = 12345;
  };
  for (const value of Object.values(content)) {
    if (Array.isArray(value) && value.length > 0 && typeof value[0] === 'object' && value[0] !== null) {
      corrupt(value[0] as Record<string, unknown>);
      return;
    }
  }
  for (const value of Object.values(content)) {
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      corrupt(value as Record<string, unknown>);
      return;
    }
  }
}

/** Handles one request under `/api/public/v1`. Never throws. */
export async function handleApiRequest(request: IncomingMessage, response: ServerResponse, url: URL, dependencies: ApiServerDependencies): Promise<void> {
  const { world, faults, limiter, router, clock } = dependencies;
  const method = (request.method ?? 'GET').toUpperCase();
  const entry: RequestLogEntry = {
    at: Date.now(),
    method,
    path: url.pathname,
    query: url.search.startsWith('?') ? url.search.slice(1) : url.search,
    status: 0,
    company: null,
    tokenName: null,
    idempotencyKey: typeof request.headers['idempotency-key'] === 'string' ? request.headers['idempotency-key'] : null,
  };
  dependencies.requests.push(entry);
  const fault: Fault | undefined = faults.take(method, url.pathname, url.searchParams);
  if (fault?.kind === 'refuse') {
    request.socket.destroy();
    return;
  }
  const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
    entry.status = status;
    sendJson(response, status, body, headers, clock);
  };

  const rawBody = await readBody(request);
  const authorization = request.headers.authorization ?? '';
  const bearer = /^Bearer\s+(.+)$/i.exec(authorization)?.[1]?.trim();
  const token = bearer ? dependencies.tokens.get(bearer) : undefined;
  if (!token) {
    // Missing or unknown token: 401 (spec §7 leaves the status "not shown").
    send(401, { message: bearer ? 'The access token is invalid' : 'Missing bearer token: send Authorization: Bearer <ACCESS_TOKEN>' });
    return;
  }
  entry.company = token.company;
  entry.tokenName = token.name;

  if (fault?.kind === 'status') {
    const headers = { ...(limiter ? limiter.peek(token.company).headers : {}), ...(fault.headers ?? {}) };
    send(fault.status, fault.body ?? { message: `Injected fault: HTTP ${fault.status}` }, headers);
    return;
  }
  if (fault?.kind === 'rate-limit') {
    const seconds = retryAfterSeconds(fault.retryAfter);
    const headers = { ...(limiter ? limiter.peek(token.company).headers : {}), 'Retry-After': fault.retryAfter };
    send(429, { message: 'Too many requests', err: `Rate limit exceeded; retry after ${seconds} seconds`, retryAfter: seconds }, headers);
    return;
  }

  let rateHeaders: Record<string, string> = {};
  if (limiter) {
    const decision = limiter.consume(token.company);
    rateHeaders = decision.headers;
    if (decision.allowed) entry.rateWindowStartMs = decision.windowStartMs;
    if (!decision.allowed) {
      send(
        429,
        { message: 'Too many requests', err: `Rate limit exceeded; retry after ${decision.retryAfterSeconds} seconds`, retryAfter: decision.retryAfterSeconds },
        { ...rateHeaders, 'Retry-After': String(decision.retryAfterSeconds) },
      );
      return;
    }
  }

  const delay = dependencies.latencyMs + (fault?.kind === 'latency' ? fault.ms : 0);
  if (delay > 0) await sleep(delay);
  if (fault?.kind === 'hold') {
    // A test's gate: nothing is read from the world before it opens (the answer reflects that moment).
    await fault.until.then(
      () => undefined,
      () => undefined,
    );
  }
  if (fault?.kind === 'late-commit') {
    // Commit late, whatever the client does: `ms` after arrival, and after the next matching request's commit.
    const waitMs = entry.at + (fault.ms ?? 0) - Date.now();
    const next = fault.afterNextMatch ? faults.nextCommit(fault) : undefined;
    if (waitMs > 0) await sleep(waitMs);
    if (next) await next;
  }
  if (fault?.kind === 'slow-commit') {
    // Hold the request until the client gives up (its timeout closes the connection), then commit later.
    if (!request.socket.destroyed) await new Promise<void>((resolve) => request.socket.once('close', () => resolve()));
    await sleep(fault.ms ?? 0);
  }

  const relativePath = url.pathname.slice(API_PREFIX.length) || '/';
  let status = 200;
  let body: unknown;
  let extraHeaders: Record<string, string> = {};
  try {
    const match = router.match(method, relativePath);
    if (match.kind === 'not-found') throw new HttpError(404, `No endpoint ${method} ${relativePath}`);
    if (match.kind === 'method-not-allowed') throw new HttpError(405, `${method} is not allowed on ${relativePath}; allowed: ${match.allowed.join(', ')}`);
    const scopes = new Set(token.scopes);
    if (match.route.scope !== null && !scopes.has(match.route.scope)) {
      throw new HttpError(403, `This token lacks the scope ${match.route.scope} required by ${method} ${match.route.path}`);
    }
    let parsedBody: unknown;
    if (rawBody.trim() !== '') {
      try {
        parsedBody = JSON.parse(rawBody);
      } catch {
        throw new HttpError(400, 'The request body must be valid JSON');
      }
    }
    const company = world.company(token.company);
    const result: HandlerResult = match.route.handler({
      method,
      path: relativePath,
      params: match.params,
      query: url.searchParams,
      body: parsedBody,
      token,
      scopes,
      company,
      employee: company.employeeForRole(token.role),
      world,
      listFault: isListFault(fault) ? fault : undefined,
    });
    faults.noteCommit(method, url.pathname, url.searchParams);
    if (fault?.kind === 'hold-answer') {
      // The answer is the world's at arrival; only its sending waits for the gate.
      await fault.until.then(
        () => undefined,
        () => undefined,
      );
    }
    if (fault?.kind === 'invalid-record') corruptFirstRecord(result.content);
    if (fault?.kind === 'key-order') reverseListItemKeys(result.content);
    if (fault?.kind === 'invalid-item') corruptListItems(result.content, fault.index ?? 0, fault.count ?? 1, fault.field ?? 'status', 'value' in fault ? fault.value : 12345);
    body = result;
  } catch (error) {
    if (error instanceof HttpError) {
      status = error.status;
      body = error.body();
      extraHeaders = error.headers ?? {};
    } else {
      status = 500;
      body = { message: 'Internal simulator error', err: error instanceof Error ? error.message : String(error) };
    }
  }

  if (fault?.kind === 'lose-response-after-commit') {
    request.socket.destroy();
    return;
  }
  if (fault?.kind === 'malformed-json' || fault?.kind === 'reset-mid-body') {
    const text = JSON.stringify(body);
    const cut = text.slice(0, Math.max(1, Math.floor(text.length / 2)));
    const headers = { 'Content-Type': 'application/json; charset=utf-8', Date: new Date(clock()).toUTCString(), ...rateHeaders };
    if (fault.kind === 'malformed-json') {
      entry.status = 200;
      response.writeHead(200, { ...headers, 'Content-Length': String(Buffer.byteLength(cut)) });
      response.end(cut);
      return;
    }
    entry.status = status;
    response.writeHead(status, { ...headers, 'Content-Length': String(Buffer.byteLength(text)) });
    response.write(cut);
    await sleep(20);
    request.socket.destroy();
    return;
  }
  if (fault?.kind === 'trickle-body') {
    entry.status = status;
    entry.bodyWrites = 0;
    await trickleJson(response, status, body, { ...rateHeaders, ...extraHeaders }, clock, fault.chunkBytes ?? 50, fault.intervalMs ?? 200, () => {
      entry.bodyWrites = (entry.bodyWrites ?? 0) + 1;
    });
    return;
  }
  if (fault?.kind === 'no-date-header') {
    entry.status = status;
    sendJson(response, status, body, { ...rateHeaders, ...extraHeaders }, null);
    return;
  }
  send(status, body, { ...rateHeaders, ...extraHeaders });
}
