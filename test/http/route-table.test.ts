/**
 * The route table (src/http/route-table.ts) on a real daemon HTTP server: a path without parameters
 * is found by its lookup, a path with parameters by its pattern, both together when both take a
 * path (405 with every method in `Allow`); a route's `quickQuery` answers the common query, its zod
 * schema the rest and every refusal; the key is checked against the digest computed once, by the
 * `BearerKey` each configured key has in the table (the bearer module keeps no keys of its own).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startDaemonHttpServer, type RunningHttpServer } from '../../src/daemon/http-server.ts';
import { sendJson } from '../../src/daemon/read-access.ts';
import * as bearerModule from '../../src/http/bearer.ts';
import { defineRouteSpec, route, type RouteSpec } from '../../src/http/route.ts';
import { RouteTable } from '../../src/http/route-table.ts';

const KEY = 'read-key-for-route-table-tests';
let server: RunningHttpServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

const spec = <const S extends Omit<RouteSpec, 'tags' | 'access' | 'summary' | 'responses'>>(declared: S) =>
  defineRouteSpec({ tags: ['test'], access: 'read', summary: declared.operationId, responses: { 200: { description: 'ok' } }, ...declared });

async function call(path: string, init: { method?: string; key?: string } = {}): Promise<{ status: number; allow: string | null; body: Record<string, unknown> }> {
  const response = await fetch(`${server!.url}${path}`, { method: init.method ?? 'GET', headers: { authorization: `Bearer ${init.key ?? KEY}` } });
  return { status: response.status, allow: response.headers.get('allow'), body: (await response.json()) as Record<string, unknown> };
}

describe('the route table', () => {
  it('finds literal and templated paths, answers the common query by hand and the rest by the schema', async () => {
    const quickAnswers: string[] = [];
    const count = z.object({ n: z.string().regex(/^\d+$/, { error: 'n: must be digits' }).transform(Number) });
    const routes = [
      route(
        spec({
          method: 'GET',
          path: '/things',
          operationId: 'listThings',
          query: count,
          quickQuery: (query: URLSearchParams) => {
            const n = query.get('n');
            if (n === null || !/^\d$/.test(n)) return undefined;
            quickAnswers.push(n);
            return { n: Number(n) };
          },
        }),
        async (_request, response, { query }) => sendJson(response, 200, { route: 'list', n: query.n }),
      ),
      route(spec({ method: 'GET', path: '/things/special', operationId: 'special' }), async (_request, response) => sendJson(response, 200, { route: 'special' })),
      route(spec({ method: 'DELETE', path: '/things/{name}', operationId: 'deleteThing', params: z.object({ name: z.string() }) }), async (_request, response, { params }) =>
        sendJson(response, 200, { route: 'delete', name: params.name }),
      ),
      route(spec({ method: 'GET', path: '/things/{name}/parts', operationId: 'parts', params: z.object({ name: z.string() }) }), async (_request, response, { params }) =>
        sendJson(response, 200, { route: 'parts', name: params.name }),
      ),
    ];
    server = await startDaemonHttpServer({
      host: '127.0.0.1',
      port: 0,
      readiness: async () => ({ ready: true, status: 200, reason: 'test', checkedAt: null }),
      metrics: async () => ({ contentType: 'text/plain', body: '' }),
      routes: new RouteTable({ readKey: KEY }).mount(routes),
    });

    // The common query by hand; anything else by the schema, which words the refusal.
    expect(await call('/things?n=7')).toMatchObject({ status: 200, body: { route: 'list', n: 7 } });
    expect(await call('/things?n=42')).toMatchObject({ status: 200, body: { route: 'list', n: 42 } });
    expect(await call('/things?n=x')).toMatchObject({ status: 400, body: { parameter: 'n', error: 'n: must be digits' } });
    expect(quickAnswers).toEqual(['7']);

    // A literal path and a template both taking `/things/special`: each method to its route, 405 naming both.
    expect(await call('/things/special')).toMatchObject({ status: 200, body: { route: 'special' } });
    expect(await call('/things/special', { method: 'DELETE' })).toMatchObject({ status: 200, body: { route: 'delete', name: 'special' } });
    const refused = await call('/things/special', { method: 'POST' });
    expect(refused).toMatchObject({ status: 405, allow: 'GET, HEAD, DELETE' });
    expect(await call('/things/a%20b/parts')).toMatchObject({ status: 200, body: { route: 'parts', name: 'a b' } });
    expect(await call('/things/a/parts/more')).toMatchObject({ status: 404 });

    // The key: the digest of the configured one, compared with each presented.
    expect(await call('/things?n=1', { key: `${KEY}x` })).toMatchObject({ status: 401, body: { parameter: 'authorization' } });
    expect(await call('/things?n=1', { key: KEY.slice(0, -1) })).toMatchObject({ status: 401 });
    const lowerScheme = await fetch(`${server.url}/things?n=1`, { headers: { authorization: `bearer   ${KEY}  ` } });
    expect(lowerScheme.status).toBe(200);
  });

  it('holds one BearerKey per configured key: carriesKey answers for either key, the bearer module keeps none', async () => {
    const writeKey = 'write-key-for-route-table-tests';
    const table = new RouteTable({ readKey: KEY, writeKey });
    server = await startDaemonHttpServer({
      host: '127.0.0.1',
      port: 0,
      readiness: async () => ({ ready: true, status: 200, reason: 'test', checkedAt: null }),
      metrics: async () => ({ contentType: 'text/plain', body: '' }),
      routes: table,
      notFound: (request) => (table.carriesKey(request) ? 'keyed caller' : undefined),
    });
    const notFound = async (authorization?: string) => {
      const response = await fetch(`${server!.url}/nowhere`, { headers: authorization === undefined ? {} : { authorization } });
      return { status: response.status, error: ((await response.json()) as { error: string }).error };
    };
    expect(await notFound(`Bearer ${KEY}`)).toEqual({ status: 404, error: 'keyed caller' });
    expect(await notFound(`bearer ${writeKey}`)).toEqual({ status: 404, error: 'keyed caller' });
    expect((await notFound(`Bearer ${KEY}x`)).error).toMatch(/^no route \/nowhere/);
    expect((await notFound()).error).toMatch(/^no route \/nowhere/);

    // No module-level matcher taking a key per call (and caching its digest): only the class.
    expect(Object.keys(bearerModule)).toEqual(['BearerKey']);
  });
});
