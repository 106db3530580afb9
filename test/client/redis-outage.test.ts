/**
 * The shared rate budget while Redis is away (docs/rate-budget.md "When Redis is away"), on a Redis
 * of the test's own: waiters ride out an outage shorter than `redisWaitMs` (nothing granted while
 * Redis is down), fail with one error naming the setting after it, and after Redis lost the
 * budget's state only one probe goes out until an answer tells the server's window.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RedisRateBudget } from '../../src/client/redis-rate-budget.ts';
import { startOwnRedis, type OwnRedis } from '../writes/own-redis.ts';

let redis: OwnRedis;
const budgets: RedisRateBudget[] = [];

beforeEach(async () => {
  redis = await startOwnRedis();
});

afterEach(async () => {
  for (const budget of budgets.splice(0)) await budget.close();
  await redis.stop();
});

function budget(options: Partial<ConstructorParameters<typeof RedisRateBudget>[0]> = {}): RedisRateBudget {
  const made = new RedisRateBudget({ redis: redis.url, key: 'company:outage', limit: 10, windowMs: 1000, maxPollMs: 100, ...options });
  budgets.push(made);
  return made;
}

describe('the shared budget while Redis is away', () => {
  it('a waiter rides out an outage shorter than redisWaitMs: granted only once Redis answers again', async () => {
    const shared = budget({ redisWaitMs: 30_000 });
    shared.observe({}, await shared.acquire('backfill')); // the budget is known to this process
    await redis.kill();
    let grantedAt = 0;
    const waiting = shared.acquire('backfill').then((slot) => {
      grantedAt = Date.now();
      return slot;
    });
    await sleep(1500); // the outage
    expect(grantedAt).toBe(0);
    const restartedAt = Date.now();
    await redis.start();
    await waiting;
    expect(grantedAt).toBeGreaterThanOrEqual(restartedAt);
    expect(shared.stats().redisGaveUp).toBe(0);
  });

  it('after redisWaitMs every waiter fails with one error naming the outage and the setting', async () => {
    const shared = budget({ redisWaitMs: 400 });
    await redis.kill();
    const results = await Promise.allSettled([shared.acquire('write'), shared.acquire('backfill')]);
    for (const result of results) {
      expect(result.status).toBe('rejected');
      expect(String((result as PromiseRejectedResult).reason)).toMatch(/^Error: the shared rate budget: Redis did not answer for 0\.4 s \(rateLimit\.redisWaitSeconds\)/);
    }
    expect(shared.stats().redisGaveUp).toBe(1);
  });

  it('after Redis lost the budget state: one probe, nothing more until an answer tells the server window', async () => {
    const shared = budget();
    shared.observe({}, await shared.acquire('incremental'));
    await shared.drain();
    await redis.flush();
    const probe = await shared.acquire('incremental');
    expect(shared.stats().stateLosses).toBe(1);
    const others = [shared.acquire('incremental'), shared.acquire('incremental')];
    // The probe is out and no answer came: nothing more may be granted, in any process.
    expect((await budget().peek()).available).toBe(0);
    const serverNowMs = Date.now();
    shared.observe({ remaining: 5, resetAtMs: Math.ceil((serverNowMs + 1000) / 1000) * 1000, limit: 10, serverNowMs }, probe);
    await Promise.all(others);
  });
});
