/**
 * Is the API's host reachable at all? A TCP connection to the base URL's host and port, before a
 * command or the daemon starts its runs (docs/operations.md "An unreachable API"). It sends no HTTP
 * request, so it costs nothing of the rate budget: a closed port or a host name that does not resolve
 * ends `sync`/`backfill` with one line naming the address within seconds (exit 1), and the daemon
 * refuses to start the same way, instead of every stream retrying in turn for minutes.
 *
 * Whatever answers at the TCP level (a proxy, a server answering 5xx) counts as reachable: what the
 * API then answers is the runs' business (retries, conditions, a wrong base URL's 404 check).
 */
import { lookup } from 'node:dns/promises';
import { connect } from 'node:net';
import pRetry from 'p-retry';

/** The API's host refused or could not be found for the whole window; the message names the address and the cause. */
export class ApiUnreachableError extends Error {
  override name = 'ApiUnreachableError';
  /** The base URL tried, without user or password. */
  readonly baseUrl: string;
  /** The last system error code (`ECONNREFUSED`, `ENOTFOUND`, `EAI_AGAIN`, `ETIMEDOUT`, ...). */
  readonly code: string;

  constructor(baseUrl: string, code: string, detail: string, windowMs: number, key: string) {
    super(`${key}: cannot reach the API at ${baseUrl}: ${detail} (${code}); tried for ${Math.round(windowMs / 1000)} s`);
    this.baseUrl = baseUrl;
    this.code = code;
  }
}

/** Options of `assertApiReachable`. */
export interface ReachabilityOptions {
  /** How long to keep trying before giving up (ms); default 10,000: a host restarting is given that long. */
  windowMs?: number;
  /** One attempt's connect timeout (ms); default 3,000. */
  attemptTimeoutMs?: number;
  /** The wait between attempts (ms); default 1,000. */
  retryDelayMs?: number;
  /** How the setting is named in the message; default `BIZOPS_BASE_URL (baseUrl)`. */
  key?: string;
  signal?: AbortSignal;
}

const DETAILS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name could not be resolved (DNS)',
  ETIMEDOUT: 'no answer to the connection',
  EHOSTUNREACH: 'no route to the host',
  ENETUNREACH: 'the network is unreachable',
};

/** The base URL as printed: no user, password, query or fragment. */
function printable(url: URL): string {
  const shown = new URL(url.href);
  shown.username = '';
  shown.password = '';
  shown.search = '';
  shown.hash = '';
  return shown.href.replace(/\/$/, '');
}

/** One TCP connection attempt; resolves when it connects, rejects with the system error. */
async function tryConnect(host: string, port: number, timeoutMs: number): Promise<void> {
  const { address } = await lookup(host);
  await new Promise<void>((resolve, reject) => {
    const socket = connect({ host: address, port });
    const fail = (error: Error) => {
      socket.destroy();
      reject(error);
    };
    socket.setTimeout(timeoutMs, () => fail(Object.assign(new Error('connect timed out'), { code: 'ETIMEDOUT' })));
    socket.once('error', fail);
    socket.once('connect', () => {
      socket.end();
      socket.destroy();
      resolve();
    });
  });
}

/**
 * Resolves once a TCP connection to `baseUrl`'s host and port (80/443 by default) succeeds; retries
 * a refused or failed connection every `retryDelayMs` for `windowMs`.
 * @param baseUrl the configured `baseUrl` (spec §1 `{base_url}`)
 * @throws ApiUnreachableError when no attempt connected within the window (the CLI prints it as one line, exit 1)
 */
export async function assertApiReachable(baseUrl: string, options: ReachabilityOptions = {}): Promise<void> {
  const windowMs = options.windowMs ?? 10_000;
  const url = new URL(baseUrl);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  const started = Date.now();
  try {
    // p-retry (as src/client/retry.ts): an attempt every `retryDelayMs`, the last one starting a delay before the window ends.
    const retryDelayMs = options.retryDelayMs ?? 1_000;
    await pRetry(() => tryConnect(host, port, Math.max(100, Math.min(options.attemptTimeoutMs ?? 3_000, windowMs - (Date.now() - started)))), {
      retries: Number.POSITIVE_INFINITY,
      factor: 1,
      minTimeout: retryDelayMs,
      randomize: false,
      maxRetryTime: Math.max(0, windowMs - retryDelayMs),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'ECONNECT';
    throw new ApiUnreachableError(printable(url), code, DETAILS[code] ?? (error as Error).message, Date.now() - started, options.key ?? 'BIZOPS_BASE_URL (baseUrl)');
  }
}
