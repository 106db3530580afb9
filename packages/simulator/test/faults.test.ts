import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../src/index.ts';
import { api } from './helpers.ts';

/** Resolves once `condition` holds, checked every 10 ms (fails after 10 s). */
async function waitForRequest(condition: () => boolean): Promise<void> {
  for (const started = Date.now(); !condition(); ) {
    if (Date.now() - started > 10_000) throw new Error('the request did not arrive');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

let simulator: RunningSimulator;
beforeAll(async () => {
  simulator = await startSimulator({ rateLimit: { limit: 1000, windowMs: 60_000 } });
});
afterAll(async () => {
  await simulator.close();
});
beforeEach(() => simulator.faults.clear());

const url = (path: string) => `${simulator.url}/api/public/v1${path}`;
const headers = () => ({ Authorization: `Bearer ${simulator.tokens.admin}`, 'Content-Type': 'application/json' });

describe('fault injection', () => {
  it('status: answers the status once for the matching path, then recovers; consumes no budget', async () => {
    simulator.faults.inject({ kind: 'status', status: 503, match: { path: '/transactions', method: 'GET' } });
    const before = (await api(simulator, '/deals?limit=1')).headers.get('x-ratelimit-remaining');
    expect((await api(simulator, '/deals?limit=1')).status).toBe(200);
    const failed = await api(simulator, '/transactions');
    expect(failed.status).toBe(503);
    expect(failed.body.message).toEqual(expect.any(String));
    expect(Number(failed.headers.get('x-ratelimit-remaining'))).toBe(Number(before) - 1);
    expect((await api(simulator, '/transactions')).status).toBe(200);
  });

  it('status: applies `times` times, matches a RegExp, and sends custom body and headers', async () => {
    simulator.faults.inject({ kind: 'status', status: 500, times: 2, match: { path: /\/deals\/[^/]+\/close$/ }, body: { message: 'boom' }, headers: { 'X-Test': 'yes' } });
    const dealId = simulator.world.deals[0]?.id;
    const first = await api(simulator, `/deals/${dealId}/close`, { method: 'POST', body: { status: 'OPEN' } });
    expect(first.status).toBe(500);
    expect(first.body).toEqual({ message: 'boom' });
    expect(first.headers.get('x-test')).toBe('yes');
    expect((await api(simulator, `/deals/${dealId}/close`, { method: 'POST', body: { status: 'OPEN' } })).status).toBe(500);
    expect((await api(simulator, `/deals/${dealId}/close`, { method: 'POST', body: { status: 'OPEN' } })).status).toBe(200);
  });

  it('a match on a query parameter being absent (null) skips the requests that carry it', async () => {
    simulator.faults.inject({ kind: 'status', status: 503, match: { path: '/deals', query: { updatedAfter: null } } });
    expect((await api(simulator, '/deals?limit=1&updatedAfter=2020-01-01T00:00:00Z')).status).toBe(200);
    expect((await api(simulator, '/deals?limit=1')).status).toBe(503);
    expect((await api(simulator, '/deals?limit=1')).status).toBe(200);
  });

  it('hold: the matching request is answered only once the gate opens, with the world as it is then', async () => {
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    simulator.faults.inject({ kind: 'hold', until: gate, match: { path: '/deals', query: { offset: '0' } } });
    let answered = false;
    const held = api(simulator, '/deals?offset=0&limit=1&sortBy=createdAt&sortOrder=asc').then((response) => {
      answered = true;
      return response;
    });
    // Other requests pass meanwhile.
    expect((await api(simulator, '/deals?offset=1&limit=1')).status).toBe(200);
    expect(answered).toBe(false);
    const first = simulator.world.deals[0]!;
    simulator.world.updateDeal(first.id, { title: 'Changed while held' });
    open();
    const response = await held;
    expect(response.status).toBe(200);
    expect((response.body.content as { deals: { title: string }[] }).deals[0]!.title).toBe('Changed while held');
  });

  it('hold-answer: the matching request is answered with the world as it was when it arrived, sent once the gate opens', async () => {
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const first = simulator.world.deals[0]!;
    const before = first.title;
    simulator.faults.inject({ kind: 'hold-answer', until: gate, match: { path: '/deals', query: { offset: '0' } } });
    let answered = false;
    const held = api(simulator, '/deals?offset=0&limit=1&sortBy=createdAt&sortOrder=asc').then((response) => {
      answered = true;
      return response;
    });
    await waitForRequest(() => simulator.requests.some((request) => request.path.endsWith('/deals') && new URLSearchParams(request.query).get('offset') === '0'));
    expect((await api(simulator, '/deals?offset=1&limit=1')).status).toBe(200);
    expect(answered).toBe(false);
    simulator.world.updateDeal(first.id, { title: 'Changed while held' });
    open();
    const response = await held;
    expect(response.status).toBe(200);
    expect((response.body.content as { deals: { title: string }[] }).deals[0]!.title).toBe(before);
  });

  it('rate-limit: 429 with the Retry-After header verbatim (seconds or HTTP date)', async () => {
    simulator.faults.inject({ kind: 'rate-limit', retryAfter: '2' });
    const seconds = await api(simulator, '/transactions');
    expect(seconds.status).toBe(429);
    expect(seconds.headers.get('retry-after')).toBe('2');
    expect(seconds.body).toMatchObject({ retryAfter: 2, err: expect.any(String), message: expect.any(String) });
    const date = new Date(Date.now() + 3000).toUTCString();
    simulator.faults.inject({ kind: 'rate-limit', retryAfter: date });
    const dated = await api(simulator, '/transactions');
    expect(dated.headers.get('retry-after')).toBe(date);
    expect(dated.body.retryAfter).toBeGreaterThanOrEqual(1);
    expect(dated.body.retryAfter).toBeLessThanOrEqual(4);
  });

  it('reset-mid-body: headers arrive, then the body breaks off', async () => {
    simulator.faults.inject({ kind: 'reset-mid-body', match: { path: '/transactions' } });
    const response = await fetch(url('/transactions?limit=100'), { headers: headers() });
    expect(response.status).toBe(200);
    await expect(response.text()).rejects.toThrow();
    expect((await api(simulator, '/transactions')).status).toBe(200);
  });

  it('malformed-json: 200 with a body that is not valid JSON', async () => {
    simulator.faults.inject({ kind: 'malformed-json' });
    const response = await fetch(url('/deals'), { headers: headers() });
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(() => JSON.parse(text)).toThrow();
  });

  it('invalid-record: the first item has a field of the wrong type', async () => {
    simulator.faults.inject({ kind: 'invalid-record' });
    const response = await api(simulator, '/transactions?limit=3');
    expect(response.status).toBe(200);
    expect(typeof response.body.content.transactions[0].id).toBe('number');
    expect(typeof response.body.content.transactions[1].id).toBe('string');
  });

  it('lose-response-after-commit: the write happens but no answer arrives', async () => {
    const before = simulator.world.transactions.length;
    simulator.faults.inject({ kind: 'lose-response-after-commit', match: { method: 'POST', path: '/api/public/v1/transactions' } });
    await expect(
      fetch(url('/transactions'), { method: 'POST', headers: headers(), body: JSON.stringify({ type: 'INCOME', amount: 4321, description: 'lost answer' }) }),
    ).rejects.toThrow();
    expect(simulator.world.transactions.length).toBe(before + 1);
    expect(simulator.world.transactions.some((record) => record.description === 'lost answer')).toBe(true);
  });

  it('slow-commit: nothing is committed while the client waits; the write commits after it gives up; the Idempotency-Key is logged', async () => {
    const before = simulator.world.transactions.length;
    simulator.faults.inject({ kind: 'slow-commit', ms: 20, match: { method: 'POST', path: '/transactions' } });
    const controller = new AbortController();
    const sending = fetch(url('/transactions'), {
      method: 'POST',
      headers: { ...headers(), 'Idempotency-Key': 'slow-1' },
      body: JSON.stringify({ type: 'INCOME', amount: 777, description: 'slow commit' }),
      signal: controller.signal,
    });
    await waitUntil(() => simulator.requests.some((request) => request.idempotencyKey === 'slow-1'));
    expect(simulator.world.transactions.length).toBe(before);
    controller.abort();
    await expect(sending).rejects.toThrow();
    await waitUntil(() => simulator.world.transactions.length === before + 1);
    expect(simulator.world.transactions.some((record) => record.description === 'slow commit')).toBe(true);
  });

  it('late-commit with afterNextMatch: the first request commits only after the next matching one did, and still answers', async () => {
    const before = simulator.world.transactions.length;
    simulator.faults.inject({ kind: 'late-commit', afterNextMatch: true, match: { method: 'POST', path: '/transactions' } });
    const post = (description: string) => fetch(url('/transactions'), { method: 'POST', headers: headers(), body: JSON.stringify({ type: 'INCOME', amount: 5, description }) });
    const logged = simulator.requests.length;
    const first = post('late first');
    await waitUntil(() => simulator.requests.length > logged);
    expect(simulator.world.transactions.length).toBe(before);
    expect((await post('second')).status).toBe(200);
    expect((await first).status).toBe(200);
    const descriptions = simulator.world.transactions.slice(before).map((record) => record.description);
    expect(descriptions).toEqual(['second', 'late first']);
  });

  it('refuse: the socket closes before the request is processed', async () => {
    const before = simulator.world.transactions.length;
    simulator.faults.inject({ kind: 'refuse', match: { method: 'POST' } });
    await expect(
      fetch(url('/transactions'), { method: 'POST', headers: headers(), body: JSON.stringify({ type: 'INCOME', amount: 1 }) }),
    ).rejects.toThrow();
    expect(simulator.world.transactions.length).toBe(before);
    expect(simulator.requests.at(-1)).toMatchObject({ method: 'POST', status: 0 });
  });

  it('latency: delays the answer', async () => {
    simulator.faults.inject({ kind: 'latency', ms: 150 });
    const started = performance.now();
    expect((await api(simulator, '/deals?limit=1')).status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
  });

  it('can be injected and cleared over the admin surface', async () => {
    const injected = await fetch(`${simulator.url}/__admin/faults`, {
      method: 'POST',
      body: JSON.stringify({ kind: 'status', status: 502, times: 3, match: { path: '/deals' } }),
    });
    expect(injected.status).toBe(200);
    expect((await api(simulator, '/deals')).status).toBe(502);
    await fetch(`${simulator.url}/__admin/faults`, { method: 'DELETE' });
    expect((await api(simulator, '/deals')).status).toBe(200);
    await fetch(`${simulator.url}/__admin/faults`, { method: 'POST', body: JSON.stringify({ kind: 'status', status: 504, match: { pathPattern: '^/deals$' } }) });
    expect((await api(simulator, '/deals')).status).toBe(504);
  });
});

/** Polls `probe` until it is true (at most 5 s). */
async function waitUntil(probe: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error('condition not met within 5 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('an API that is down', () => {
  it('refuseConnections closes the port (ECONNREFUSED) while the world goes on; acceptConnections opens the same port again', async () => {
    const down = await startSimulator({ rateLimit: { limit: 1000, windowMs: 60_000 } });
    try {
      const list = () => fetch(`${down.url}/api/public/v1/deals?limit=1`, { headers: { Authorization: `Bearer ${down.tokens.admin}` } });
      expect((await list()).status).toBe(200);
      await down.refuseConnections();
      const refused = await list().then(
        () => 'answered',
        (error: unknown) => String((error as { cause?: { code?: string } }).cause?.code),
      );
      expect(refused).toBe('ECONNREFUSED');
      down.world.churnTick(3);
      await down.acceptConnections();
      expect((await list()).status).toBe(200);
      expect(down.url).toMatch(/:\d+$/);
    } finally {
      await down.close();
    }
  });
});
