/**
 * ApiClient against a real local HTTP server (node:http): envelopes, lists, errors, retries, 429s,
 * socket failures and write safety.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ApiClient, type ApiClientOptions } from '../../src/client/client.ts';
import {
  BizopsApiError,
  ConnectionError,
  InvalidResponseError,
  MalformedResponseError,
  NotFoundError,
  PermissionError,
  RateLimitError,
  ServerError,
  UnknownTokenError,
} from '../../src/client/api-errors.ts';
import type { RequestHooks } from '../../src/client/hooks.ts';
import { LocalRateBudget } from '../../src/client/local-rate-budget.ts';
import { transactionListItemSchema, transactionSchema } from '../../src/client/schemas.ts';
import { closedPort, sendEnvelope, sendJson, startTestServer, transactionItem, transactionPage, type Handler, type TestServer } from './test-server.ts';

const TOKEN = 'tok_live_5b0c1f9e7d2a';
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(handler: Handler): Promise<TestServer> {
  const server = await startTestServer(handler);
  cleanups.push(() => server.close());
  return server;
}

function clientFor(baseUrl: string, options: Partial<ApiClientOptions> = {}): { client: ApiClient; budget: LocalRateBudget } {
  const budget = new LocalRateBudget({ limit: 1000, windowMs: 1000 });
  const client = new ApiClient({
    baseUrl,
    tokens: { default: TOKEN, clockin: 'tok_employee_other' },
    budget,
    retry: { maxRetries: 3, minTimeoutMs: 10, maxTimeoutMs: 40 },
    ...options,
  });
  cleanups.push(async () => {
    await client.close();
    await budget.close();
  });
  return { client, budget };
}

const listOptions = { itemsKey: 'transactions', itemSchema: transactionListItemSchema, priority: 'backfill' as const };

describe('ApiClient.request', () => {
  it('sends the bearer token, JSON body and prefix, and returns the validated envelope', async () => {
    const reset = Math.ceil(Date.now() / 1000) + 30;
    const server = await serve((_request, response) =>
      sendEnvelope(
        response,
        { transaction: { ...transactionItem(1), counterpartyName: null, createdAt: '2025-03-01T10:00:00Z', updatedAt: '2025-03-01T10:00:00Z', extra: 'kept' } },
        { 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': '41', 'x-ratelimit-reset': String(reset), date: 'Sat, 01 Mar 2025 10:00:07 GMT' },
        'Transaction created',
      ),
    );
    const { client } = clientFor(server.url);
    const response = await client.request({
      method: 'POST',
      path: '/transactions',
      body: { type: 'EXPENSE', amount: 1001, description: 'item 1' },
      contentSchema: z.object({ transaction: transactionSchema }),
      priority: 'write',
      retry: 'unsent-only',
    });
    const received = server.requests[0];
    expect(received?.method).toBe('POST');
    expect(received?.path).toBe('/api/public/v1/transactions');
    expect(received?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(received?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(received?.body ?? '')).toEqual({ type: 'EXPENSE', amount: 1001, description: 'item 1' });
    expect(response.status).toBe(200);
    expect(response.message).toBe('Transaction created');
    expect(response.content.transaction.amount).toBe(-1001);
    expect(response.content.transaction.extra).toBe('kept');
    expect(response.serverTime?.toISOString()).toBe('2025-03-01T10:00:07.000Z');
    expect(response.rateLimit).toEqual({ limit: 60, remaining: 41, resetAtMs: reset * 1000, serverNowMs: Date.parse('2025-03-01T10:00:07Z') });
    expect(client.stats).toEqual({ requests: 1, retries: 0, rateLimited: 0, byStatus: { 200: 1 } });
  });

  it('uses the named token, repeats array query parameters and sends no body on GET', async () => {
    const server = await serve((_request, response) => sendEnvelope(response, {}));
    const { client } = clientFor(server.url);
    await client.request({
      method: 'GET',
      path: '/analytics/report',
      query: { metric: ['revenue', 'expenses'], chart: 'bar', locationId: undefined, empty: false },
      contentSchema: z.object({}),
      priority: 'incremental',
      retry: 'safe',
      token: 'clockin',
    });
    const received = server.requests[0];
    expect(received?.headers.authorization).toBe('Bearer tok_employee_other');
    expect(received?.query.getAll('metric')).toEqual(['revenue', 'expenses']);
    expect(received?.url).toBe('/api/public/v1/analytics/report?metric=revenue&metric=expenses&chart=bar&empty=false');
    expect(received?.headers['content-type']).toBeUndefined();
    expect(received?.body).toBe('');
    const unknown = client.request({ method: 'GET', path: '/x', contentSchema: z.object({}), priority: 'write', retry: 'safe', token: 'nobody' });
    await expect(unknown).rejects.toBeInstanceOf(UnknownTokenError);
    await expect(unknown).rejects.toMatchObject({ tokenName: 'nobody', message: 'unknown token name "nobody" for GET /x; configured: default, clockin' });
    expect(server.requests).toHaveLength(1);
  });

  it('maps error bodies to typed errors with message and err, without retrying 4xx', async () => {
    const server = await serve((request, response) => {
      if (request.path.endsWith('/domains')) {
        sendJson(response, 403, { message: 'Purchase limit exceeded', err: 'Contact support to buy domains above 500 USD' });
      } else {
        sendJson(response, 404, { message: 'Not found' });
      }
    });
    const { client } = clientFor(server.url);
    const domain = client.request({ method: 'POST', path: '/domains', body: { domain: 'x.com', expectedPriceMax: 100 }, contentSchema: z.unknown(), priority: 'write', retry: 'none' });
    await expect(domain).rejects.toBeInstanceOf(PermissionError);
    await expect(domain).rejects.toMatchObject({ status: 403, err: 'Contact support to buy domains above 500 USD', message: expect.stringContaining('Purchase limit exceeded') });
    const missing = client.request({ method: 'GET', path: '/domains/dom_1', contentSchema: z.unknown(), priority: 'incremental', retry: 'safe' });
    await expect(missing).rejects.toBeInstanceOf(NotFoundError);
    // A 404 names the whole URL, base included: a wrong base URL shows in it.
    await expect(missing).rejects.toThrow(`Not found (HTTP 404 from ${server.url}/api/public/v1/domains/dom_1)`);
    expect(server.requests).toHaveLength(2);
  });

  it('keeps the status, headers, request id and raw body of a refusal, with an echoed token masked', async () => {
    const body = JSON.stringify({ message: 'Forbidden', err: `token Bearer ${TOKEN} lacks scope` });
    const server = await serve((_request, response) => {
      response.writeHead(403, { 'content-type': 'application/json', 'x-request-id': 'req_7f3a' });
      response.end(body);
    });
    const { client } = clientFor(server.url);
    const refused = await client.request({ method: 'GET', path: '/domains/dom_1', contentSchema: z.unknown(), priority: 'incremental', retry: 'safe' }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(PermissionError);
    const error = refused as PermissionError;
    expect(error).toMatchObject({ status: 403, requestId: 'req_7f3a' });
    expect(error.headers?.['content-type']).toBe('application/json');
    expect(error.rawBody).toBe(body.replace(`Bearer ${TOKEN}`, 'Bearer [redacted]'));
    expect(JSON.stringify([error.message, error.err, error.rawBody])).not.toContain(TOKEN);
  });

  it('runs the hooks of every layer around each attempt: before, after the response, on retry; the request\'s own after the client\'s', async () => {
    const server = await serve((_request, response, index) => {
      if (index === 0) sendJson(response, 503, { message: 'Unavailable' });
      else sendEnvelope(response, { ok: true });
    });
    const events: string[] = [];
    const layer = (name: string): RequestHooks => ({
      beforeRequest: (context) => void events.push(`${name} before #${context.attempt} ${context.priority} ${context.token}`),
      afterResponse: (context, response) => void events.push(`${name} after #${context.attempt} ${response.status}`),
      onRetry: (_context, event) => void events.push(`${name} retry after #${event.attempt}`),
    });
    const { client } = clientFor(server.url, { hooks: [layer('client')] });
    await client.request({ method: 'GET', path: '/a', contentSchema: z.unknown(), priority: 'incremental', retry: 'safe', token: 'clockin', hooks: layer('request') });
    expect(events).toEqual([
      'client before #1 incremental clockin',
      'request before #1 incremental clockin',
      'client after #1 503',
      'request after #1 503',
      'client retry after #1',
      'request retry after #1',
      'client before #2 incremental clockin',
      'request before #2 incremental clockin',
      'client after #2 200',
      'request after #2 200',
    ]);
  });

  it('a beforeRequest hook that throws cancels the attempt: nothing is sent', async () => {
    const server = await serve((_request, response) => sendEnvelope(response, {}));
    const { client } = clientFor(server.url);
    const cancelled = client.request({
      method: 'POST',
      path: '/emails',
      body: {},
      contentSchema: z.unknown(),
      priority: 'write',
      retry: 'unsent-only',
      hooks: { beforeRequest: () => { throw new Error('finished meanwhile'); } },
    });
    await expect(cancelled).rejects.toThrow('finished meanwhile');
    expect(server.requests).toHaveLength(0);
  });

  it('retries a burst of 500s on a safe request, then succeeds', async () => {
    const server = await serve((_request, response, index) => {
      if (index < 3) sendJson(response, 500, { message: 'Internal error' });
      else sendEnvelope(response, { ok: true });
    });
    const { client } = clientFor(server.url);
    const response = await client.request({ method: 'GET', path: '/campaigns/c1', contentSchema: z.object({ ok: z.boolean() }), priority: 'incremental', retry: 'safe' });
    expect(response.content.ok).toBe(true);
    expect(server.requests).toHaveLength(4);
    expect(client.stats).toMatchObject({ requests: 4, retries: 3, byStatus: { 500: 3, 200: 1 } });
  });

  it('gives up after maxRetries with the last ServerError, and never retries a 500 under unsent-only', async () => {
    const server = await serve((_request, response) => sendJson(response, 503, { message: 'Unavailable' }));
    const { client } = clientFor(server.url);
    await expect(client.request({ method: 'GET', path: '/a', contentSchema: z.unknown(), priority: 'incremental', retry: 'safe' })).rejects.toBeInstanceOf(ServerError);
    expect(server.requests).toHaveLength(4); // 1 + maxRetries 3
    await expect(client.request({ method: 'POST', path: '/transactions', body: {}, contentSchema: z.unknown(), priority: 'write', retry: 'unsent-only' })).rejects.toBeInstanceOf(ServerError);
    expect(server.requests).toHaveLength(5);
  });

  it('retries a read whose connection is reset mid-body, and succeeds', async () => {
    const server = await serve((_request, response, index) => {
      if (index === 0) {
        response.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
        response.write('{"message":"OK","content":{"transac');
        setTimeout(() => response.socket?.destroy(), 20);
        return;
      }
      sendEnvelope(response, transactionPage(0, 100, 3));
    });
    const { client } = clientFor(server.url);
    const page = await client.listPage('/transactions', 0, listOptions);
    expect(page.items.map((item) => item.id)).toEqual(['txn_0', 'txn_1', 'txn_2']);
    expect(server.requests).toHaveLength(2);
    expect(client.stats.retries).toBe(1);
  });

  it('does not re-send a non-idempotent write whose connection broke after sending (unsent-only)', async () => {
    const server = await serve((_request, response) => {
      response.socket?.destroy(); // the request arrived; the outcome is unknown to the client
    });
    const { client } = clientFor(server.url);
    const write = client.request({ method: 'POST', path: '/transactions', body: { type: 'INCOME', amount: 5 }, contentSchema: z.unknown(), priority: 'write', retry: 'unsent-only' });
    await expect(write).rejects.toBeInstanceOf(ConnectionError);
    await expect(write).rejects.toMatchObject({ requestSent: true });
    expect(server.requests).toHaveLength(1);
    expect(client.stats.retries).toBe(0);
  });

  it('reports connection refused as requestSent=false, and retries it even under unsent-only', async () => {
    const port = await closedPort();
    const { client } = clientFor(`http://127.0.0.1:${port}`);
    const write = client.request({ method: 'POST', path: '/transactions', body: {}, contentSchema: z.unknown(), priority: 'write', retry: 'unsent-only' });
    await expect(write).rejects.toBeInstanceOf(ConnectionError);
    await expect(write).rejects.toMatchObject({ requestSent: false, code: 'ECONNREFUSED', message: expect.stringContaining('POST /transactions') });
    expect(client.stats).toMatchObject({ requests: 4, retries: 3 });
  });

  it('times out waiting for headers as requestSent=true, and does not resend under unsent-only', async () => {
    const server = await serve(() => {
      /* never answers */
    });
    const { client } = clientFor(server.url, { timeoutMs: 150 });
    const write = client.request({ method: 'POST', path: '/emails', body: {}, contentSchema: z.unknown(), priority: 'write', retry: 'unsent-only' });
    await expect(write).rejects.toMatchObject({ name: 'ConnectionError', requestSent: true, code: 'UND_ERR_HEADERS_TIMEOUT' });
    expect(server.requests).toHaveLength(1);
  });

  it('never follows a redirect', async () => {
    const server = await serve((_request, response) => {
      response.writeHead(302, { location: '/elsewhere' });
      response.end();
    });
    const { client } = clientFor(server.url);
    const redirected = client.request({ method: 'GET', path: '/a', contentSchema: z.unknown(), priority: 'incremental', retry: 'safe' });
    await expect(redirected).rejects.toBeInstanceOf(BizopsApiError);
    await expect(redirected).rejects.toMatchObject({ status: 302 });
    expect(server.requests.map((request) => request.path)).toEqual(['/api/public/v1/a']);
  });

  it('rejects malformed JSON after retries with a message naming the request', async () => {
    const server = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{"message":"OK","content":');
    });
    const { client } = clientFor(server.url);
    const page = client.listPage('/transactions', 200, listOptions);
    await expect(page).rejects.toBeInstanceOf(MalformedResponseError);
    await expect(page).rejects.toThrow('GET /transactions?limit=100&offset=200: response body is not JSON');
    expect(server.requests).toHaveLength(4);
  });

  it('rejects a 2xx without content', async () => {
    const server = await serve((_request, response) => sendJson(response, 200, { message: 'OK' }));
    const { client } = clientFor(server.url);
    const request = client.request({ method: 'GET', path: '/campaigns/c1', contentSchema: z.unknown(), priority: 'incremental', retry: 'safe' });
    await expect(request).rejects.toBeInstanceOf(InvalidResponseError);
    await expect(request).rejects.toThrow('GET /campaigns/c1: envelope field content: expected the payload, received undefined');
    expect(server.requests).toHaveLength(1); // a schema failure is not retried
  });

  it('rejects content that fails the schema, naming the field', async () => {
    const server = await serve((_request, response) => sendEnvelope(response, { deal: { id: 'deal_1', status: 'MAYBE' } }));
    const { client } = clientFor(server.url);
    await expect(
      client.request({ method: 'POST', path: '/deals/deal_1/close', body: { status: 'WON' }, contentSchema: z.object({ deal: z.object({ id: z.string(), status: z.enum(['OPEN', 'WON', 'LOST']) }) }), priority: 'write', retry: 'safe' }),
    ).rejects.toThrow('POST /deals/deal_1/close: content field deal.status: expected one of "OPEN"|"WON"|"LOST"');
  });
});

