/**
 * The read key of the daemon's HTTP port (config `http.readApiKey`, env `BIZOPS_READ_API_KEY`):
 * routes that show the mirror's data to other programs (the changelog, named consumers, event
 * schemas) answer only a request carrying `Authorization: Bearer <http.readApiKey>`. With no key
 * configured those routes are off: `readRoutes` answers nothing and the server's own 404 applies.
 *
 * Reusable by any route group on the same key and port: give `readRoutes` the routes, put the
 * result in the server's `routeFirst` chain (http-server.ts `firstRouteOf`).
 *
 *   routeFirst: firstRouteOf(writeRoutes, readRoutes({ key: config.http.readApiKey, routes: [changesRoute, ...] }))
 *
 * A wrong or missing key is `401` with `WWW-Authenticate: Bearer` and a JSON error naming the header
 * and the setting, never the key. Comparison is constant-time over SHA-256 digests (no length leak).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FirstRoute } from './http-server.ts';

/** Fewest characters of a read key (config rule of `http.readApiKey`). */
export const READ_API_KEY_MIN_LENGTH = 16;

/**
 * True when `request` carries `Authorization: Bearer <key>` (scheme in any case), compared in
 * constant time. False for any other header, or none.
 */
export function bearerKeyMatches(request: IncomingMessage, key: string): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  if (!match) return false;
  const presented = createHash('sha256').update(match[1]!).digest();
  const expected = createHash('sha256').update(key).digest();
  return timingSafeEqual(presented, expected);
}

/** One route behind the read key: which paths it takes, and how it answers them. */
export interface ReadRoute {
  /** True when this route answers `pathname` (decoded path, without the query). */
  matches(pathname: string): boolean;
  /**
   * Answers the request (any method the route supports; it answers 405 itself for others).
   * `url` is the parsed request URL (query in `url.searchParams`).
   */
  handle(request: IncomingMessage, response: ServerResponse, url: URL): Promise<void>;
}

/** What `readRoutes` guards. */
export interface ReadRoutesOptions {
  /** config `http.readApiKey`; undefined (or empty) turns the routes off. */
  key: string | undefined;
  routes: readonly ReadRoute[];
  /** The setting named in the 401's message. Default `http.readApiKey`. */
  setting?: string;
}

/**
 * A `FirstRoute` answering `routes` behind the bearer key: resolves false (not answered) when the
 * key is unset or no route matches the path, answers 401 when the key is wrong, else lets the route
 * answer.
 */
export function readRoutes(options: ReadRoutesOptions): FirstRoute {
  const setting = options.setting ?? 'http.readApiKey';
  return async (request, response) => {
    const key = options.key;
    if (!key) return false;
    const url = new URL(request.url ?? '/', 'http://daemon.local');
    const route = options.routes.find((candidate) => candidate.matches(url.pathname));
    if (!route) return false;
    if (!bearerKeyMatches(request, key)) {
      sendJson(response, 401, { error: `Authorization: missing or wrong bearer key; send Authorization: Bearer <${setting}>` }, { 'www-authenticate': 'Bearer' });
      return true;
    }
    await route.handle(request, response, url);
    return true;
  };
}

/**
 * Sends `body` as JSON with `status` (no caching; `headers` added). HEAD requests get the headers only.
 */
export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = `${JSON.stringify(body)}\n`;
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(text)),
    'cache-control': 'no-store',
    ...headers,
  });
  response.end(response.req?.method === 'HEAD' ? undefined : text);
}
