/**
 * The rate budget follows the server's own window (docs/rate-budget.md, spec §8): against the
 * simulator sending the spec's whole-second `X-RateLimit-Reset`, with windows that end anywhere in
 * a second. Counts are what the SERVER counted per window (the simulator's log), never this
 * process's clock.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/client.ts';
import { LocalRateBudget } from '../../src/client/local-rate-budget.ts';
import type { RateBudget } from '../../src/client/rate-budget.ts';
import { transactionListItemSchema } from '../../src/client/schemas.ts';
import { RedisRateBudget } from '../../src/client/redis-rate-budget.ts';
import { emptyWindowState, observeWindow, spendUnanswered, windowAllowance, windowEndBoundMs } from '../../src/client/server-window.ts';
import { startSimulator, type RunningSimulator } from '@bizops-sync/simulator';
import { REDIS_URL, requireRedis } from '../writes/support.ts';
import { runCli } from '../helpers.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const transactions = { itemsKey: 'transactions', itemSchema: transactionListItemSchema, priority: 'backfill' as const };


/** Sends `total` list requests, `concurrency` at a time, through `budget`. */
async function sendThrough(sim: RunningSimulator, budget: RateBudget, total: number, concurrency: number): Promise<ApiClient> {
  const client = new ApiClient({ baseUrl: sim.url, tokens: { default: sim.tokens.admin }, budget, retry: { maxRetries: 3, minTimeoutMs: 10, maxTimeoutMs: 50 } });
  cleanups.push(() => client.close());
  let left = total;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (left > 0) {
        left--;
        await client.listPage('/transactions', 0, transactions);
      }
    }),
  );
  return client;
}

describe('the server-window policy', () => {
  it("bounds a window's end from receipt times, not from the rounded-up Reset", () => {
    const state = emptyWindowState();
    // Window [10_000.300, 11_000.300) on the server; Reset says 11 (rounded up); our clock = server clock.
    observeWindow(state, { resetAtMs: 11_000, remaining: 4, serverNowMs: 10_000 }, 10_910);
    observeWindow(state, { resetAtMs: 11_000, remaining: 0, serverNowMs: 10_000 }, 10_920);
    // The next window's first answer came 5 ms into it (its Date header read late in its second says little).
    observeWindow(state, { resetAtMs: 12_000, remaining: 4 }, 11_305);
    const end = windowEndBoundMs(state, 1000)!;
    // Never early (the true end is 12_300), and far tighter than Reset + clock error (up to 13_000).
    expect(end).toBeGreaterThanOrEqual(12_300);
    expect(end).toBeLessThanOrEqual(12_305);
    // Remaining minus what is in flight may go now; nothing more until the end.
    expect(windowAllowance(state, 11_400, 1, { limit: 5, windowMs: 1000, resumeMarginMs: 5 })).toEqual({ slots: 3, resumeAtMs: 11_400 });
    expect(windowAllowance(state, 11_400, 4, { limit: 5, windowMs: 1000, resumeMarginMs: 5 })).toEqual({ slots: 0, resumeAtMs: end + 5 });
    // After the end: a fresh window, less what is still in flight.
    expect(windowAllowance(state, end + 6, 2, { limit: 5, windowMs: 1000, resumeMarginMs: 5 })?.slots).toBe(3);
  });

  it('learns the window length from how Reset advances, once seen twice', () => {
    const state = emptyWindowState();
    observeWindow(state, { resetAtMs: 60_000, remaining: 1 }, 1);
    observeWindow(state, { resetAtMs: 120_000, remaining: 1 }, 60_001);
    expect(state.learnedWindowMs).toBeUndefined();
    observeWindow(state, { resetAtMs: 180_000, remaining: 1 }, 120_001);
    expect(state.learnedWindowMs).toBe(60_000);
    // Answers from an older window change nothing.
    observeWindow(state, { resetAtMs: 120_000, remaining: 0 }, 120_002);
    expect(state.remaining).toBe(1);
  });
});

describe('LocalRateBudget against whole-second resets', () => {
  it('spends every server window, skipping none, with no 429', async () => {
    const windowMs = 1000;
    const limit = 5;
    // Windows end 300 ms into a second: Reset is up to 700 ms late, the Date header up to a second behind.
    const anchorMs = Math.floor(Date.now() / 1000) * 1000 + 300;
    const sim = await startSimulator({ seed: 3, rateLimit: { limit, windowMs, anchorMs }, size: { transactions: 20 } });
    cleanups.push(() => sim.close());
    const budget = new LocalRateBudget({ limit, windowMs });
    cleanups.push(() => budget.close());
    // Four windows' worth: three window ends crossed, each a Reset up to 700 ms late.
    const client = await sendThrough(sim, budget, 4 * limit, limit);
    expect(sim.requests.filter((request) => request.status === 429)).toHaveLength(0);
    expect(client.stats.rateLimited).toBe(0);
    // The server refuses (429) any request over the limit in its window, so 0 x 429 is the per-window
    // bound as the server counted it. That no window goes unused waiting for a rounded-up Reset is
    // proven without a clock by the window-end tests above and measured in bench/writes.ts.
    expect(sim.requests.filter((request) => request.status === 200)).toHaveLength(4 * limit);
    // Every slot was ended by its answer.
    expect((await budget.peek()).inFlight).toBe(0);
  });

  it('returns the slot of a request that never left, and peek takes none', async () => {
    const sim = await startSimulator({ seed: 3, rateLimit: { limit: 2, windowMs: 60_000 }, size: { transactions: 20 } });
    cleanups.push(() => sim.close());
    const budget = new LocalRateBudget({ limit: 2, windowMs: 60_000 });
    cleanups.push(() => budget.close());
    const client = new ApiClient({
      baseUrl: sim.url,
      tokens: { default: sim.tokens.admin },
      budget,
      hooks: [{ beforeRequest: () => Promise.reject(new Error('refused by a later layer')) }],
      retry: { maxRetries: 0 },
    });
    cleanups.push(() => client.close());
    await expect(client.listPage('/transactions', 0, transactions)).rejects.toThrow('refused by a later layer');
    const peek = await budget.peek();
    expect(peek).toMatchObject({ available: 2, inFlight: 0, followingServerWindow: false });
    expect((await budget.peek()).available).toBe(2);
    expect(sim.requests).toHaveLength(0);
  });
});

