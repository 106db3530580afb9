/**
 * One typed error hierarchy for everything the API client can throw (spec §7), in the manner of
 * Stripe's Node library: callers branch on the class, never on a status number.
 *
 *   BizopsApiError                      base: status, message, err, retryAfter (seconds)
 *   ├─ InvalidRequestError              400 / 422: the body or parameters were refused (spec: "not shown")
 *   ├─ AuthenticationError              401: missing or invalid token (spec: "not shown")
 *   ├─ PermissionError                  403: scope missing, address not owned, purchase limit, ...
 *   ├─ NotFoundError                    404
 *   ├─ ConflictError                    409: clock-in while open, domain unavailable
 *   ├─ RateLimitError                   429: `retryAfter` from the body or the `Retry-After` header
 *   ├─ ServerError                      5xx
 *   ├─ ConnectionError                  no HTTP status: refused, reset, timeout; `requestSent` says whether
 *   │  │                                the request may have reached the server (write safety, docs/writes.md)
 *   │  └─ RequestDeadlineError         the whole request (headers and body) outlasted its deadline
 *   └─ InvalidResponseError             a 2xx whose body is not JSON or fails the response schema
 *      └─ MalformedResponseError        the body is not JSON at all (a truncated or proxy page: worth a retry)
 *
 * Like Stripe's errors, each keeps what the server answered: `status`, the response `headers`, the
 * `requestId` the server gave it (`X-Request-Id`, when sent) and the `rawBody` as received, so a
 * failure can be reported to the API's operators exactly.
 *
 * Messages, `rawBody` and `err` never contain the bearer token: the client builds messages from the
 * method, the path and the server's own `message`/`err`, and masks any token the server echoed.
 *
 * Outside the hierarchy: `UnknownTokenError`, a request naming a token that is not configured
 * (a caller's mistake, found before anything is sent).
 */

/** What the error came from, for log lines and `status` output: `GET /transactions?offset=200`. */
export interface RequestDescription {
  method: string;
  /** Path relative to `/api/public/v1`, with its query string. */
  path: string;
}

/** Construction options of every BizopsApiError: the status, the server's `message`/`err`, `retryAfter` (seconds), the request. */
export interface BizopsApiErrorOptions {
  status?: number;
  /** The server's `message` (spec §7), or our own description when the server gave none. */
  message: string;
  /** The server's `err` detail (spec §7), when present. */
  err?: string;
  /** Seconds to wait before trying again (spec §7: 429 body `retryAfter`, header `Retry-After`). */
  retryAfter?: number;
  request?: RequestDescription;
  /** The response headers, names in lower case, when a response arrived. */
  headers?: Readonly<Record<string, string | string[] | undefined>>;
  /** The response body exactly as received (tokens masked), when a response arrived. */
  rawBody?: string;
  /**
   * The request's URL without its query, base URL included (password masked): set for a 401 or a
   * 404, where the base URL or the token is the likely mistake. The message then ends
   * `(HTTP <status> from <url>)` instead of naming the request by its path.
   */
  url?: string;
  cause?: unknown;
}

/** Base of every error the API client throws (spec §7); also thrown as is for a non-2xx status with no subclass (a 3xx, 402, 410, ...). */
export class BizopsApiError extends Error {
  /** HTTP status, or undefined when no response arrived. */
  readonly status: number | undefined;
  /** The server's `err` detail string, when it sent one. */
  readonly err: string | undefined;
  /** Seconds the server asked us to wait, when it said. */
  readonly retryAfter: number | undefined;
  readonly request: RequestDescription | undefined;
  /** The response headers (lower-case names); undefined when no response arrived. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>> | undefined;
  /** The server's id of the request (`X-Request-Id` or `Request-Id` header), when it sent one. */
  readonly requestId: string | undefined;
  /** The response body as received (tokens masked); undefined when no response arrived. */
  readonly rawBody: string | undefined;
  /** The request's URL, base URL included, without its query: set for a 401 or a 404 (`BizopsApiErrorOptions.url`). */
  readonly url: string | undefined;

