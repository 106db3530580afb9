/**
 * The composition root (jobs/context.ts): one rate budget per company or per token, in Redis when it
 * answers; the single fallback to an in-process budget when it does not (the sync still runs, the
 * write queue is refused with a message naming REDIS_URL); change listeners hear the engine.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openContext, type Context } from '../../jobs/context.ts';
import { LocalRateBudget } from '../../src/client/local-rate-budget.ts';
import { RedisRateBudget } from '../../src/client/redis-rate-budget.ts';
import { configSchema, type Config } from '../../src/config/schema.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import type { AppendedChange } from '../../src/mirror/mirror-store.ts';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { closedPort } from '../client/test-server.ts';
import { capturingLogger } from '../helpers.ts';
import { simulator, writeTestBed, REDIS_URL, type WriteTestBed } from '../writes/support.ts';

let sim: RunningSimulator;
let bed: WriteTestBed;
let config: Config;
const contexts: Context[] = [];

beforeEach(async () => {
  sim = await simulator({ size: { transactions: 30, deals: 5, onboardings: 3 } });
  bed = await writeTestBed();
  config = configSchema.parse({ baseUrl: sim.url, tokens: { default: sim.tokens.admin, hr: sim.tokens.hr }, dbPath: bed.dbPath, redisUrl: REDIS_URL });
});

afterEach(async () => {
  for (const context of contexts.splice(0)) await context.close();
  await sim?.close();
  await bed?.cleanup();
});

async function open(configured: Config, logger = silentLogger): Promise<Context> {
  const context = await openContext(configured, { logger, redisKeys: { budgetPrefix: bed.budgetPrefix, queuePrefix: bed.prefix, queueName: bed.queueName } });
  contexts.push(context);
  return context;
}

describe('the composition root', () => {
  it('one budget in Redis per company for every token; one per token when rateLimit.scope is token', async () => {
    const company = await open(config);
    const perToken = await open(configSchema.parse({ ...config, rateLimit: { scope: 'token' } }));
    expect(company.budgets.shared).toBe(true);
    expect(company.budgets.budgetFor('hr')).toBe(company.budgets.budgetFor('default'));
    expect(company.budgets.budgetFor('default')).toBeInstanceOf(RedisRateBudget);
    expect((company.budgets.budgetFor('default') as RedisRateBudget).key).toBe(`company:default@${new URL(sim.url).host}`);
    expect(perToken.budgets.budgetFor('hr')).not.toBe(perToken.budgets.budgetFor('default'));
    expect((perToken.budgets.budgetFor('hr') as RedisRateBudget).key).toMatch(/^token:[0-9a-f]{16}@127\.0\.0\.1:\d+$/);
  });

  it('when Redis does not answer: one warning, an in-process budget, the sync still runs, and the write queue is refused naming REDIS_URL', async () => {
    const { logger, lines } = capturingLogger();
    const down = configSchema.parse({ ...config, redisUrl: `redis://:hunter2@127.0.0.1:${await closedPort()}` });
    const context = await open(down, logger);
    expect(context.budgets.shared).toBe(false);
    expect(context.budgets.budgetFor('default')).toBeInstanceOf(LocalRateBudget);
    const warnings = lines.filter((line) => line.includes('Redis does not answer'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).not.toContain('hunter2');
    expect((await context.engine.run('deals', 'backfill')).status).toBe('succeeded');
    expect(context.budgets.stats().granted.backfill).toBe(1);
    await expect(context.writeQueue()).rejects.toThrow(/^the write queue needs Redis, and REDIS_URL \(redis:\/\/:\*\*\*@127\.0\.0\.1:\d+\) did not answer/);
  });

  it('change listeners hear every change the engine records, until removed', async () => {
    const context = await open(config);
    const heard: AppendedChange[] = [];
    const remove = context.onChanges((changes) => heard.push(...changes));
    await context.engine.run('deals', 'backfill');
    expect(heard.map((change) => change.type)).toEqual(Array(5).fill('deal.created'));
    remove();
    await context.engine.run('onboardings', 'backfill');
    expect(heard).toHaveLength(5);
  });
});
