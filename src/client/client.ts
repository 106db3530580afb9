/**
 * `ApiClient`: the one client for the Business Operations Public API (spec §1, §5, §7, §8). Every
 * request of the worker (polls, backfill, reconciliation, writes) goes through `request`: a pipeline
 * around the one request function (hooks.ts for the hook points), outermost first:
 *
 *   retry (retry.ts, on p-retry: policy per request; `onRetry`, and `onRateLimit` on a 429)
 *     -> beforeRequest hooks (the rate budget's slot, then the request's own hooks)
 *       -> http (http-transport.ts: one undici keep-alive pool; socket failures become ConnectionError)
 *         -> afterResponse hooks (the rate budget reads the server's rate-limit headers)
 *           -> error mapping (status -> typed error of api-errors.ts with headers, request id, raw body)
 *             -> envelope and schema validation (schemas.ts; InvalidResponseError names the field)
 *
 * Bearer tokens never appear in log lines or error messages: they live only in the Authorization
 * header handed to undici.
 */
import { z } from 'zod';
import { maskSecrets, silentLogger, type Logger } from '../logging/logger.ts';
import { maskUrlPassword } from '../logging/mask-url.ts';
import { ConnectionError, InvalidResponseError, MalformedResponseError, UnknownTokenError, errorForStatus, type RequestDescription } from './api-errors.ts';
import { rateBudgetHooks, type AttemptContext, type BudgetSource, type RequestHooks } from './hooks.ts';
import { createHttpTransport, describeRequest, type HttpResponse, type HttpTransport } from './http-transport.ts';
import type { Priority, RateLimitObservation } from './rate-budget.ts';
import { parseRetryAfter, withRetry, type RetryPolicy } from './retry.ts';
import { LIST_PAGE_LIMIT, paginateByOffset, type Page, type RejectedItem } from './paginate.ts';
import { envelopeSchema, errorBodySchema, paginationSchema, type ItemSchema, type Pagination } from './schemas.ts';

/** Path prefix of every endpoint (spec §1 convention 1, §9). */
const API_PREFIX = '/api/public/v1';

/** Construction options of an ApiClient: where the API is, the bearer tokens, the rate budget and other layers, timeouts (ms) and retries. */
export interface ApiClientOptions {
  /** `{base_url}` (spec §1); the client adds `/api/public/v1`. */
  baseUrl: string;
  /** Bearer tokens by name (spec §5); `default` is required. Never logged. */
  tokens: Record<string, string>;
  /**
   * The rate budget every attempt spends, registered as the first layer (`rateBudgetHooks`):
   * `LocalRateBudget` or the Redis one, or a function giving the budget of a token NAME
   * (config `rateLimit.scope: token`).
   */
  budget: BudgetSource;
  /** Cancels waits for a budget slot only, never a request already sent (a closing write worker). */
  budgetWaitSignal?: AbortSignal;
  /** More layers, after the rate budget's, for every request of this client. */
  hooks?: readonly RequestHooks[];
  /** Debug line per request, warning per retry. Default: silent. */
  logger?: Logger;
  /** Headers and body timeout per attempt, ms (undici: the silence between chunks). Default 30000. */
  timeoutMs?: number;
  /**
   * Deadline of one whole attempt, headers and body included, ms (config `api.requestDeadlineSeconds`).
   * Past it the attempt fails with a `RequestDeadlineError` and is retried like any timeout. Default 60000.
   */
  requestDeadlineMs?: number;
  /**
   * How a 401 names the token it refused, by the token's name: the setting that holds it
   * (`BIZOPS_TOKEN`); default `the token "<name>"`.
   */
  describeToken?: (tokenName: string) => string;
  /** Backoff schedule (retry.ts). `maxRateLimitRetries` caps 429 retries separately (default 10). */
  retry?: { maxRetries?: number; minTimeoutMs?: number; maxTimeoutMs?: number; maxRateLimitRetries?: number };
}

/** A successful (2xx) answer: the `{ message, content }` envelope (spec §1 convention 3), validated, with the server clock and rate-limit headers. */
export interface ApiResponse<T> {
  status: number;
  /** The envelope's `message` (spec §1 convention 3). */
  message: string;
  /** The envelope's `content`, validated by the request's `contentSchema`. */
  content: T;
  /** From the `Date` header: the server's clock, second resolution. */
  serverTime: Date | undefined;
  /** The parsed `X-RateLimit-*` headers (spec §8). */
  rateLimit: RateLimitObservation;
  /** The response headers, names in lower case. */
  headers: HttpResponse['headers'];
  /** The body as received (tokens masked), for errors found after the envelope (a list item that fails its schema). */
  rawBody: string;
}

