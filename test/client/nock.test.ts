/**
 * The few cases where nock's exact matching is the clearest tool: the exact request headers and a
 * malformed body. nock 15 intercepts undici's Pool (through @mswjs/interceptors), so these go
 * through the same transport as production; the other client tests use a real local server.
 */
import nock from 'nock';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ApiClient } from '../../src/client/client.ts';
import { InvalidResponseError } from '../../src/client/api-errors.ts';
import { LocalRateBudget } from '../../src/client/local-rate-budget.ts';
import { onboardingSchema } from '../../src/client/schemas.ts';

const BASE = 'http://bizops.nock.test';
const TOKEN = 'tok_nock_0123456789';

beforeAll(() => nock.disableNetConnect());
afterAll(() => {
  nock.enableNetConnect();
  nock.restore();
});
afterEach(() => nock.cleanAll());

function newClient(): { client: ApiClient; budget: LocalRateBudget } {
  const budget = new LocalRateBudget({ limit: 100, windowMs: 1000 });
  return { client: new ApiClient({ baseUrl: BASE, tokens: { default: TOKEN }, budget, retry: { maxRetries: 2, minTimeoutMs: 5, maxTimeoutMs: 10 } }), budget };
}

describe('ApiClient exact requests (nock)', () => {
  it('sends exactly Authorization: Bearer and Content-Type: application/json, and limit=100 on lists', async () => {
    const scope = nock(BASE)
      .post('/api/public/v1/deals/deal%2F1/close', { status: 'WON', reason: 'signed' })
      .matchHeader('authorization', `Bearer ${TOKEN}`)
      .matchHeader('content-type', 'application/json')
      .reply(200, { message: 'Deal closed', content: { closed: true } })
      .get('/api/public/v1/employee-onboardings')
      .query({ limit: '100', offset: '0', sortBy: 'createdAt' })
      .matchHeader('authorization', `Bearer ${TOKEN}`)
      .reply(200, {
        message: 'OK',
        content: { onboardings: [{ id: 'emp_1', onboardingStep: 2, user: { fullname: 'Ada Lovelace' } }], pagination: { total: 1, limit: 100, offset: 0, hasMore: false } },
      });
    const { client, budget } = newClient();
    const closed = await client.request({
      method: 'POST',
      path: `/deals/${encodeURIComponent('deal/1')}/close`,
      body: { status: 'WON', reason: 'signed' },
      contentSchema: z.object({ closed: z.boolean() }),
      priority: 'write',
      retry: 'safe',
    });
    expect(closed.message).toBe('Deal closed');
    const page = await client.listPage('/employee-onboardings', 0, { itemsKey: 'onboardings', itemSchema: onboardingSchema, priority: 'incremental', query: { sortBy: 'createdAt' } });
    expect(page.items[0]?.user.fullname).toBe('Ada Lovelace');
    expect(scope.isDone()).toBe(true);
    await client.close();
    await budget.close();
  });

  it('retries malformed JSON, then throws InvalidResponseError naming the path', async () => {
    const scope = nock(BASE).get('/api/public/v1/employee-onboardings').query(true).times(3).reply(200, '<html>Gateway hiccup</html>', { 'content-type': 'text/html' });
    const { client, budget } = newClient();
    const page = client.listPage('/employee-onboardings', 300, { itemsKey: 'onboardings', itemSchema: onboardingSchema, priority: 'backfill' });
    await expect(page).rejects.toBeInstanceOf(InvalidResponseError);
    await expect(page).rejects.toThrow('GET /employee-onboardings?limit=100&offset=300: response body is not JSON');
    expect(scope.isDone()).toBe(true);
    expect(client.stats).toMatchObject({ requests: 3, retries: 2 });
    await client.close();
    await budget.close();
  });
});
