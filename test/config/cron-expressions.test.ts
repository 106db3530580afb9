/**
 * The cron expressions of the configuration are checked without node-cron when they are plain
 * (src/config/schema.ts `isPlainCronExpression`), so that a one-off `sync` loads no scheduler library:
 * every expression that check accepts must be one node-cron accepts, and the rest is node-cron's call.
 */
import { readFileSync } from 'node:fs';
import { validateDetailed } from 'node-cron';
import { describe, expect, it } from 'vitest';
import { cronExpressionProblem, isPlainCronExpression } from '../../src/config/schema.ts';

/** The schedules of the shipped config/bizops-sync.json. */
const SHIPPED = JSON.parse(readFileSync(new URL('../../config/bizops-sync.json', import.meta.url), 'utf8')) as { sync: { schedule: string; reconcileSchedule: string } };

/** Elements of a field: valid and invalid in some field or other, plain and not. */
const PARTS = ['*', '*/1', '*/2', '*/5', '*/7', '*/0', '*/6', '*/12', '*/23', '*/24', '*/31', '*/59', '*/60', '*/99', '0', '1', '2', '5', '6', '7', '11', '12', '13', '23', '24', '28', '29', '30', '31', '32', '59', '60', '1-5', '5-1', '0-59', '0-60', '1-31', '0-31', '0-6', '0-7', '1-12', '0-12', '2-4/2', '1-30/7', '5/2', '01', '00-05', 'mon', 'jan', '?', 'L', 'W', '15W', '-1', '1,2,3', '*,5', '1,,2', ''];

/** A seeded pseudo-random generator (mulberry32): the same expressions every run. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `count` expressions of 5 or 6 fields drawn from PARTS, most fields a single element, some a list. */
function expressions(count: number): string[] {
  const next = random(20261128);
  const pick = () => PARTS[Math.floor(next() * PARTS.length)]!;
  const field = () => (next() < 0.8 ? pick() : `${pick()},${pick()}`);
  // Half the fields `*`, so that plain expressions are frequent.
  const fieldOrStar = () => (next() < 0.5 ? '*' : field());
  return Array.from({ length: count }, () => Array.from({ length: next() < 0.5 ? 5 : 6 }, fieldOrStar).join(' '));
}

describe('cron expressions checked without node-cron', () => {
  it('accepts only expressions node-cron accepts, among thousands of valid and invalid ones', () => {
    const all = [...expressions(20_000), '0 0 31 2 *', '0 0 30 2 *', '* * * * * * *', '* * * *', ' * * * * *', '*  * * * *', '0 0 * * 7', '0 0 * * sun'];
    const plain = all.filter(isPlainCronExpression);
    expect(plain.filter((expression) => !validateDetailed(expression).valid)).toEqual([]);
    // The check decides for many of them (else it saves nothing), and leaves the invalid ones to node-cron.
    expect(plain.length).toBeGreaterThan(1000);
    expect(all.some((expression) => !validateDetailed(expression).valid)).toBe(true);
  });

  it('decides the shipped schedules and the usual forms itself', () => {
    for (const expression of [SHIPPED.sync.schedule, SHIPPED.sync.reconcileSchedule, '*/30 * * * * *', '0 17 */6 * * *', '*/5 * * * *', '0 3 * * 1-5', '15,45 * * * *', '0 0 1 * *']) {
      expect(isPlainCronExpression(expression), expression).toBe(true);
      expect(cronExpressionProblem(expression), expression).toBeNull();
    }
  });

  it('leaves the rest to node-cron, whose verdict and reason it reports', () => {
    expect(isPlainCronExpression('0 0 * * sun')).toBe(false);
    expect(cronExpressionProblem('0 0 * * sun')).toBeNull();
    expect(isPlainCronExpression('0 0 31 2 *')).toBe(false);
    expect(cronExpressionProblem('0 0 31 2 *')).toMatch(/^"0 0 31 2 \*" is not a valid cron expression \(dayOfMonth: .*impossible day of month/);
    expect(cronExpressionProblem('*/30 * * *')).toMatch(/expected 5 or 6 fields but got 4/);
    expect(cronExpressionProblem('61 * * * *')).toMatch(/is not a valid cron expression \(minute: /);
  });
});