/** One request for `ApiClient.request`: method, path, query, body, the schema of `content`, priority and retry policy. */
export interface RequestOptions<S extends z.ZodType> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Below `/api/public/v1`, e.g. `/transactions` or `/deals/${id}/close` (ids encodeURIComponent'ed by the caller). */
  path: string;
  /** Query parameters; arrays become repeated parameters, `undefined` is left out. */
  query?: Record<string, string | number | boolean | readonly string[] | undefined>;
  /** Sent as JSON with `Content-Type: application/json` (spec §1 convention 2). */
  body?: unknown;
  /** Validates the envelope's `content`. */
  contentSchema: S;
  priority: Priority;
  /** Which failures may be sent again (retry.ts). */
  retry: RetryPolicy;
  /** Token NAME from `ApiClientOptions.tokens`; default `'default'`. */
  token?: string;
  signal?: AbortSignal;
  /** Layers for this request only, after the client's (e.g. the write worker marking a write `sending`). */
  hooks?: RequestHooks;
  /** Extra request headers, names in lower case (e.g. the write worker's `idempotency-key`); they cannot replace `authorization`. */
  headers?: Record<string, string>;
}

/** Options of `listPage` / `paginate`: where the items are in `content`, their schema, filters and priority. */
export interface ListOptions<T> {
  /** Name of the item array inside `content`, e.g. `transactions`, `deals`, `onboardings`. */
  itemsKey: string;
  /** Validates each item (a zod schema). */
  itemSchema: ItemSchema<T>;
  /** Filters, `sortBy`, `sortOrder`, `updatedAfter`...; `limit` and `offset` are set by the client. */
  query?: RequestOptions<z.ZodType>['query'];
  priority: Priority;
  signal?: AbortSignal;
  token?: string;
  /**
   * What an item failing `itemSchema` does: `throw` (default) refuses the whole page;
   * `collect` returns the valid items and lists the others in `Page.rejected`, unless the page
   * looks malformed as a whole (more than one item, and more than half of them, invalid), which
   * is still refused (docs/sync.md "Invalid records").
   */
  invalidItems?: 'throw' | 'collect';
  /** This request's own hooks, after the client's layers (hooks.ts), e.g. a lease check right before it leaves. */
  hooks?: RequestHooks;
}

/** Counters of requests sent, for `status` output and benchmarks. */
export interface ApiClientStats {
  /** Requests sent, retries and 429s included. */
  requests: number;
  /** Attempts that were retries (any reason). */
  retries: number;
  /** 429 responses received. */
  rateLimited: number;
  /** Responses by HTTP status. */
  byStatus: Record<number, number>;
}

