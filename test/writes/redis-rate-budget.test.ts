/**
 * RedisRateBudget against a real Redis: several budget instances (each with its own connection, as
 * separate processes would have) share one budget key.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { rateBudgetKey, RedisRateBudget, type RedisRateBudgetOptions } from '../../src/client/redis-rate-budget.ts';
import { waitFor } from '../helpers.ts';
import { REDIS_URL } from './support.ts';

const opened: RedisRateBudget[] = [];
/** The key prefix of the budgets `budgets` made last: this test's keys, and no other run's. */
let prefix = '';

function budgets(count: number, options: Omit<RedisRateBudgetOptions, 'redis' | 'key' | 'prefix'>): RedisRateBudget[] {
  prefix = `test:rate:${randomUUID()}`;
  const list = Array.from({ length: count }, () => new RedisRateBudget({ redis: REDIS_URL, key: 'company:test', prefix, ...options }));
  opened.push(...list);
  return list;
}

afterEach(async () => {
  for (const budget of opened.splice(0)) {
    await budget.reset();
    await budget.close();
  }
});

describe('RedisRateBudget', () => {
  it('never lets the processes together exceed the limit in any window, and uses most of it', async () => {
    const [a, b, c] = budgets(3, { limit: 10, windowMs: 500, safetyMarginMs: 20 });
    let grants = 0;
    let mostInWindow = 0;
    const started = Date.now();
    await Promise.all(
      [a!, b!, c!].flatMap((budget) =>
        Array.from({ length: 15 }, async () => {
          await budget.acquire('incremental');
          grants += 1;
          // Counted by Redis on its own clock, so a busy test process cannot skew it.
          mostInWindow = Math.max(mostInWindow, await budget.grantsInWindow());
        }),
      ),
    );
    expect(grants).toBe(45);
    expect(mostInWindow).toBeLessThanOrEqual(10);
    expect(mostInWindow).toBeGreaterThanOrEqual(1);
    // 45 grants at 10 per 520 ms: the first 10 at once, then 35 more need at least 4 windows.
    // (How close to the limit they come is measured by bench/writes.ts, not asserted here.)
    expect(Date.now() - started).toBeGreaterThan(4 * 500);
  });

  it('a pause set by one process (a 429) holds every process until it passes', async () => {
    const [a, b] = budgets(2, { limit: 100, windowMs: 1000 });
    await a!.acquire('write');
    const pausedAt = Date.now();
    await a!.pauseUntil(pausedAt + 600);
    await b!.acquire('write');
    expect(Date.now() - pausedAt).toBeGreaterThanOrEqual(590);
    expect(a!.stats().pauses).toBe(1);
  });

  it('remaining: 0 from the server pauses every process until the announced reset', async () => {
    const [a, b] = budgets(2, { limit: 100, windowMs: 1000, safetyMarginMs: 20 });
    const now = Date.now();
    await a!.observe({ remaining: 0, resetAtMs: now + 400, limit: 100, serverNowMs: now });
    await b!.acquire('backfill');
    expect(Date.now() - now).toBeGreaterThanOrEqual(400);
  });

  it('a write waiting in another process takes the next slot ahead of a backfill load', async () => {
    const [loader, writer] = budgets(2, { limit: 2, windowMs: 300, safetyMarginMs: 10 });
    const order: string[] = [];
    let stop = false;
    // A long backfill: 6 concurrent loops always waiting for the next slot.
    const backfill = Promise.all(
      Array.from({ length: 6 }, async () => {
        while (!stop) {
          await loader!.acquire('backfill');
          order.push('backfill');
        }
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 700));
    const before = order.length;
    await writer!.acquire('write');
    const slotsTaken = order.length - before;
    order.push('write');
    stop = true;
    await backfill;
    // The write got the next slot, or the one after if a backfill grant raced its first ask.
    expect(slotsTaken).toBeLessThanOrEqual(1);
  });

  it('an aborted acquire rejects with the reason and withdraws its demand', async () => {
    const [a, b] = budgets(2, { limit: 1, windowMs: 2000 });
    await a!.acquire('backfill');
    const controller = new AbortController();
    const waiting = b!.acquire('write', controller.signal);
    setTimeout(() => controller.abort(new Error('stop waiting')), 100);
    await expect(waiting).rejects.toThrow('stop waiting');
    const redis = new Redis(REDIS_URL);
    try {
      expect(await redis.zcard(`${prefix}:{company:test}:demand:write`)).toBe(0);
    } finally {
      redis.disconnect();
    }
  });

  it("a retry waiting in another process takes the next slot ahead of its priority's first attempts", async () => {
    const [loader, retrier] = budgets(2, { limit: 1, windowMs: 1000, safetyMarginMs: 10 });
    // Nobody gets a slot until the test lifts this pause, whatever the machine's load.
    await loader!.pauseUntil(Date.now() + 60_000);
    const order: string[] = [];
    const done = new AbortController();
    const first = Array.from({ length: 3 }, (_, index) => loader!.acquire('incremental', done.signal).then(() => order.push(`first-${index}`)));
    const retry = retrier!.acquire('incremental', undefined, { retry: true }).then(() => order.push('retry'));
    const redis = new Redis(REDIS_URL);
    try {
      const demand = (rank: string) => redis.zcard(`${prefix}:{company:test}:demand:${rank}`);
      // One demand entry per process and rank (a process takes slots for all its waiters of a rank at once).
      await waitFor(async () => (await demand('incremental:retry')) === 1 && (await demand('incremental')) === 1, 'both processes to announce their demand');
      await redis.del(`${prefix}:{company:test}:pause`);
    } finally {
      redis.disconnect();
    }
    await retry;
    expect(order[0]).toBe('retry');
    done.abort(new Error('test over'));
    await Promise.allSettled(first);
  });

  it('refuses a bad configuration with a clear message', () => {
    expect(() => new RedisRateBudget({ redis: 'redis://127.0.0.1:6379', key: 'k', limit: 0 })).toThrow('limit must be a positive integer');
    expect(() => new RedisRateBudget({ redis: 'redis://127.0.0.1:6379', key: '', limit: 1 })).toThrow('key must be a non-empty string');
  });

  it('keys the budget by company, or by a hash of the token', () => {
    const config = {
      baseUrl: 'https://api.example.com',
      companyId: 'acme',
      rateLimit: { scope: 'company' as 'company' | 'token' },
      tokens: { default: 'secret-token-1', hr: 'secret-token-2' },
    };
    expect(rateBudgetKey(config)).toBe('company:acme@api.example.com');
    expect(rateBudgetKey({ ...config, baseUrl: 'https://staging.example.com' })).toBe('company:acme@staging.example.com');
    config.rateLimit.scope = 'token';
    const key = rateBudgetKey(config, 'hr');
    expect(key).toMatch(/^token:[0-9a-f]{16}@api\.example\.com$/);
    expect(key).not.toContain('secret');
    expect(rateBudgetKey(config, 'hr')).not.toBe(rateBudgetKey(config, 'default'));
  });
});