/** The most requests the simulator counted in one of its windows (accepted ones: each is counted). */
function mostInOneServerWindow(sim: RunningSimulator): number {
  const perWindow = new Map<number, number>();
  for (const request of sim.requests) if (request.rateWindowStartMs !== undefined) perWindow.set(request.rateWindowStartMs, (perWindow.get(request.rateWindowStartMs) ?? 0) + 1);
  return Math.max(0, ...perWindow.values());
}

describe('the configured limit is a ceiling (a deployment sharing the company limit with other integrations)', () => {
  it('policy: in a window the server says has 55 left, no more than the ceiling of our own go', () => {
    const state = emptyWindowState();
    const options = { limit: 5, windowMs: 1000, resumeMarginMs: 5 };
    // Our first 3 answers of window 11_000 (another integration spent some too: 57, then 55 left).
    observeWindow(state, { resetAtMs: 11_000, remaining: 57, limit: 60 }, 10_400);
    observeWindow(state, { resetAtMs: 11_000, remaining: 56, limit: 60 }, 10_410);
    observeWindow(state, { resetAtMs: 11_000, remaining: 55, limit: 60 }, 10_420);
    // 5 - 3 answered - 1 in flight: one more, not 55 - 1.
    expect(windowAllowance(state, 10_430, 1, options)).toEqual({ slots: 1, resumeAtMs: 10_430 });
    // One sent without an answer counts against the ceiling too.
    spendUnanswered(state);
    expect(windowAllowance(state, 10_440, 1, options)).toMatchObject({ slots: 0 });
    // The next window starts from the ceiling again, less what is in flight; its answers count anew.
    const end = windowEndBoundMs(state, 1000)!;
    expect(windowAllowance(state, end + 6, 1, options)?.slots).toBe(4);
    observeWindow(state, { resetAtMs: 12_000, remaining: 59, limit: 60 }, end + 20);
    expect(windowAllowance(state, end + 21, 0, options)?.slots).toBe(4);
    // A server limit below the configured one is the ceiling then.
    observeWindow(state, { resetAtMs: 12_000, remaining: 1, limit: 2 }, end + 22);
    expect(windowAllowance(state, end + 23, 0, { ...options, limit: 60 })?.slots).toBe(0);
  });

  it('LocalRateBudget: with 5 configured and 60 allowed by the server, at most 5 of ours in any server window', async () => {
    const sim = await startSimulator({ seed: 3, rateLimit: { limit: 60, windowMs: 1000 }, size: { transactions: 20 } });
    cleanups.push(() => sim.close());
    const budget = new LocalRateBudget({ limit: 5, windowMs: 1000 });
    cleanups.push(() => budget.close());
    await sendThrough(sim, budget, 15, 8);
    expect(sim.requests.filter((request) => request.status === 200)).toHaveLength(15);
    expect(mostInOneServerWindow(sim)).toBeLessThanOrEqual(5);
  });

  it('RedisRateBudget: two processes on a configured 5, the server allowing 60: at most 5 of theirs in any server window', async () => {
    await requireRedis();
    const sim = await startSimulator({ seed: 3, rateLimit: { limit: 60, windowMs: 1000 }, size: { transactions: 20 } });
    cleanups.push(() => sim.close());
    const prefix = `test:ceiling:${process.pid}:${Date.now()}`;
    const [a, b] = [0, 1].map(() => new RedisRateBudget({ redis: REDIS_URL, key: 'company:ceiling', prefix, limit: 5, windowMs: 1000 }));
    cleanups.push(async () => {
      await a!.reset();
      await a!.close();
      await b!.close();
    });
    await Promise.all([sendThrough(sim, a!, 8, 4), sendThrough(sim, b!, 7, 4)]);
    expect(sim.requests.filter((request) => request.status === 200)).toHaveLength(15);
    expect(mostInOneServerWindow(sim)).toBeLessThanOrEqual(5);
  });

  it('--help says the limit is a ceiling', async () => {
    const help = await runCli(['--help'], process.env);
    expect(help.stdout).toMatch(/BIZOPS_RATE_LIMIT_PER_MIN\s+the most requests this deployment sends per window \(minute\) of the API: a\s+ceiling/);
  });
});
