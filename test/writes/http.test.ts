/**
 * The write API on the daemon's HTTP port (src/writes/queue/write-routes.ts) over real HTTP: bearer key, routes off
 * without a key, 202 / 200 / 400 (a payload nested too deep included) / 401 / 404 / 405 / 409, and the write
 * reaching the simulator.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { handleWritesRequest } from '../../src/writes/queue/index.ts';
import { simulator, writeStack, writeTestBed, type WriteStack, type WriteTestBed } from './support.ts';

const KEY = 'write-key-0123456789abcdef';

let sim: RunningSimulator;
let bed: WriteTestBed;
let stack: WriteStack;
let server: Server;
let base: string;

interface ResponseBody {
  write: Record<string, unknown> & { id: string };
  error: string;
  issues: unknown;
  existingWriteId: string;
}

/** A daemon-like server: the write routes first, 404 for anything they do not handle. */
async function serve(writeApiKey: string | undefined): Promise<void> {
  server = createServer((request, response) => {
    void handleWritesRequest(request, response, { intake: stack.intake, writeApiKey }).then((handled) => {
      if (!handled) response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"no route"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = { authorization: `Bearer ${KEY}` }) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  // Typed as every member present: the assertions check which ones are.
  return { status: response.status, body: (await response.json()) as ResponseBody };
}

beforeEach(async () => {
  sim = await simulator();
  bed = await writeTestBed();
  stack = await writeStack(sim, bed);
});

afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await stack?.close();
  await sim?.close();
  await bed?.cleanup();
});

describe('POST /writes and GET /writes/{id}', () => {
  it('queues a write (202), shows it, and it lands in the simulator', async () => {
    await serve(KEY);
    const posted = await call('POST', '/writes', { kind: 'transaction.create', payload: { type: 'INCOME', amount: 1250, description: 'Via HTTP' } });
    expect(posted.status).toBe(202);
    expect(posted.body.write).toMatchObject({ id: expect.stringMatching(/^wr_/), status: 'queued' });
    const id = posted.body.write.id;
    await stack.finished(id);
    const shown = await call('GET', `/writes/${id}`);
    expect(shown.status).toBe(200);
    expect(shown.body.write).toMatchObject({ id, kind: 'transaction.create', status: 'succeeded', outcome: 'Transaction created', payload: { amount: 1250 } });
    expect(sim.world.transactions.filter((transaction) => transaction.description === 'Via HTTP')).toHaveLength(1);
  });

  it('the Idempotency-Key header makes a repeat the same write (200), a different payload 409', async () => {
    await serve(KEY);
    const headers = { authorization: `Bearer ${KEY}`, 'idempotency-key': 'http-order-7' };
    const payload = { kind: 'deal.close', payload: { dealId: 'deal_x', status: 'WON' } };
    const first = await call('POST', '/writes', payload, headers);
    const second = await call('POST', '/writes', payload, headers);
    expect(first.status).toBe(202);
    expect(second.status).toBe(200);
    expect(second.body.write.id).toBe(first.body.write.id);
    const conflict = await call('POST', '/writes', { kind: 'deal.close', payload: { dealId: 'deal_x', status: 'LOST' } }, headers);
    expect(conflict.status).toBe(409);
    expect(conflict.body.existingWriteId).toBe(first.body.write.id);
  });

  it('refuses an invalid write with 400 naming the field; nothing is stored', async () => {
    await serve(KEY);
    const refused = await call('POST', '/writes', { kind: 'transaction.create', payload: { type: 'INCOME', amount: 0, taxQuarter: 7 } });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('transaction.create: amount: must be at least 1 (cents); taxQuarter: must be 1 to 4');
    expect(refused.body.issues).toEqual([
      { field: 'amount', rule: 'must be at least 1 (cents)' },
      { field: 'taxQuarter', rule: 'must be 1 to 4' },
    ]);
    expect((await call('POST', '/writes', '{not json')).status).toBe(400);
    expect((await call('POST', '/writes', [1])).status).toBe(400);
    // Nested 3,000 and 300,000 levels deep (the payload, the kind): 400 naming the depth limit, never a
    // stack overflow answered 503 with Retry-After (a client following the docs would retry it for ever).
    for (const body of [
      `{"kind":"transaction.create","payload":{"type":"INCOME","amount":1,"notes":${'['.repeat(3000)}${']'.repeat(3000)}}}`,
      `{"kind":"transaction.create","payload":${'['.repeat(300_000)}${']'.repeat(300_000)}}`,
      `{"kind":${'['.repeat(300_000)}${']'.repeat(300_000)},"payload":{}}`,
    ]) {
      const response = await fetch(`${base}/writes`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` }, body });
      const answer = (await response.json()) as ResponseBody;
      expect(response.status, answer.error).toBe(400);
      expect(response.headers.get('retry-after')).toBeNull();
      expect(answer.error).toMatch(/must not nest objects and arrays more than 64 levels deep|kind: must be one of/);
    }
    expect((await bed.connection.get('SELECT COUNT(*) AS n FROM writes'))).toEqual({ n: 0 });
  });

  it('requires the bearer key; answers 404 for an unknown write and 405 for other methods', async () => {
    await serve(KEY);
    expect((await call('POST', '/writes', { kind: 'timeclock.clock_in', payload: {} }, {})).status).toBe(401);
    expect((await call('GET', '/writes/wr_1', undefined, { authorization: 'Bearer wrong-key-000000000000' })).status).toBe(401);
    expect((await call('GET', '/writes/wr_missing')).status).toBe(404);
    expect((await call('DELETE', '/writes/wr_missing')).status).toBe(405);
    expect((await call('GET', '/writes')).status).toBe(405);
    expect((await call('GET', '/healthz')).body).toEqual({ error: 'no route' });
  });

  it('answers 400 (JSON) for a malformed %-escape in /writes/{id}, not 500', async () => {
    await serve(KEY);
    for (const path of ['/writes/wr_%E0%A4%A', '/writes/%zz', '/writes/wr_%']) {
      const response = await call('GET', path);
      expect(response.status, path).toBe(400);
      expect(response.body.error).toMatch(/malformed %-escape/);
    }
    expect((await call('GET', '/writes/wr_%6D%69ssing')).status).toBe(404); // a valid escape still decodes
    expect((await call('GET', '/writes/wr_%00')).status).toBe(404); // no write has an id the mirror cannot store
  });

  it('answers 415 for a body that is not declared application/json; nothing is stored', async () => {
    await serve(KEY);
    const body = JSON.stringify({ kind: 'transaction.create', payload: { type: 'INCOME', amount: 1250 } });
    for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'application/jsonp']) {
      const response = await call('POST', '/writes', body, { authorization: `Bearer ${KEY}`, 'content-type': contentType });
      expect(response.status, contentType).toBe(415);
      expect(response.body.error).toMatch(/application\/json/);
    }
    expect((await bed.connection.get('SELECT COUNT(*) AS n FROM writes'))).toEqual({ n: 0 });
    const accepted = await call('POST', '/writes', body, { authorization: `Bearer ${KEY}`, 'content-type': 'Application/JSON; charset=utf-8' });
    expect(accepted.status).toBe(202);
  });

  it('is off when no write key is configured', async () => {
    await serve(undefined);
    const response = await call('POST', '/writes', { kind: 'timeclock.clock_in', payload: {} });
    expect(response).toEqual({ status: 404, body: { error: 'no route' } });
  });
});
