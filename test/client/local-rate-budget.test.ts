import { afterEach, describe, expect, it, vi } from 'vitest';
import { LocalRateBudget } from '../../src/client/local-rate-budget.ts';
import type { Priority } from '../../src/client/rate-budget.ts';

const budgets: LocalRateBudget[] = [];
function budget(limit: number, windowMs: number, safetyMarginMs = 20): LocalRateBudget {
  const created = new LocalRateBudget({ limit, windowMs, safetyMarginMs });
  budgets.push(created);
  return created;
}

afterEach(async () => {
  vi.useRealTimers();
  for (const created of budgets.splice(0)) await created.close();
});

describe('LocalRateBudget', () => {
  it('never grants more than `limit` in any window, and grants the first `limit` at once', async () => {
    // The budget's clock and timers are faked, so each grant's time is the budget's own (a process
    // descheduled between a grant and its callback cannot shift one).
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    const rate = budget(3, 500);
    const started = Date.now();
    const grants: number[] = [];
    const all = Promise.all(
      Array.from({ length: 9 }, () =>
        rate.acquire('backfill').then(() => {
          grants.push(Date.now());
        }),
      ),
    );
    await vi.runAllTimersAsync();
    await all;
    vi.useRealTimers();
    grants.sort((a, b) => a - b);
    expect(grants).toHaveLength(9);
    // The first three go immediately: pacing starts only when the window is full.
    expect((grants[2] as number) - started).toBeLessThan(100);
    for (let index = 0; index + 3 < grants.length; index++) {
      expect((grants[index + 3] as number) - (grants[index] as number)).toBeGreaterThanOrEqual(500);
    }
    expect(rate.stats().granted.backfill).toBe(9);
    expect(rate.stats().waitedMs).toBeGreaterThan(0);
  });

  it('serves waiters strictly by priority, first come first served within a priority', async () => {
    const rate = budget(1, 200);
    await rate.acquire('backfill'); // spends the window
    const order: string[] = [];
    const ask = (priority: Priority, name: string) => rate.acquire(priority).then(() => order.push(name));
    const waiting = [
      ask('backfill', 'backfill-1'),
      ask('incremental', 'incremental-1'),
      ask('write', 'write-1'),
      ask('backfill', 'backfill-2'),
      ask('write', 'write-2'),
    ];
    expect(rate.stats().waiting).toEqual({ write: 2, incremental: 1, backfill: 2 });
    await Promise.all(waiting);
    expect(order).toEqual(['write-1', 'write-2', 'incremental-1', 'backfill-1', 'backfill-2']);
  });

  it('puts a retry at the head of its priority queue, after earlier retries, never ahead of a higher priority', async () => {
    const rate = budget(1, 200);
    await rate.acquire('backfill'); // spends the window
    const order: string[] = [];
    const ask = (priority: Priority, name: string, retry = false) => rate.acquire(priority, undefined, { retry }).then(() => order.push(name));
    const waiting = [
      ask('incremental', 'incremental-1'),
      ask('incremental', 'incremental-2'),
      ask('incremental', 'retry-1', true),
      ask('write', 'write-1'),
      ask('incremental', 'retry-2', true),
    ];
    await Promise.all(waiting);
    expect(order).toEqual(['write-1', 'retry-1', 'retry-2', 'incremental-1', 'incremental-2']);
  });

  it('sends nothing after observe({ remaining: 0 }) until the reset, on the server clock', async () => {
    const rate = budget(100, 60_000);
    const now = Date.now();
    // The server's clock runs 10 s behind ours: the reset must be read relative to its Date header.
    const serverNowMs = now - 10_000;
    rate.observe({ limit: 100, remaining: 0, resetAtMs: serverNowMs + 600, serverNowMs });
    expect(rate.stats().blockedUntilMs).toBeGreaterThanOrEqual(now + 600);
    await rate.acquire('write');
    expect(Date.now() - now).toBeGreaterThanOrEqual(600);
  });

  it('tightens the server clock estimate from several Date headers, never ending a window early', async () => {
    const rate = budget(100, 60_000);
    const now = Date.now();
    // Date headers are truncated to the second: this one was read 900 ms after its second began...
    rate.observe({ serverNowMs: now - 900 });
    // ...this one 50 ms after: the clocks agree to within 50 ms, so the reset is ~300 ms away, not ~1200.
    rate.observe({ remaining: 0, resetAtMs: now + 300, serverNowMs: now - 50 });
    expect(rate.serverClockOffsetMs()).toBeGreaterThanOrEqual(-60);
    // The budget's own plan (no clock reading after the fact): the window ends ~300 ms away plus the
    // resume margin, not ~1200 ms away as the first Date header alone would say.
    const planned = await rate.peek();
    expect(planned.available).toBe(0);
    expect(planned.nextSlotAtMs).toBeGreaterThanOrEqual(now + 300);
    expect(planned.nextSlotAtMs).toBeLessThan(now + 700);
    await rate.acquire('write');
    expect(Date.now() - now).toBeGreaterThanOrEqual(300);
  });

  it('counts down a positive `remaining` within the server window', async () => {
    const rate = budget(100, 60_000);
    const now = Date.now();
    rate.observe({ remaining: 2, resetAtMs: now + 500, serverNowMs: now });
    // Two slots may go now, then none until the reset: the budget's plan, read without a clock race.
    expect((await rate.peek()).available).toBe(2);
    await rate.acquire('incremental');
    await rate.acquire('incremental');
    const spent = await rate.peek();
    expect(spent.available).toBe(0);
    expect(spent.nextSlotAtMs).toBeGreaterThanOrEqual(now + 500);
    await rate.acquire('incremental');
    expect(Date.now() - now).toBeGreaterThanOrEqual(500);
  });

  it('ignores a late observation that claims more remaining in the same window', async () => {
    const rate = budget(100, 60_000);
    const now = Date.now();
    rate.observe({ remaining: 0, resetAtMs: now + 400, serverNowMs: now });
    rate.observe({ remaining: 5, resetAtMs: now + 400, serverNowMs: now });
    await rate.acquire('write');
    expect(Date.now() - now).toBeGreaterThanOrEqual(400);
  });

  it('pauseUntil blocks every acquire until then', async () => {
    const rate = budget(100, 60_000);
    const now = Date.now();
    rate.pauseUntil(now + 400);
    const granted: number[] = [];
    await Promise.all([rate.acquire('write'), rate.acquire('backfill')].map((p) => p.then(() => granted.push(Date.now()))));
    for (const at of granted) expect(at - now).toBeGreaterThanOrEqual(400);
    expect(rate.stats().pauses).toBe(1);
  });

  it('rejects an aborted acquire with the signal reason and leaves the queue to the others', async () => {
    const rate = budget(1, 300);
    await rate.acquire('write');
    const controller = new AbortController();
    const aborted = rate.acquire('write', controller.signal);
    const next = rate.acquire('backfill');
    setTimeout(() => controller.abort(new Error('shutting down')), 30);
    await expect(aborted).rejects.toThrow('shutting down');
    expect(rate.stats().waiting.write).toBe(0);
    await next;
    expect(rate.stats().granted).toEqual({ write: 1, incremental: 0, backfill: 1 });
    await expect(rate.acquire('write', AbortSignal.abort(new Error('already')))).rejects.toThrow('already');
  });

  it('rejects waiters on close and bad options with a message naming the field', async () => {
    const rate = budget(1, 10_000);
    await rate.acquire('write');
    const waiting = rate.acquire('write');
    await rate.close();
    await expect(waiting).rejects.toThrow('closed');
    expect(() => new LocalRateBudget({ limit: 0 })).toThrow(/limit must be a positive integer/);
    expect(() => new LocalRateBudget({ limit: 5, windowMs: -1 })).toThrow(/windowMs/);
  });
});