  constructor(options: BizopsApiErrorOptions) {
    const requestName = options.request ? `${options.request.method} ${options.request.path}` : '';
    // A message that already starts with the request's name (`GET /deals?offset=0: item 3 ...`) is not suffixed again.
    const where =
      options.url !== undefined
        ? ` (HTTP ${options.status ?? '?'} from ${options.url})`
        : options.request && !options.message.startsWith(requestName)
          ? ` (${requestName})`
          : '';
    const detail = options.err ? `: ${options.err}` : '';
    super(`${options.message}${detail}${where}`, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.status = options.status;
    this.err = options.err;
    this.retryAfter = options.retryAfter;
    this.request = options.request;
    this.headers = options.headers;
    this.rawBody = options.rawBody;
    this.url = options.url;
    const id = options.headers?.['x-request-id'] ?? options.headers?.['request-id'];
    this.requestId = Array.isArray(id) ? id[0] : id;
  }
}

/** 400 or 422: the server refused the body or parameters (spec §7: "not shown"). */
export class InvalidRequestError extends BizopsApiError {}
/** 401: the token is missing or invalid (spec §5, §7: "not shown"). */
export class AuthenticationError extends BizopsApiError {}
/** 403: the token lacks the scope, or a rule of the endpoint refused the caller (spec §5.3, §7). */
export class PermissionError extends BizopsApiError {}
/** 404: missing, or outside the caller's reach (spec §7). */
export class NotFoundError extends BizopsApiError {}
/** 409: clock-in while an entry is open, domain not available (spec §4.14, §4.19, §7). */
export class ConflictError extends BizopsApiError {}
/** 429: the rate limit is spent; `retryAfter` in seconds from the body or the `Retry-After` header (spec §7, §8). */
export class RateLimitError extends BizopsApiError {}
/** 5xx: the server failed; whether a write landed is unknown. */
export class ServerError extends BizopsApiError {}

/** Options of a ConnectionError: whether the request may have reached the server, and the system error code. */
export interface ConnectionErrorOptions extends BizopsApiErrorOptions {
  /**
   * False only when the request provably never reached the server (connection refused, DNS failure,
   * our own rate-budget abort). True when bytes may have been sent: a reset or timeout after sending
   * makes the outcome ambiguous, and a non-idempotent write must not be re-sent blindly.
   */
  requestSent: boolean;
  /** The system error code, e.g. `ECONNREFUSED`, `ECONNRESET`, `UND_ERR_HEADERS_TIMEOUT`. */
  code?: string;
}

/** No HTTP answer (refused, reset, timeout, aborted); `requestSent` says whether the server may have processed it. */
export class ConnectionError extends BizopsApiError {
  readonly requestSent: boolean;
  readonly code: string | undefined;
  constructor(options: ConnectionErrorOptions) {
    super(options);
    this.requestSent = options.requestSent;
    this.code = options.code;
  }
}

/**
 * The whole exchange (connect, headers and every byte of the body) outlasted the request deadline
 * (config `api.requestDeadlineSeconds`): a server trickling its body is cut off here, since undici's
 * own timeouts apply between chunks only. Code `DEADLINE`, `requestSent` true; the retry layer
 * retries it like any timeout of a request that may be sent again.
 */
export class RequestDeadlineError extends ConnectionError {
  /** The deadline that was exceeded, ms. */
  readonly deadlineMs: number;
  constructor(options: Omit<ConnectionErrorOptions, 'code' | 'requestSent'> & { deadlineMs: number }) {
    super({ ...options, code: 'DEADLINE', requestSent: true });
    this.deadlineMs = options.deadlineMs;
  }
}

/** A 2xx whose body is not JSON, lacks the `{ message, content }` envelope, or fails the response schema; the message names the field. */
export class InvalidResponseError extends BizopsApiError {}

/**
 * A list that would page forever (spec §1 Pagination: `hasMore` never turns false): offsets passed
 * `pagination.total` plus one page, or the pages repeated more ids already seen in this pagination
 * than the bound (src/client/paginate.ts). Never retried: following the list further cannot help.
 */
export class EndlessListError extends InvalidResponseError {}

/** A 2xx body that is not JSON at all; unlike a schema mismatch, a retry may get a good copy. */
export class MalformedResponseError extends InvalidResponseError {}

/**
 * A request named a token (`RequestOptions.token`, a write's `actAs`) that is not configured.
 * Thrown before anything is sent; the message names the configured token NAMES, never a token.
 */
export class UnknownTokenError extends Error {
  override name = 'UnknownTokenError';
  /** The name asked for. */
  readonly tokenName: string;

