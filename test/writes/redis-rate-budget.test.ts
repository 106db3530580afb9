/**
 * RedisRateBudget against a real Redis: several budget instances (each with its own connection, as
 * separate processes would have) share one budget key.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { rateBudgetKey, RedisRateBudget, type RedisRateBudgetOptions } from '../../src/client/redis-rate-budget.ts';
import { ApiClient } from '../../src/client/client.ts';
import { transactionListItemSchema } from '../../src/client/schemas.ts';
import { startSimulator } from '@bizops-sync/simulator';
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
    a!.observe({ remaining: 0, resetAtMs: now + 400, limit: 100, serverNowMs: now });
    await a!.drain();
    // Asked without taking a slot: the other process sees the window spent until the reset.
    const seen = await b!.peek();
    expect(seen).toMatchObject({ available: 0, followingServerWindow: true });
    expect(seen.nextSlotAtMs).toBeGreaterThanOrEqual(now + 400);
    await b!.acquire('backfill');
    expect(b!.stats().granted.backfill).toBe(1);
  });

  it('a write waiting in another process takes the next slot ahead of a backfill load', async () => {
    // One slot per minute: the one slot that comes free when the pause lifts must go to the write.
    // Demand lives 30 s between polls, so a stalled test process cannot let it lapse.
    // Waiters poll every 100 ms at most (default 1 s): they see the pause lifted sooner.
    const [loader, writer] = budgets(2, { limit: 1, windowMs: 60_000, safetyMarginMs: 10, demandTtlMs: 30_000, maxPollMs: 100 });
    // Nobody gets a slot until the test lifts this pause, whatever the machine's load: both the
    // backfill and the write are waiting, announced in Redis, when the slot comes back.
    await loader!.pauseUntil(Date.now() + 60_000);
    const order: string[] = [];
    const done = new AbortController();
    // A long backfill: 6 concurrent loops always waiting for the next slot.
    const backfill = Promise.allSettled(
      Array.from({ length: 6 }, async () => {
        while (!done.signal.aborted) {
          await loader!.acquire('backfill', done.signal);
          order.push('backfill');
        }
      }),
    );
    const write = writer!.acquire('write').then(() => order.push('write'));
    const redis = new Redis(REDIS_URL);
    try {
      const demand = (rank: string) => redis.zcard(`${prefix}:{company:test}:demand:${rank}`);
      await waitFor(async () => (await demand('backfill')) === 1 && (await demand('write')) === 1, 'both processes to announce their demand');
      await redis.del(`${prefix}:{company:test}:pause`);
    } finally {
      redis.disconnect();
    }
    await write;
    done.abort(new Error('test over'));
    await backfill;
    // The slot went to the write; without priority across processes one of the 6 backfill loops,
    // waiting longer, would have taken it and the write would still be waiting.
    expect(order).toEqual(['write']);
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
    const [loader, retrier] = budgets(2, { limit: 1, windowMs: 1000, safetyMarginMs: 10, maxPollMs: 100 });
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

  it('three processes leasing slots against whole-second resets: no 429, none over the limit, fewer calls than slots', async () => {
    const limit = 6;
    const windowMs = 1000;
    const anchorMs = Math.floor(Date.now() / 1000) * 1000 + 300; // windows end 300 ms into a second
    const sim = await startSimulator({ seed: 5, rateLimit: { limit, windowMs, anchorMs }, size: { transactions: 20 } });
    const processes = budgets(3, { limit, windowMs });
    const clients = processes.map((budget) => new ApiClient({ baseUrl: sim.url, tokens: { default: sim.tokens.admin }, budget, retry: { maxRetries: 3, minTimeoutMs: 10, maxTimeoutMs: 50 } }));
    try {
      // Four windows' worth: three window ends crossed.
      let left = 4 * limit;
      await Promise.all(
        clients.flatMap((client) =>
          Array.from({ length: 4 }, async () => {
            while (left > 0) {
              left--;
              await client.listPage('/transactions', 0, { itemsKey: 'transactions', itemSchema: transactionListItemSchema, priority: 'backfill' });
            }
          }),
        ),
      );
      expect(sim.requests.filter((request) => request.status === 429)).toHaveLength(0);
      // The server refuses (429) any request over the limit in its window, so 0 x 429 is the
      // per-window bound as the server counted it; how full the windows are is a timing figure,
      // measured in bench/writes.ts.
      // Slots were leased several at a time.
      const stats = processes.map((budget) => budget.stats());
      const granted = stats.reduce((sum, stat) => sum + stat.granted.backfill, 0);
      expect(granted).toBe(4 * limit);
      expect(stats.reduce((sum, stat) => sum + stat.leaseCalls, 0)).toBeLessThan(granted);
      // Every answer ended its slot, in Redis, for every process.
      await waitFor(async () => (await processes[0]!.peek()).inFlight === 0, 'every slot to be ended');
    } finally {
      await Promise.all(clients.map((client) => client.close()));
      await sim.close();
    }
  });

  it('writes sent one after another use slots leased ahead, without a round trip each; near the limit a backfill never leases ahead', async () => {
    const [alone] = budgets(1, { limit: 50, windowMs: 60_000 });
    for (let index = 0; index < 6; index++) {
      const slot = await alone!.acquire('write');
      alone!.observe({ remaining: 50 - index - 1, resetAtMs: Math.ceil(Date.now() / 1000) * 1000 + 60_000, limit: 50 }, slot);
    }
    const stats = alone!.stats();
    expect(stats.granted.write).toBe(6);
    expect(stats.heldUsed).toBeGreaterThan(0);
    expect(stats.leaseCalls).toBeLessThan(6);
    const heldBefore = stats.heldUsed;
    for (let index = 0; index < 3; index++) alone!.observe({}, await alone!.acquire('backfill'));
    expect(alone!.stats().heldUsed - heldBefore).toBeLessThanOrEqual(2); // at most the write leases still held
    // Unused slots leased ahead go back: nothing stays in flight.
    const redis = new Redis(REDIS_URL);
    try {
      await waitFor(async () => (await redis.zcard(`${prefix}:{company:test}:flight`)) === 0, 'the unused leases to be given back');
    } finally {
      redis.disconnect();
    }
  });

  it('far from the limit a backfill leases ahead and its answers are recorded in batches: a few script calls per 100 requests, every slot ended', async () => {
    const [alone] = budgets(1, { limit: 100_000, windowMs: 60_000 });
    const resetAtMs = Math.ceil(Date.now() / 1000) * 1000 + 60_000;
    for (let index = 0; index < 200; index++) {
      const slot = await alone!.acquire('backfill');
      alone!.observe({ remaining: 100_000 - index - 1, resetAtMs, limit: 100_000 }, slot);
    }
    const stats = alone!.stats();
    expect(stats.granted.backfill).toBe(200);
    expect(stats.heldUsed).toBeGreaterThan(150);
    // Two calls per request before (one lease, one answer): here about one per 8 requests.
    expect(stats.scriptCalls).toBeLessThanOrEqual(40);
    await alone!.drain();
    await waitFor(async () => (await alone!.peek()).inFlight === 0, 'every slot to be ended (answered, or given back unused)');
  });

  it('far-from-the-limit leases and batched answers never let the processes together exceed the limit', async () => {
    const [a, b, c] = budgets(3, { limit: 150, windowMs: 1000, safetyMarginMs: 20 });
    let mostInWindow = 0;
    let granted = 0;
    await Promise.all(
      [a!, b!, c!].map(async (budget) => {
        for (let index = 0; index < 150; index++) {
          const slot = await budget.acquire('backfill');
          granted += 1;
          budget.observe({}, slot);
          // Counted by Redis on its own clock, leases included (a slot leased ahead is logged when granted).
          if (index % 10 === 0) mostInWindow = Math.max(mostInWindow, await budget.grantsInWindow());
        }
      }),
    );
    expect(granted).toBe(450);
    expect(mostInWindow).toBeLessThanOrEqual(150);
    // Leases were taken ahead while the room was far, and none while it was near.
    expect([a!, b!, c!].reduce((sum, budget) => sum + budget.stats().heldUsed, 0)).toBeGreaterThan(0);
  });

  it('a write in another process takes its slot at once while a backfill holds slots leased far from the limit', async () => {
    const [backfill, writer] = budgets(2, { limit: 10_000, windowMs: 60_000 });
    backfill!.observe({}, await backfill!.acquire('backfill'));
    expect(backfill!.stats().heldUsed).toBe(0);
    await backfill!.acquire('backfill'); // from the lease taken with the first
    expect(backfill!.stats().heldUsed).toBe(1);
    const before = (await writer!.peek()).inFlight;
    expect(before).toBeGreaterThanOrEqual(16); // the held leases are in flight for every process
    await writer!.acquire('write');
    expect(writer!.stats().granted.write).toBe(1);
  });

  it('every key it writes expires: nothing of a budget outlives its use (a slot given back as sent, a pause, a learned window, a waiter)', async () => {
    const [a, b] = budgets(2, { limit: 2, windowMs: 60_000 });
    const redis = new Redis(REDIS_URL);
    try {
      // The only slot in flight, given back as sent: it stays counted (lost) in a set that its removal emptied.
      const slot = await a!.acquire('backfill');
      a!.release(slot, { requestSent: true });
      await a!.drain();
      // An answer teaching the server's window, a waiter of another priority, a 429's pause (which forgets the window).
      const answered = await a!.acquire('write');
      a!.observe({ remaining: 0, resetAtMs: Date.now() + 500, limit: 2, serverNowMs: Date.now() }, answered);
      await a!.drain();
      const waiting = new AbortController();
      const waiter = b!.acquire('incremental', waiting.signal).catch(() => undefined);
      await waitFor(async () => (await redis.keys(`${prefix}*demand*`)).length > 0, 'the waiter to announce its demand');
      await b!.pauseUntil(Date.now() + 200);
      waiting.abort();
      await waiter;
      const keys = await redis.keys(`${prefix}*`);
      expect(keys.map((key) => key.slice(prefix.length)).sort()).toEqual(expect.arrayContaining([':{company:test}:epoch', ':{company:test}:flight', ':{company:test}:log', ':{company:test}:pause']));
      for (const key of keys) expect(await redis.pttl(key), key).toBeGreaterThan(0);
    } finally {
      redis.disconnect();
    }
  });

  it('observe never waits on Redis nor throws when Redis does not answer', async () => {
    const down = new Redis('redis://127.0.0.1:1', { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
    down.on('error', () => undefined);
    const budget = new RedisRateBudget({ redis: down, key: 'company:down', limit: 5 });
    try {
      expect(budget.observe({ remaining: 0, resetAtMs: Date.now() + 1000, limit: 5 }, { id: 'x', priority: 'write' })).toBeUndefined();
      budget.release({ id: 'y', priority: 'write' }, { requestSent: true });
      await waitFor(() => budget.stats().observeFailures === 2, 'both records to be counted as lost');
    } finally {
      down.disconnect();
    }
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