/** First value of a header, if any. */
function headerValue(headers: HttpResponse['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function finiteNumber(text: string | undefined): number | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const value = Number(text);
  return Number.isFinite(value) ? value : undefined;
}

/**
 * Reads `X-RateLimit-Limit`, `-Remaining`, `-Reset` and `Date` (spec §8). The reset is a Unix
 * timestamp in seconds; a value already in ms (> 1e12) is taken as is, and a small value (< 1e9,
 * i.e. before 2001) as seconds from now, to be liberal in what we accept.
 */
function parseRateLimitHeaders(headers: HttpResponse['headers'], localNowMs = Date.now()): RateLimitObservation {
  const observation: RateLimitObservation = {};
  const limit = finiteNumber(headerValue(headers, 'x-ratelimit-limit'));
  const remaining = finiteNumber(headerValue(headers, 'x-ratelimit-remaining'));
  const reset = finiteNumber(headerValue(headers, 'x-ratelimit-reset'));
  const date = headerValue(headers, 'date');
  const serverNowMs = date !== undefined ? Date.parse(date) : Number.NaN;
  if (limit !== undefined) observation.limit = limit;
  if (remaining !== undefined) observation.remaining = remaining;
  if (Number.isFinite(serverNowMs)) observation.serverNowMs = serverNowMs;
  if (reset !== undefined) {
    if (reset > 1e12) observation.resetAtMs = reset;
    else if (reset >= 1e9) observation.resetAtMs = reset * 1000;
    else observation.resetAtMs = (observation.serverNowMs ?? localNowMs) + reset * 1000;
  }
  return observation;
}

/** `item 17 field amount: expected integer, received string` from a zod error. */
function describeIssues(error: z.ZodError, itemIndex?: number): string {
  const [first] = error.issues;
  const where = itemIndex === undefined ? '' : `item ${itemIndex} `;
  if (!first) return `${where}failed validation`;
  const field = first.path.length > 0 ? first.path.map((part) => (typeof part === 'number' ? `[${part}]` : String(part))).join('.').replace(/\.\[/g, '[') : '(root)';
  const rule = first.message.replace(/^Invalid (input|option|value): /, '').replace(/expected int,/, 'expected integer,');
  const more = error.issues.length > 1 ? ` (and ${error.issues.length - 1} more)` : '';
  return `${where}field ${field}: ${rule}${more}`;
}

/** An InvalidResponseError for a 2xx whose body failed validation, keeping the response as received. */
function invalidResponse(request: RequestDescription, detail: string, response: { status: number; headers: HttpResponse['headers']; rawBody: string }, cause?: unknown): InvalidResponseError {
  return new InvalidResponseError({ status: response.status, message: `${request.method} ${request.path}: ${detail}`, request, headers: response.headers, rawBody: response.rawBody, cause });
}

/**
 * The API client (spec §1, §5, §7, §8): requests through the rate budget and the retry policy over one
 * keep-alive pool, answers validated, failures mapped to the typed errors of api-errors.ts (see this
 * module's header for the layers).
 */
export class ApiClient {
  /** Requests sent (including retries and 429s), for status and benchmarks. */
  readonly stats: ApiClientStats = { requests: 0, retries: 0, rateLimited: 0, byStatus: {} };

  private readonly transport: HttpTransport;
  private readonly tokens: Record<string, string>;
  /** The client's layers: the rate budget's, then `ApiClientOptions.hooks`. */
  private readonly hooks: readonly RequestHooks[];
  private readonly logger: Logger;
  private readonly retryOptions: NonNullable<ApiClientOptions['retry']>;
  /** `{base_url}/api/public/v1`, password masked: what a 401 or 404 names. */
  private readonly apiUrl: string;
  private readonly describeToken: (tokenName: string) => string;

  /** @throws TypeError when `baseUrl` is not http(s) or no `default` token is given. */
  constructor(options: ApiClientOptions) {
    if (typeof options.tokens?.default !== 'string' || options.tokens.default === '') {
      throw new TypeError('ApiClient option tokens.default is required (the bearer token used when a request names none)');
    }
    const base = options.baseUrl.replace(/\/+$/, '');
    const timeoutMs = options.timeoutMs ?? 30_000;
    this.transport = createHttpTransport({
      baseUrl: `${base}${API_PREFIX}`,
      headersTimeoutMs: timeoutMs,
      bodyTimeoutMs: timeoutMs,
      connectTimeoutMs: Math.min(timeoutMs, 10_000),
      deadlineMs: options.requestDeadlineMs ?? 60_000,
    });
    this.tokens = { ...options.tokens };
    this.apiUrl = maskUrlPassword(`${base}${API_PREFIX}`);
    this.describeToken = options.describeToken ?? ((tokenName) => `the token "${tokenName}"`);
    this.hooks = [rateBudgetHooks(options.budget, { waitSignal: options.budgetWaitSignal }), ...(options.hooks ?? [])];
    this.logger = options.logger ?? silentLogger;
    this.retryOptions = { ...options.retry };
  }

  /**
   * Sends one API request through the layers (this module's header) and returns the validated
   * envelope.
   * @throws a typed error of api-errors.ts: the status's class for a 4xx/5xx (with the server's
   *   `message`, `err`, `retryAfter`, the response headers, request id and raw body),
   *   `ConnectionError` when no response arrived, `InvalidResponseError` when the body is not JSON,
   *   has no `content`, or `content` fails `contentSchema`; `UnknownTokenError` for a token name
   *   that is not configured (nothing sent); what a `beforeRequest` hook throws. When `signal`
   *   aborts: `ConnectionError` with code `ABORTED` whose `requestSent` is false only if no attempt
   *   can have been processed by the server.
   */
  async request<S extends z.ZodType>(options: RequestOptions<S>): Promise<ApiResponse<z.infer<S>>> {
    const description = describeRequest(options.method, options.path, options.query);
    const tokenName = options.token ?? 'default';
    const token = Object.hasOwn(this.tokens, tokenName) ? this.tokens[tokenName] : undefined;
    if (token === undefined) throw new UnknownTokenError(tokenName, description, Object.keys(this.tokens));
    const headers: Record<string, string> = { ...options.headers, authorization: `Bearer ${token}`, accept: 'application/json', 'user-agent': 'bizops-sync' };
    let body: string | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] = 'application/json';
    }
    const hooks = options.hooks ? [...this.hooks, options.hooks] : this.hooks;
    const context = (attempt: number): AttemptContext => ({ request: description, priority: options.priority, token: tokenName, attempt, signal: options.signal });
    let lastAttempt = 1;
    return withRetry(
      (attempt) => {
        lastAttempt = attempt;
        return this.attempt(options, context(attempt), hooks, headers, body);
      },
      {
        ...this.retryOptions,
        policy: options.retry,
        request: description,
        signal: options.signal,
        logger: this.logger,
        onRateLimit: async (event) => {
          for (const layer of hooks) await layer.onRateLimit?.(context(lastAttempt), event);
        },
        onRetry: (event) => {
          this.stats.retries++;
          for (const layer of hooks) layer.onRetry?.(context(event.attempt), event);
        },
      },
    );
  }

  /**
   * One list page at `offset` with `limit=100` (spec §1 Pagination). Items are validated one by one,
   * so an error names the item's index within the page.
   * @throws as `request`; InvalidResponseError `GET /transactions?limit=100&offset=200: item 17 field amount: ...`
   */
  async listPage<T>(path: string, offset: number, options: ListOptions<T>): Promise<Page<T>> {
    if (!Number.isInteger(offset) || offset < 0) throw new RangeError(`listPage offset must be an integer >= 0, got ${String(offset)}`);
    const query = { ...options.query, limit: LIST_PAGE_LIMIT, offset };
    const description = describeRequest('GET', path, query);
    const response = await this.request({
      method: 'GET',
      path,
      query,
      contentSchema: listContentSchema(options.itemsKey),
      priority: options.priority,
      retry: 'safe',
      token: options.token,
      signal: options.signal,
      hooks: options.hooks,
    });
    const rawItems = response.content[options.itemsKey] as unknown[];
    const items: T[] = [];
    const rejected: RejectedItem[] = [];
    let firstFailure: { index: number; error: z.ZodError } | undefined;
    for (let index = 0; index < rawItems.length; index += 1) {
      const raw = rawItems[index];
      const parsed = options.itemSchema.safeParse(raw);
      if (parsed.success) {
        items.push(parsed.data);
        continue;
      }
      if (options.invalidItems !== 'collect') throw invalidResponse(description, describeIssues(parsed.error, index), response, parsed.error);
      firstFailure ??= { index, error: parsed.error };
      rejected.push({ index, raw, error: describeIssues(parsed.error, index) });
    }
    if (firstFailure && rejected.length > 1 && rejected.length * 2 > rawItems.length) {
      // Most of the page is invalid: a changed schema or a wrong endpoint, not one bad record.
      const detail = `${rejected.length} of ${rawItems.length} items fail the schema, the page is refused as a whole; first: ${describeIssues(firstFailure.error, firstFailure.index)}`;
      throw invalidResponse(description, detail, response, firstFailure.error);
    }
    return { items, pagination: response.content.pagination, serverTime: response.serverTime, offset, ...(options.invalidItems === 'collect' ? { rejected } : {}) };
  }

  /**
   * Pages through a list from `startOffset` (default 0) with the offset paginator (paginate.ts:
   * advance by `pagination.limit` while `hasMore`, stop on a server that pages forever).
   * @throws as `listPage`; InvalidResponseError when the server says hasMore with no items past its total
   */
  async *paginate<T>(path: string, options: ListOptions<T> & { startOffset?: number }): AsyncIterable<Page<T>> {
    for await (const step of paginateByOffset((offset) => this.listPage(path, offset, options), { label: `GET ${path}`, startOffset: options.startOffset })) {
      yield step.page;
    }
  }

  /** Closes the keep-alive connections. The rate budget belongs to the caller and stays open. */
  async close(): Promise<void> {
    await this.transport.close();
  }

  /** Masks every configured token and any `Bearer ...` inside server-provided text. */
  private scrubTokens(text: string): string {
    let out = maskSecrets(text);
    for (const token of Object.values(this.tokens)) if (token.length >= 4) out = out.split(token).join('[redacted]');
    return out;
  }

  /** One attempt: the `beforeRequest` hooks (budget slot, ...), send, the `afterResponse` hooks, map the response. */
  private async attempt<S extends z.ZodType>(
    options: RequestOptions<S>,
    context: AttemptContext,
    hooks: readonly RequestHooks[],
    headers: Record<string, string>,
    body: string | undefined,
  ): Promise<ApiResponse<z.infer<S>>> {
    const description = context.request;
    try {
      for (const layer of hooks) await layer.beforeRequest?.(context);
    } catch (error) {
      // A later layer refused after the budget granted a slot: the slot was never used.
      for (const layer of hooks) layer.onNoResponse?.(context, { error, requestSent: false });
      if (options.signal?.aborted) {
        throw new ConnectionError({ message: 'request aborted before sending (ABORTED)', code: 'ABORTED', requestSent: false, request: description, cause: error });
      }
      throw error;
    }
    const startedAt = performance.now();
    this.stats.requests++;
    let response: HttpResponse;
    try {
      response = await this.transport.send({ method: options.method, path: options.path, query: options.query, body, headers, signal: options.signal });
    } catch (error) {
      this.logger.debug(
        { method: description.method, path: description.path, attempt: context.attempt, ms: Math.round(performance.now() - startedAt), code: (error as ConnectionError).code },
        'API request failed without a response',
      );
      const requestSent = !(error instanceof ConnectionError) || error.requestSent !== false;
      for (const layer of hooks) layer.onNoResponse?.(context, { error, requestSent });
      throw error;
    }
    const ms = Math.round(performance.now() - startedAt);
    this.stats.byStatus[response.status] = (this.stats.byStatus[response.status] ?? 0) + 1;
    this.logger.debug({ method: description.method, path: description.path, attempt: context.attempt, status: response.status, ms }, 'API request');

    const rateLimit = parseRateLimitHeaders(response.headers);
    for (const layer of hooks) await layer.afterResponse?.(context, { status: response.status, headers: response.headers, rateLimit });
    const serverTime = rateLimit.serverNowMs !== undefined ? new Date(rateLimit.serverNowMs) : undefined;
    // A server that echoes the token back must not leak it into our errors. Masked when first read:
    // an error reads it, a successful answer's `rawBody` only when a list item fails its schema.
    let masked: string | undefined;
    const scrubTokens = (): string => (masked ??= this.scrubTokens(response.bodyText));
    const received = {
      status: response.status,
      headers: response.headers,
      get rawBody(): string {
        return scrubTokens();
      },
    };

    if (response.status < 200 || response.status >= 300) {
      if (response.status === 429) this.stats.rateLimited++;
      const retryAfterMs = parseRetryAfter(headerValue(response.headers, 'retry-after'), rateLimit.serverNowMs ?? Date.now());
      const errorBody = parseErrorBody(received.rawBody);
      throw errorForStatus(response.status, errorBody, description, retryAfterMs === undefined ? undefined : retryAfterMs / 1000, received, {
        apiUrl: this.apiUrl,
        token: this.describeToken(context.token),
      });
    }

    let json: unknown;
    try {
      json = JSON.parse(response.bodyText);
    } catch (error) {
      throw new MalformedResponseError({
        status: response.status,
        message: `${description.method} ${description.path}: response body is not JSON (${response.bodyText.length} bytes)`,
        request: description,
        headers: received.headers,
        rawBody: received.rawBody,
        cause: error,
      });
    }
    const envelope = envelopeSchema.safeParse(json);
    if (!envelope.success) throw invalidResponse(description, `envelope ${describeIssues(envelope.error)}`, received, envelope.error);
    const content = options.contentSchema.safeParse(envelope.data.content);
    if (!content.success) throw invalidResponse(description, `content ${describeIssues(content.error)}`, received, content.error);
    return {
      status: response.status,
      message: envelope.data.message,
      content: content.data as z.infer<S>,
      serverTime,
      rateLimit,
      headers: received.headers,
      get rawBody(): string {
        return scrubTokens();
      },
    };
  }
}

/** The error body `{ message, err, retryAfter }` (spec §7) when it is JSON, else undefined. */
function parseErrorBody(text: string): { message?: unknown; err?: unknown; retryAfter?: unknown } | undefined {
  try {
    const parsed = errorBodySchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** The list content schemas by items key: built once, not per page (zod compiles an object schema at its first parse). */
const listContentSchemas = new Map<string, z.ZodType<Record<string, unknown> & { pagination: Pagination }>>();

/** `content` of a list response: `{ [itemsKey]: unknown[], pagination }`; items are checked one by one later. */
function listContentSchema(itemsKey: string): z.ZodType<Record<string, unknown> & { pagination: Pagination }> {
  let schema = listContentSchemas.get(itemsKey);
  if (schema === undefined) listContentSchemas.set(itemsKey, (schema = buildListContentSchema(itemsKey)));
  return schema;
}

function buildListContentSchema(itemsKey: string): z.ZodType<Record<string, unknown> & { pagination: Pagination }> {
  return z.looseObject({ [itemsKey]: z.array(z.unknown()), pagination: paginationSchema }) as unknown as z.ZodType<
    Record<string, unknown> & { pagination: Pagination }
  >;
}