  constructor(tokenName: string, request: RequestDescription, configured: readonly string[]) {
    super(`unknown token name "${tokenName}" for ${request.method} ${request.path}; configured: ${configured.join(', ')}`);
    this.tokenName = tokenName;
  }
}

/** Where a request went, for the messages of a 401 and a 404 (`errorForStatus`). */
export interface RequestOrigin {
  /** The base URL with `/api/public/v1`, password masked: `https://api.example.com/api/public/v1`. */
  apiUrl: string;
  /** How to name the token the request carried: `BIZOPS_TOKEN`, `the token "hr"`. */
  token: string;
}

/**
 * Maps an HTTP error status and the server's error body to the class above.
 * With `origin`, a 401 reads `the API refused BIZOPS_TOKEN (HTTP 401 from <base URL>/api/public/v1/transactions)`
 * (the server's own words stay in `rawBody`: the masking of bearer tokens would garble "Bearer token"),
 * and a 404 ends `(HTTP 404 from <that URL>)`: both name what the user set.
 * @param status HTTP status (>= 400)
 * @param body the parsed error body, if it was JSON: `{ message, err?, retryAfter? }` (spec §7)
 * @param response the headers and raw body as received, kept on the error
 * @param origin the API's URL and the token's name, for a 401's and a 404's message
 */
export function errorForStatus(
  status: number,
  body: { message?: unknown; err?: unknown; retryAfter?: unknown } | undefined,
  request: RequestDescription,
  retryAfterSeconds?: number,
  response: Pick<BizopsApiErrorOptions, 'headers' | 'rawBody'> = {},
  origin?: RequestOrigin,
): BizopsApiError {
  const url = origin && (status === 401 || status === 404) ? `${origin.apiUrl}${request.path.split('?')[0]}` : undefined;
  const options: BizopsApiErrorOptions = {
    ...response,
    status,
    message: typeof body?.message === 'string' && body.message ? body.message : `HTTP ${status}`,
    err: typeof body?.err === 'string' ? body.err : undefined,
    retryAfter:
      retryAfterSeconds ?? (typeof body?.retryAfter === 'number' && Number.isFinite(body.retryAfter) ? body.retryAfter : undefined),
    request,
    url,
  };
  if (status === 401 && origin) {
    options.message = `the API refused ${origin.token}`;
    options.err = undefined;
  }
  if (status === 400 || status === 422) return new InvalidRequestError(options);
  if (status === 401) return new AuthenticationError(options);
  if (status === 403) return new PermissionError(options);
  if (status === 404) return new NotFoundError(options);
  if (status === 409) return new ConflictError(options);
  if (status === 429) return new RateLimitError(options);
  if (status >= 500) return new ServerError(options);
  return new BizopsApiError(options);
}

/**
 * The one line a failed run keeps of its error (`sync_state.last_error`, the console's recent
 * runs): the error's message, led by `HTTP <status>: ` when the API answered with a status the
 * message does not already name (a server's own `message`, e.g. "Service unavailable", rarely says
 * it). Anything else: its message as it is (a string for a non-Error).
 */
export function errorLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const status = error instanceof BizopsApiError ? error.status : undefined;
  if (status === undefined || new RegExp(`\\bHTTP ${status}\\b`).test(message)) return message;
  return `HTTP ${status}: ${message}`;
}
