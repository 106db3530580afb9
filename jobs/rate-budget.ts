/**
 * Job wiring: the rate budget a process paces with. DESIGN.md: one budget per company, shared by
 * every request of every process of a deployment (polls, reconciliation, writes), kept in Redis.
 *
 * When Redis does not answer at start, a sync or backfill still runs, pacing alone with the
 * in-process budget, and says so in a warning: its requests are then not counted against other
 * processes', so a 429 becomes possible (and is obeyed) when several processes run at once.
 */
import { Redis } from 'ioredis';
import type { Config } from '../src/config/schema.ts';
import { maskUrlPassword } from '../src/config/load.ts';
import { LocalRateBudget } from '../src/client/local-rate-budget.ts';
import type { RateBudget } from '../src/client/rate-budget.ts';
import { rateBudgetKey, RedisRateBudget } from '../src/client/redis-rate-budget.ts';
import type { Logger } from '../src/logging/logger.ts';

/**
 * True when Redis at `url` answers PING within `timeoutMs`.
 */
export async function redisAnswers(url: string, timeoutMs = 2000): Promise<boolean> {
  const redis = new Redis(url, { lazyConnect: true, connectTimeout: timeoutMs, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return (await redis.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

export interface OpenedRateBudget {
  budget: RateBudget;
  /** True when the budget lives in Redis and is shared with the other processes. */
  shared: boolean;
}

/**
 * The Redis-backed budget of `config`'s company (key from `rateBudgetKey`), or the in-process one
 * when Redis does not answer. The caller closes the budget (`budget.close()`).
 */
export async function openRateBudget(config: Config, logger: Logger): Promise<OpenedRateBudget> {
  if (await redisAnswers(config.redisUrl)) {
    const budget = new RedisRateBudget({ redis: config.redisUrl, key: rateBudgetKey(config), limit: config.rateLimit.perMinute, windowMs: config.rateLimit.windowMs });
    return { budget, shared: true };
  }
  logger.warn(
    { redis: maskUrlPassword(config.redisUrl) },
    'Redis does not answer: pacing with an in-process rate budget, not shared with other processes of this deployment',
  );
  return { budget: new LocalRateBudget({ limit: config.rateLimit.perMinute, windowMs: config.rateLimit.windowMs }), shared: false };
}
