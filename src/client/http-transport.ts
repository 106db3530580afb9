/**
 * The one request function: every byte the API client sends goes through `HttpTransport.send`, on a
 * keep-alive undici `Pool` for the `{base_url}` origin (spec §1 convention 1). Rate limiting, error
 * mapping and retries are layers around it (client.ts, retry.ts), in the manner of Octokit's plugins.
 *
 * It knows nothing about the API's envelope or statuses: it returns whatever status arrived. What it
 * does decide is how a failed exchange is reported: as a `ConnectionError` whose `requestSent` is
 * false only when the request provably never reached the server (refused, no DNS answer, connect
 * timeout) and true otherwise (a reset, a closed socket, a headers or body timeout after sending),
 * because a non-idempotent write must not be re-sent on an ambiguous outcome (docs/writes.md "Retry safety").
 *
 * Every exchange also has a deadline (`deadlineMs`) covering the whole of it, connect to the last
 * byte of the body: undici's headers and body timeouts restart with each chunk, so a server sending
 * 50 bytes every 2 s would otherwise hold a request for as long as it likes. Past the deadline the
 * exchange is aborted and fails with a `RequestDeadlineError` (a `ConnectionError`, retried like one).
 *
 * Redirects are never followed. Error messages name the method, path and system error code, never a
 * header (so never the bearer token).
 */
import { Pool } from './undici-pool.ts';
import { ConnectionError, RequestDeadlineError, type RequestDescription } from './api-errors.ts';
import { maskSecrets } from '../logging/mask.ts';

/** Query values: arrays become repeated parameters, `undefined` is left out, booleans are `true`/`false`. */
export type QueryValue = string | number | boolean | readonly string[] | undefined;
/** Query parameters by name (see `QueryValue`). */
export type Query = Record<string, QueryValue>;

/** One HTTP exchange to send: method, path below the base URL, query, serialised body, headers. */
export interface HttpRequest {
  method: string;
  /** Path below the transport's base URL, starting with `/`, e.g. `/transactions`. */
  path: string;
  query?: Query;
  /** Request body, already serialised (the client sends JSON). */
  body?: string;
  headers?: Record<string, string>;
  /** Aborts the exchange; it then fails with a `ConnectionError` of code `ABORTED`. */
  signal?: AbortSignal;
}

/** Whatever answer arrived, any status: the status, lower-cased headers and the whole body as text. */
export interface HttpResponse {
  status: number;
  /** Response headers, names in lower case. */
  headers: Record<string, string | string[] | undefined>;
  bodyText: string;
}

/** Options of `createHttpTransport`: the base URL, timeouts (ms) and the pool size. */
export interface HttpTransportOptions {
  /** Base URL every path is appended to, e.g. `http://127.0.0.1:4010/api/public/v1`. */
  baseUrl: string;
  /** Longest wait for the response headers after sending, ms. Default 30000. */
  headersTimeoutMs?: number;
  /** Longest silence between two chunks of the response body, ms. Default 30000. */
  bodyTimeoutMs?: number;
  /** Longest wait to establish a connection, ms. Default 10000. */
  connectTimeoutMs?: number;
  /** Keep-alive connections kept open to the origin. Default 16. */
  connections?: number;
  /** Longest time one whole exchange may take, body included, ms (module comment). Default 60000. */
  deadlineMs?: number;
}

/** The one request function of the API client, over a keep-alive pool (see this module's header). */
export interface HttpTransport {
  /**
   * Sends one request and reads the whole response body.
   * @throws ConnectionError when no complete response arrived (see the module comment for `requestSent`).
   */
  send(request: HttpRequest): Promise<HttpResponse>;
  /** Closes the keep-alive connections; requests in flight finish first. */
  close(): Promise<void>;
}

/** Codes meaning the request never left this machine or never reached a listening server. */
const UNSENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'UND_ERR_CONNECT_TIMEOUT', 'EHOSTUNREACH', 'ENETUNREACH']);

/** Human wording for the common codes, used in `ConnectionError` messages. */
const CODE_WORDING: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'DNS lookup failed',
  EAI_NONAME: 'host not found',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_CONNECT_TIMEOUT: 'connect timeout',
  UND_ERR_HEADERS_TIMEOUT: 'timed out waiting for response headers',
  UND_ERR_BODY_TIMEOUT: 'timed out reading the response body',
  UND_ERR_SOCKET: 'socket closed',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection closed while sending',
  UND_ERR_RES_CONTENT_LENGTH_MISMATCH: 'response body shorter than its Content-Length',
  ABORTED: 'request aborted',
};