describe('ApiClient lists', () => {
  it('asks for limit=100 at the offset, keeps filters, and validates items one by one', async () => {
    const server = await serve((request, response) => sendEnvelope(response, transactionPage(Number(request.query.get('offset')), 100, 250)));
    const { client } = clientFor(server.url);
    const page = await client.listPage('/transactions', 200, { ...listOptions, query: { updatedAfter: '2025-01-01T00:00:00Z', sortBy: 'updatedAt', sortOrder: 'asc', type: ['INCOME'] } });
    const query = server.requests[0]?.query;
    expect(query?.get('limit')).toBe('100');
    expect(query?.get('offset')).toBe('200');
    expect(query?.get('updatedAfter')).toBe('2025-01-01T00:00:00Z');
    expect(query?.get('sortOrder')).toBe('asc');
    expect(page.offset).toBe(200);
    expect(page.items).toHaveLength(50);
    expect(page.pagination).toEqual({ total: 250, limit: 100, offset: 200, hasMore: false });
  });

  it('names the request, item index, field and rule of an invalid record', async () => {
    const server = await serve((_request, response) => {
      const content = transactionPage(200, 100, 250) as { transactions: Array<Record<string, unknown>> };
      (content.transactions[17] as Record<string, unknown>).amount = '1017';
      sendEnvelope(response, content);
    });
    const { client } = clientFor(server.url);
    const page = client.listPage('/transactions', 200, listOptions);
    await expect(page).rejects.toBeInstanceOf(InvalidResponseError);
    await expect(page).rejects.toThrow(/^GET \/transactions\?limit=100&offset=200: item 17 field amount: expected integer, received string$/);
    await expect(client.listPage('/transactions', 0, { ...listOptions, itemsKey: 'deals' })).rejects.toThrow('content field deals: expected array, received undefined');
  });

  it('paginates by advancing offset by limit while hasMore, through an empty page', async () => {
    const server = await serve((request, response) => {
      const offset = Number(request.query.get('offset'));
      // The server caps the page at 2 items; page 2 is empty but says hasMore (spec §1: a valid page).
      if (offset === 2) sendEnvelope(response, { transactions: [], pagination: { total: 5, limit: 2, offset, hasMore: true } });
      else sendEnvelope(response, transactionPage(offset, 2, 6));
    });
    const { client } = clientFor(server.url);
    const offsets: number[] = [];
    const ids: string[] = [];
    for await (const page of client.paginate('/transactions', { ...listOptions, startOffset: 0 })) {
      offsets.push(page.offset);
      ids.push(...page.items.map((item) => item.id));
    }
    expect(offsets).toEqual([0, 2, 4]);
    expect(ids).toEqual(['txn_0', 'txn_1', 'txn_4', 'txn_5']);
    expect(server.requests.map((request) => request.query.get('limit'))).toEqual(['100', '100', '100']);
  });
});

