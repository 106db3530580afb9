import { afterEach, describe, expect, it } from 'vitest';
import { startSimulator, TOKEN_TABLE, type RunningSimulator } from '../src/index.ts';
import { ROUTES } from '../src/routes/index.ts';
import { api } from './helpers.ts';

let simulator: RunningSimulator | undefined;
afterEach(async () => {
  await simulator?.close();
  simulator = undefined;
});

/** Waits until just after the start of the next window of `windowMs`. */
async function nextWindow(windowMs: number): Promise<void> {
  const wait = windowMs - (Date.now() % windowMs) + 15;
  await new Promise((resolve) => setTimeout(resolve, wait));
}

describe('authentication and scopes (spec §5)', () => {
  it('answers 401 { message } for a missing or unknown token', async () => {
    simulator = await startSimulator({ rateLimit: false });
    const missing = await api(simulator, '/transactions', { token: null });
    expect(missing.status).toBe(401);
    expect(missing.body.message).toEqual(expect.any(String));
    expect((await api(simulator, '/transactions', { token: 'not-a-token' })).status).toBe(401);
    expect(simulator.requests.at(-1)).toMatchObject({ status: 401, company: null, tokenName: null });
  });

  it('answers 403 { message } on every endpoint for a token without its scope', async () => {
    simulator = await startSimulator({ rateLimit: false });
    for (const route of ROUTES) {
      if (route.scope === null) continue;
      const path = route.path.replace(/\{\w+\}/g, 'x_1');
      const response = await api(simulator, path, { method: route.method, token: simulator.tokens.noScopes, body: route.method === 'GET' ? undefined : {} });
      expect(response.status, `${route.method} ${route.path}`).toBe(403);
      expect(response.body.message).toContain(route.scope);
    }
    const readOnly = await api(simulator, '/transactions', { method: 'POST', token: simulator.tokens.readOnly, body: { type: 'INCOME', amount: 1 } });
    expect(readOnly.status).toBe(403);
    expect((await api(simulator, '/transactions', { token: simulator.tokens.readOnly })).status).toBe(200);
  });

  it('exports a token table naming every token', () => {
    expect(TOKEN_TABLE.map((definition) => definition.name).sort()).toEqual(['admin', 'employee', 'hr', 'noScopes', 'otherCompany', 'readOnly']);
  });

  it('keeps the other company to its own data', async () => {
    simulator = await startSimulator({ rateLimit: false });
    const other = await api(simulator, '/deals?limit=100', { token: simulator.tokens.otherCompany });
    const ids = new Set(simulator.world.deals.map((deal) => deal.id));
    expect(other.body.content.deals.length).toBeGreaterThan(0);
    expect(other.body.content.deals.some((deal: { id: string }) => ids.has(deal.id))).toBe(false);
    const dealOfA = simulator.world.deals[0]?.id;
    const close = await api(simulator, `/deals/${dealOfA}/close`, { method: 'POST', token: simulator.tokens.otherCompany, body: { status: 'LOST' } });
    expect(close.status).toBe(404);
  });
});

describe('rate limit (spec §8)', () => {
  it('sends the headers on every response and 429 with Retry-After once the window is spent', async () => {
    simulator = await startSimulator({ rateLimit: { limit: 5, windowMs: 1000, anchorMs: 0 } });
    await nextWindow(1000);
    const remaining: string[] = [];
    let reset = '';
    for (let index = 0; index < 5; index += 1) {
      const response = await api(simulator, '/deals?limit=1');
      expect(response.status).toBe(200);
      expect(response.headers.get('x-ratelimit-limit')).toBe('5');
      remaining.push(response.headers.get('x-ratelimit-remaining') ?? '');
      reset = response.headers.get('x-ratelimit-reset') ?? '';
    }
    expect(remaining).toEqual(['4', '3', '2', '1', '0']);
    expect(Number(reset) * 1000 % 1000).toBe(0);
    expect(Number.isInteger(Number(reset))).toBe(true);
    expect(Number(reset) * 1000).toBeGreaterThan(Date.now());

    const limited = await api(simulator, '/deals?limit=1');
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ message: expect.any(String), err: expect.any(String), retryAfter: expect.any(Number) });
    expect(limited.headers.get('retry-after')).toBe(String(limited.body.retryAfter));
    expect(limited.body.retryAfter).toBeGreaterThanOrEqual(1);
    expect(limited.body.retryAfter).toBeLessThanOrEqual(1);
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    // A 429 consumes nothing and is logged.
    expect((await api(simulator, '/deals?limit=1')).status).toBe(429);
    expect(simulator.requests.filter((entry) => entry.status === 429)).toHaveLength(2);

    // The other company has its own budget.
    expect((await api(simulator, '/deals?limit=1', { token: simulator.tokens.otherCompany })).status).toBe(200);

    // The next window starts fresh.
    await nextWindow(1000);
    const fresh = await api(simulator, '/deals?limit=1');
    expect(fresh.status).toBe(200);
    expect(fresh.headers.get('x-ratelimit-remaining')).toBe('4');
    expect(Number(fresh.headers.get('x-ratelimit-reset'))).toBe(Number(reset) + 1);
  });

  it('anchors windows at the start and sends Reset as whole seconds rounded up (the spec format), or exact on request', async () => {
    const anchorMs = Math.floor(Date.now() / 1000) * 1000 - 30_000 + 250; // now is mid-window; the window ends 250 ms into a second
    simulator = await startSimulator({ rateLimit: { limit: 5, windowMs: 60_000, anchorMs } });
    const response = await api(simulator, '/deals?limit=1');
    const windowEnd = anchorMs + 60_000;
    expect(response.headers.get('x-ratelimit-reset')).toBe(String(Math.ceil(windowEnd / 1000)));
    expect(simulator.requests.at(-1)?.rateWindowStartMs).toBe(windowEnd - 60_000);
    await simulator.close();
    simulator = await startSimulator({ rateLimit: { limit: 5, windowMs: 60_000, anchorMs, resetPrecision: 'exact' } });
    expect((await api(simulator, '/deals?limit=1')).headers.get('x-ratelimit-reset')).toBe(String(windowEnd / 1000));
  });

  it('does not count admin requests and omits headers when disabled', async () => {
    simulator = await startSimulator({ rateLimit: { limit: 1, windowMs: 60_000 } });
    await fetch(`${simulator.url}/__admin/state`);
    const response = await api(simulator, '/deals?limit=1');
    expect(response.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(simulator.requests).toHaveLength(1);
    await simulator.close();
    simulator = await startSimulator({ rateLimit: false });
    expect((await api(simulator, '/deals?limit=1')).headers.get('x-ratelimit-limit')).toBeNull();
  });
});
