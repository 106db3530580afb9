/**
 * The read key (`http.readApiKey`, `BIZOPS_READ_API_KEY`): the configuration's rule, its masking,
 * and the bearer check of the route table (src/http/route-table.ts, access `read`) on a real daemon HTTP server: routes behind it
 * are off without a key, answer 401 to a wrong one, and leave /healthz open.
 */
import { writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, deploymentSecrets, loadConfig, maskConfig } from '../../src/config/load.ts';
import { z } from 'zod';
import { startDaemonHttpServer, type RunningHttpServer } from '../../src/daemon/http-server.ts';
import { sendJson } from '../../src/daemon/read-access.ts';
import { defineRouteSpec, route } from '../../src/http/route.ts';
import { RouteTable } from '../../src/http/route-table.ts';
import { tempDir, type TempDir } from '../helpers.ts';

const KEY = 'read-key-0123456789abcdef';
let server: RunningHttpServer | undefined;
let dir: TempDir | undefined;

afterEach(async () => {
  await server?.close();
  dir?.remove();
  server = dir = undefined;
});

const pingSpec = defineRouteSpec({
  method: 'GET',
  path: '/ping',
  operationId: 'ping',
  summary: 'a route behind the read key',
  tags: ['test'],
  access: 'read',
  query: z.object({ n: z.string().optional() }),
  responses: { 200: { description: 'pong' } },
});
const pingRoute = route(pingSpec, async (_request, response, { query }) => sendJson(response, 200, { pong: query.n ?? null }));

async function serve(key: string | undefined): Promise<string> {
  server = await startDaemonHttpServer({
    host: '127.0.0.1',
    port: 0,
    readiness: async () => ({ ready: true, status: 200, reason: 'test', checkedAt: new Date().toISOString() }),
    metrics: async () => ({ contentType: 'text/plain', body: '' }),
    routes: new RouteTable({ readKey: key }).mount([pingRoute]),
  });
  return server.url;
}

function env(extra: Record<string, string>): NodeJS.ProcessEnv {
  dir ??= tempDir();
  writeFileSync(dir.file('config.json'), '{}');
  return { BIZOPS_BASE_URL: 'http://127.0.0.1:4010', BIZOPS_TOKEN: 'default-token-value', BIZOPS_CONFIG: dir.file('config.json'), ...extra };
}

describe('the read key', () => {
  it('is read from BIZOPS_READ_API_KEY, must be 16 characters or more, and is masked and kept out of logs', () => {
    const config = loadConfig({ env: env({ BIZOPS_READ_API_KEY: KEY }) });
    expect(config.http.readApiKey).toBe(KEY);
    expect(JSON.stringify(maskConfig(config))).not.toContain(KEY);
    expect(deploymentSecrets([config])).toContain(KEY);
    expect(loadConfig({ env: env({}) }).http.readApiKey).toBeUndefined();
    expect(() => loadConfig({ env: env({ BIZOPS_READ_API_KEY: 'short' }) })).toThrow(ConfigError);
    expect(() => loadConfig({ env: env({ BIZOPS_READ_API_KEY: 'short' }) })).toThrow(/BIZOPS_READ_API_KEY \(http\.readApiKey\): must be at least 16 characters/);
  });

  it('answers a route behind it only with the right bearer key; without a key configured the route is off (404)', async () => {
    const url = await serve(KEY);
    expect((await fetch(`${url}/ping?n=1`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(200);
    expect(await (await fetch(`${url}/ping?n=7`, { headers: { authorization: `bearer ${KEY}` } })).json()).toEqual({ pong: '7' });
    const wrong = await fetch(`${url}/ping`, { headers: { authorization: `Bearer ${KEY}x` } });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toBe('Bearer');
    const body = (await wrong.json()) as { error: string };
    expect(body.error).toMatch(/Authorization.*http\.readApiKey/);
    expect(body.error).not.toContain(KEY);
    expect((await fetch(`${url}/ping`)).status).toBe(401);
    // Routes not behind the key stay open; unknown paths keep the server's 404.
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect((await fetch(`${url}/nothing`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(404);
    await server!.close();

    const off = await serve(undefined);
    expect((await fetch(`${off}/ping`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(404);
  });
});
