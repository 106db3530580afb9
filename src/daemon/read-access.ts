/**
 * The read key of the daemon's HTTP port (config `http.readApiKey`, env `BIZOPS_READ_API_KEY`):
 * routes that show the mirror's data to other programs (the changelog, named consumers, event
 * schemas, the console) are declared with access `read` (src/http/route.ts) and answer only a
 * request carrying `Authorization: Bearer <http.readApiKey>`. With no key configured the route table
 * does not mount them and the server's 404 applies (src/http/route-table.ts).
 *
 * A wrong or missing key is `401` with `WWW-Authenticate: Bearer` and a JSON error naming the header
 * and the setting, never the key. Comparison is constant-time over SHA-256 digests (no length leak:
 * src/http/bearer.ts).
 */
import type { ServerResponse } from 'node:http';

/** Fewest characters of a read key (config rule of `http.readApiKey`). */
export const READ_API_KEY_MIN_LENGTH = 16;

/**
 * Sends `body` as JSON with `status` (no caching; `headers` added). HEAD requests get the headers only.
 */
export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  sendJsonText(response, status, JSON.stringify(body), headers);
}

/**
 * Sends `json`, a JSON text already encoded, as `sendJson` sends a body (a newline after it).
 */
export function sendJsonText(response: ServerResponse, status: number, json: string, headers: Record<string, string> = {}): void {
  const text = `${json}\n`;
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(text)),
    'cache-control': 'no-store',
    ...headers,
  });
  response.end(response.req?.method === 'HEAD' ? undefined : text);
}