describe('ApiClient.paginate loop guard', () => {
  it('stops a server that says hasMore with no items past its total, instead of paging forever', async () => {
    const server = await serve((request, response) =>
      sendEnvelope(response, { transactions: [], pagination: { total: 3, limit: 100, offset: Number(request.query.get('offset')), hasMore: true } }),
    );
    const { client } = clientFor(server.url);
    const pages: number[] = [];
    const paging = (async () => {
      for await (const page of client.paginate('/transactions', listOptions)) pages.push(page.offset);
    })();
    await expect(paging).rejects.toThrow('GET /transactions?offset=100: the server says hasMore with no items at an offset past its total (3)');
    // An empty page below the total is valid (spec §1); the one past it is where paging stops.
    expect(server.requests).toHaveLength(2);
    expect(pages).toEqual([0]);
  });
});

describe('ApiClient and the rate budget', () => {
  it('on a 429 with Retry-After in seconds, sends nothing until it passes, then succeeds', async () => {
    const server = await serve((_request, response, index) => {
      if (index === 0) sendJson(response, 429, { message: 'Too many requests', err: 'rate limit', retryAfter: 1 }, { 'retry-after': '1' });
      else sendEnvelope(response, { ok: true });
    });
    const { client, budget } = clientFor(server.url, { retry: { maxRetries: 0, minTimeoutMs: 10, maxTimeoutMs: 20 } });
    const first = client.request({ method: 'POST', path: '/transactions', body: {}, contentSchema: z.unknown(), priority: 'write', retry: 'none' });
    // A second caller sharing the budget arrives while the pause is on: it must wait too.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const second = client.request({ method: 'GET', path: '/campaigns/c1', contentSchema: z.unknown(), priority: 'incremental', retry: 'safe' });
    await Promise.all([first, second]);
    const limitedAt = server.requests[0]?.atMs as number;
    expect(server.requests).toHaveLength(3);
    for (const later of server.requests.slice(1)) expect(later.atMs - limitedAt).toBeGreaterThanOrEqual(1000);
    expect(client.stats).toMatchObject({ requests: 3, rateLimited: 1, retries: 1, byStatus: { 429: 1, 200: 2 } });
    expect(budget.stats().pauses).toBe(1);
  });

  it('on a 429 with Retry-After as an HTTP date, waits until that date', async () => {
    let retryAt = 0;
    const server = await serve((_request, response, index) => {
      if (index === 0) {
        const now = Date.now();
        retryAt = Math.floor(now / 1000) * 1000 + 2000; // HTTP dates have whole seconds
        sendJson(response, 429, { message: 'Too many requests' }, { 'retry-after': new Date(retryAt).toUTCString(), date: new Date(now).toUTCString() });
      } else {
        sendEnvelope(response, { ok: true });
      }
    });
    const { client } = clientFor(server.url);
    await client.request({ method: 'GET', path: '/a', contentSchema: z.unknown(), priority: 'incremental', retry: 'safe' });
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1]?.atMs).toBeGreaterThanOrEqual(retryAt);
    expect((server.requests[1]?.atMs as number) - retryAt).toBeLessThan(1500);
  });

  it('on a 429 without Retry-After, falls back to backoff; gives up after the 429 cap with RateLimitError', async () => {
    const server = await serve((_request, response) => sendJson(response, 429, { message: 'Too many requests' }));
    const { client, budget } = clientFor(server.url, { retry: { maxRetries: 0, minTimeoutMs: 20, maxTimeoutMs: 50, maxRateLimitRetries: 2 } });
    const request = client.request({ method: 'GET', path: '/a', contentSchema: z.unknown(), priority: 'incremental', retry: 'safe' });
    await expect(request).rejects.toBeInstanceOf(RateLimitError);
    expect(server.requests).toHaveLength(3);
    expect(budget.stats().pauses).toBe(2);
    expect((server.requests[1]?.atMs as number) - (server.requests[0]?.atMs as number)).toBeGreaterThanOrEqual(20);
  });

  it('obeys X-RateLimit-Remaining: 0 until X-RateLimit-Reset', async () => {
    let resetAtSeconds = 0;
    const server = await serve((_request, response, index) => {
      const now = Date.now();
      if (index === 0) resetAtSeconds = Math.floor(now / 1000) + 1;
      sendEnvelope(response, { ok: true }, { 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': index === 0 ? '0' : '59', 'x-ratelimit-reset': String(resetAtSeconds), date: new Date(now).toUTCString() });
    });
    const { client } = clientFor(server.url);
    await client.request({ method: 'GET', path: '/a', contentSchema: z.unknown(), priority: 'incremental', retry: 'safe' });
    await client.request({ method: 'GET', path: '/b', contentSchema: z.unknown(), priority: 'incremental', retry: 'safe' });
    expect(server.requests[1]?.atMs).toBeGreaterThanOrEqual(resetAtSeconds * 1000);
    expect(client.stats.rateLimited).toBe(0);
  });

  it('aborting a request in flight says requestSent=true and does not retry', async () => {
    const server = await serve(() => {
      /* never answers */
    });
    const { client } = clientFor(server.url);
    const controller = new AbortController();
    const inFlight = client.request({ method: 'GET', path: '/a', contentSchema: z.unknown(), priority: 'incremental', retry: 'safe', signal: controller.signal });
    setTimeout(() => controller.abort(), 100);
    await expect(inFlight).rejects.toMatchObject({ name: 'ConnectionError', code: 'ABORTED', requestSent: true });
    expect(server.requests).toHaveLength(1);
    expect(client.stats.retries).toBe(0);
  });

  it('aborting during a retry backoff tells whether any attempt may have been processed', async () => {
    const server = await serve((_request, response) => sendJson(response, 500, { message: 'Internal error' }));
    const { client } = clientFor(server.url, { retry: { maxRetries: 3, minTimeoutMs: 2000, maxTimeoutMs: 2000 } });
    const afterServerError = new AbortController();
    const read = client.request({ method: 'GET', path: '/a', contentSchema: z.unknown(), priority: 'incremental', retry: 'safe', signal: afterServerError.signal });
    setTimeout(() => afterServerError.abort(), 150);
    await expect(read).rejects.toMatchObject({ name: 'ConnectionError', code: 'ABORTED', requestSent: true });
    expect(server.requests).toHaveLength(1);

    const refusedClient = clientFor(`http://127.0.0.1:${await closedPort()}`, { retry: { maxRetries: 3, minTimeoutMs: 2000, maxTimeoutMs: 2000 } }).client;
    const afterRefused = new AbortController();
    const write = refusedClient.request({ method: 'POST', path: '/transactions', body: {}, contentSchema: z.unknown(), priority: 'write', retry: 'unsent-only', signal: afterRefused.signal });
    setTimeout(() => afterRefused.abort(), 150);
    await expect(write).rejects.toMatchObject({ name: 'ConnectionError', code: 'ABORTED', requestSent: false });
  });

  it('aborting while waiting for the budget sends nothing and says requestSent=false', async () => {
    const server = await serve((_request, response) => sendEnvelope(response, {}));
    const budget = new LocalRateBudget({ limit: 1, windowMs: 5000 });
    const client = new ApiClient({ baseUrl: server.url, tokens: { default: TOKEN }, budget });
    cleanups.push(async () => {
      await client.close();
      await budget.close();
    });
    await client.request({ method: 'GET', path: '/a', contentSchema: z.unknown(), priority: 'backfill', retry: 'safe' });
    const controller = new AbortController();
    const waiting = client.request({ method: 'POST', path: '/transactions', body: {}, contentSchema: z.unknown(), priority: 'write', retry: 'unsent-only', signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await expect(waiting).rejects.toMatchObject({ name: 'ConnectionError', code: 'ABORTED', requestSent: false });
    expect(server.requests).toHaveLength(1);
  });
});