/**
 * `?limit=100&type=INCOME&type=EXPENSE` from a query object, keys in the given order; empty string
 * when nothing is set.
 */
function buildQueryString(query: Query | undefined): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) {
      for (const item of value as readonly string[]) params.append(name, item);
    } else {
      params.append(name, String(value));
    }
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

/** `GET /transactions?offset=200`: how a request is named in errors and logs (no headers, no body). */
export function describeRequest(method: string, path: string, query?: Query): RequestDescription {
  return { method, path: `${path}${buildQueryString(query)}` };
}

/** The system or undici error code of a failure, looking through `AggregateError` and `cause`. */
function errorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && code) return code;
    const inner = (current as { errors?: unknown }).errors;
    if (Array.isArray(inner) && inner.length > 0) {
      current = inner[0];
      continue;
    }
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * Maps a socket-level failure to a `ConnectionError`: `requestSent` is false only for the codes that
 * prove the server never saw the request (refused, DNS, connect timeout). An abort by the caller's
 * signal is code `ABORTED` with `requestSent` true (the request may have been on the wire).
 */
function toConnectionError(error: unknown, request: RequestDescription, aborted: boolean): ConnectionError {
  const code = aborted ? 'ABORTED' : (errorCode(error) ?? 'UNKNOWN');
  const wording = CODE_WORDING[code] ?? 'connection failed';
  const detail = error instanceof Error && error.message && !aborted ? maskSecrets(error.message) : undefined;
  return new ConnectionError({
    message: `${wording} (${code})`,
    err: detail && detail !== wording ? detail : undefined,
    code,
    requestSent: !UNSENT_CODES.has(code),
    request,
    cause: error,
  });
}

/** Joins a base URL's path and a request path without doubling or losing the slash. */
function joinPath(basePath: string, path: string): string {
  const base = basePath.endsWith('/') ? basePath.slice(0, -1) : basePath;
  return `${base}${path.startsWith('/') ? path : `/${path}`}`;
}

/**
 * Creates the transport for one base URL.
 * @throws TypeError when `baseUrl` is not an http(s) URL.
 */
export function createHttpTransport(options: HttpTransportOptions): HttpTransport {
  const url = new URL(options.baseUrl);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`baseUrl must be an http or https URL, got protocol "${url.protocol}"`);
  }
  const headersTimeout = options.headersTimeoutMs ?? 30_000;
  const bodyTimeout = options.bodyTimeoutMs ?? 30_000;
  const pool = new Pool(url.origin, {
    connections: options.connections ?? 16,
    headersTimeout,
    bodyTimeout,
    connect: { timeout: options.connectTimeoutMs ?? 10_000 },
  });
  const basePath = url.pathname;
  const deadlineMs = options.deadlineMs ?? 60_000;

  return {
    async send(request: HttpRequest): Promise<HttpResponse> {
      const description = describeRequest(request.method, request.path, request.query);
      const callerSignal = request.signal;
      if (callerSignal?.aborted) throw toConnectionError(callerSignal.reason, { ...description }, true);
      // One signal for undici: the deadline's, which the caller's abort aborts too (with its reason).
      // A listener taken off when the attempt ends, not `AbortSignal.any`: that one ties a new signal
      // per request to the caller's long-lived one through weak references, whose targets V8 keeps
      // through every young-generation collection, so each request's signal and what its listeners
      // held went to the old generation (a 100,000-record backfill promoted 44-45 MB, now 40-42 MB).
      const deadline = new AbortController();
      const timer = setTimeout(() => deadline.abort(), deadlineMs);
      const onCallerAbort = (): void => deadline.abort(callerSignal?.reason);
      callerSignal?.addEventListener('abort', onCallerAbort, { once: true });
      const signal = deadline.signal;
      try {
        const response = await pool.request({
          origin: url.origin,
          method: request.method as 'GET',
          path: `${joinPath(basePath, request.path)}${buildQueryString(request.query)}`,
          headers: request.headers,
          body: request.body,
          signal,
          headersTimeout,
          bodyTimeout,
        });
        const bodyText = await response.body.text();
        return { status: response.statusCode, headers: response.headers, bodyText };
      } catch (error) {
        if (deadline.signal.aborted && callerSignal?.aborted !== true) {
          throw new RequestDeadlineError({
            message: `the whole request took longer than its deadline of ${deadlineMs} ms (DEADLINE)`,
            request: description,
            deadlineMs,
            cause: error,
          });
        }
        throw toConnectionError(error, description, callerSignal?.aborted === true);
      } finally {
        clearTimeout(timer);
        callerSignal?.removeEventListener('abort', onCallerAbort);
      }
    },
    async close(): Promise<void> {
      await pool.close();
    },
  };
}
