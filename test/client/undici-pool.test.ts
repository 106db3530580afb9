/**
 * The transport's undici `Pool`, loaded without undici's index (src/client/undici-pool.ts): it is
 * undici's own class with its request API, and loading the transport leaves the rest of undici
 * (fetch, WebSocket, caches, mocks) unloaded. A new process, so that nothing else loaded undici first.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const CHECKOUT = fileURLToPath(new URL('../../', import.meta.url));

let server: Server;
let origin: string;

beforeAll(async () => {
  server = createServer((request, response) => {
    response.setHeader('content-type', 'text/plain');
    response.end(`${request.method ?? ''} ${request.url ?? ''}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/**
 * Runs `source` (an ES module) in a new Node process in the checkout; its stdout, parsed as JSON.
 * Asynchronously: the server it talks to answers from this process.
 */
async function runInNewProcess(source: string): Promise<unknown> {
  const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', source], { cwd: CHECKOUT, encoding: 'utf8', env: { ...process.env, ORIGIN: origin } });
  expect(stderr).toBe('');
  return JSON.parse(stdout) as unknown;
}

describe('undici Pool without undici index', () => {
  it('sends a request over HTTP while undici index, fetch and the request API beside `request` stay unloaded', async () => {
    const outcome = await runInNewProcess(`
      import { createRequire } from 'node:module';
      const { createHttpTransport } = await import('./src/client/http-transport.ts');
      const transport = createHttpTransport({ baseUrl: process.env.ORIGIN + '/api' });
      const response = await transport.send({ method: 'GET', path: '/deals', query: { limit: 1 } });
      await transport.close();
      const loaded = Object.keys(createRequire(import.meta.url).cache).map((file) => file.replace(/^.*node_modules\\//, ''));
      console.log(JSON.stringify({ status: response.status, body: response.bodyText, index: loaded.includes('undici/index.js'), fetch: loaded.some((file) => file.startsWith('undici/lib/web/fetch/')), otherApi: ['stream', 'pipeline', 'connect', 'upgrade'].map((name) => 'undici/lib/api/api-' + name + '.js').filter((file) => loaded.includes(file)) }));
    `);
    expect(outcome).toEqual({ status: 200, body: 'GET /api/deals?limit=1', index: false, fetch: false, otherApi: [] });
  });

  it("is undici's own Pool class, with its request API, when undici's index is loaded too", async () => {
    const outcome = await runInNewProcess(`
      const { Pool } = await import('./src/client/undici-pool.ts');
      const undici = await import('undici');
      const pool = new Pool(process.env.ORIGIN);
      const response = await pool.request({ method: 'GET', path: '/after-index' });
      const body = await response.body.text();
      await pool.close();
      console.log(JSON.stringify({ same: Pool === undici.Pool, instance: pool instanceof undici.Dispatcher, body }));
    `);
    expect(outcome).toEqual({ same: true, instance: true, body: 'GET /after-index' });
  });
});
