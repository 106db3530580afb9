/**
 * The readiness probe against the simulator over HTTP: what counts as ready, and the cache that
 * keeps the probe from spending the rate budget.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ApiClient } from '../../src/client/client.ts';
import { LocalRateBudget } from '../../src/client/local-rate-budget.ts';
import { ApiAnswers, apiReadinessCheck, probeBudget, ReadinessProbe } from '../../src/daemon/readiness.ts';
import { z } from 'zod';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { listRequests, simulator } from '../helpers.ts';

let sim: RunningSimulator | undefined;
let client: ApiClient | undefined;
let runsClient: ApiClient | undefined;

afterEach(async () => {
  await runsClient?.close();
  runsClient = undefined;
  await client?.close();
  await sim?.close();
  sim = client = undefined;
});

function probeFor(running: RunningSimulator, cacheMs: number, token = String(running.tokens.admin)): ReadinessProbe {
  client = new ApiClient({
    baseUrl: running.url,
    tokens: { default: token },
    budget: new LocalRateBudget({ limit: 1000, windowMs: 1000 }),
    retry: { maxRetries: 0, maxRateLimitRetries: 0 },
  });
  return new ReadinessProbe({ check: apiReadinessCheck(client, '/employee-onboardings'), cacheMs, timeoutMs: 1000 });
}

describe('ReadinessProbe', () => {
  it('probes GET /employee-onboardings?limit=1 at most once per cache period', async () => {
    sim = await simulator();
    const probe = probeFor(sim, 60_000);
    expect(probe.last).toMatchObject({ ready: false, checkedAt: null });
    const verdicts = await Promise.all([probe.current(), probe.current(), probe.current()]);
    expect(await probe.current()).toBe(verdicts[0]);
    for (const verdict of verdicts) expect(verdict).toMatchObject({ ready: true, status: 200 });
    const requests = listRequests(sim, '/employee-onboardings');
    expect(requests).toHaveLength(1);
    expect(requests[0]!.query).toBe('limit=1');
  });

  it('ready on 429 (reachable, token accepted); not ready on 5xx, on 403 and when the answer is too slow; ready again once the API recovers', async () => {
    sim = await simulator();
    const probe = probeFor(sim, 1);
    const next = async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return probe.current();
    };
    sim.faults.inject({ kind: 'rate-limit', retryAfter: '30' });
    expect(await next()).toMatchObject({ ready: true, status: 429 });
    sim.faults.inject({ kind: 'status', status: 503 });
    const failing = await next();
    expect(failing).toMatchObject({ ready: false, status: 503 });
    expect(failing.reason).toMatch(/failing \(HTTP 503\)/);
    sim.faults.inject({ kind: 'latency', ms: 1_500 });
    const slow = await next();
    expect(slow).toMatchObject({ ready: false, status: null });
    expect(slow.reason).toMatch(/no answer within 1000 ms/);
    expect(await next()).toMatchObject({ ready: true, status: 200 });
  });

  it('not ready when the token lacks the scope (403)', async () => {
    sim = await simulator();
    const verdict = await probeFor(sim, 1000, String(sim.tokens.noScopes)).current();
    expect(verdict).toMatchObject({ ready: false, status: 403 });
    expect(verdict.reason).toMatch(/^the API refused the token \(HTTP 403\)/);
  });

  it('a spent budget: probes without waiting for a slot (ready); a paused budget: ready with the wait, nothing sent', async () => {
    sim = await simulator();
    const budget = new LocalRateBudget({ limit: 1, windowMs: 60_000 });
    await budget.acquire('backfill'); // a backfill took the whole limit
    client = new ApiClient({ baseUrl: sim.url, tokens: { default: String(sim.tokens.admin) }, budget: probeBudget(budget), retry: { maxRetries: 0, maxRateLimitRetries: 0 } });
    const probe = new ReadinessProbe({ check: apiReadinessCheck(client, '/employee-onboardings', budget), cacheMs: 1, timeoutMs: 5000 });
    const spent = await probe.current();
    expect(spent).toMatchObject({ ready: true, status: 200, budget: { waitMs: expect.any(Number) } });
    expect(spent.budget!.waitMs).toBeGreaterThan(0);
    expect(listRequests(sim, '/employee-onboardings')).toHaveLength(1);

    budget.pauseUntil(Date.now() + 30_000); // a 429 paused everyone
    await new Promise((resolve) => setTimeout(resolve, 5));
    const paused = await probe.current();
    expect(paused).toMatchObject({ ready: true, status: null, budget: { waitMs: expect.any(Number) } });
    expect(paused.budget!.waitMs).toBeGreaterThan(0);
    expect(paused.reason).toMatch(/rate budget is paused/);
    expect(listRequests(sim, '/employee-onboardings')).toHaveLength(1);
    await budget.close();
  });

  it("reads the runs' answers: no request of its own while they are recent (200, 503, no answer, 401), one probe once they are older than learnedMaxAgeMs", async () => {
    sim = await simulator();
    const answers = new ApiAnswers();
    // The runs' client (the daemon's sync client) carries the layer; the probe's client too.
    runsClient = new ApiClient({ baseUrl: sim.url, tokens: { default: String(sim.tokens.admin) }, budget: new LocalRateBudget({ limit: 1000, windowMs: 1000 }), retry: { maxRetries: 0, maxRateLimitRetries: 0 }, hooks: [answers.hooks()] });
    client = new ApiClient({ baseUrl: sim.url, tokens: { default: String(sim.tokens.admin) }, budget: new LocalRateBudget({ limit: 1000, windowMs: 1000 }), retry: { maxRetries: 0, maxRateLimitRetries: 0 }, hooks: [answers.hooks()] });
    const probe = new ReadinessProbe({ check: apiReadinessCheck(client, '/employee-onboardings'), cacheMs: 1, timeoutMs: 1000, answers });
    const run = () => runsClient!.request({ method: 'GET', path: '/transactions', query: { limit: 5 }, contentSchema: z.unknown(), priority: 'incremental', retry: 'none' }).then(() => undefined, () => undefined);
    const probes = () => listRequests(sim!, '/employee-onboardings').length;

    await run();
    for (let poll = 0; poll < 20; poll++) expect(await probe.current()).toMatchObject({ ready: true, status: 200 });
    sim.faults.inject({ kind: 'status', status: 503 });
    await run();
    const failing = await probe.current();
    expect(failing).toMatchObject({ ready: false, status: 503 });
    expect(failing.reason).toMatch(/failing \(HTTP 503\)/);
    sim.faults.inject({ kind: 'refuse' });
    await run();
    const away = await probe.current();
    expect(away).toMatchObject({ ready: false, status: null });
    expect(away.reason).toMatch(/unreachable/);
    sim.faults.inject({ kind: 'status', status: 401 });
    await run();
    expect(await probe.current()).toMatchObject({ ready: false, status: 401 });
    await run();
    expect(await probe.current()).toMatchObject({ ready: true, status: 200 });
    expect(probes()).toBe(0);

    // Nothing learned that recent: one probe, whose answer is learned in turn.
    const stale = new ReadinessProbe({ check: apiReadinessCheck(client, '/employee-onboardings'), cacheMs: 1, timeoutMs: 1000, answers, learnedMaxAgeMs: 1 });
    const waitPast = async (ms: number) => {
      const from = answers.last!.atMs;
      while (Date.now() - from <= ms) await new Promise((resolve) => setTimeout(resolve, 2));
    };
    await waitPast(1);
    expect(await stale.current()).toMatchObject({ ready: true, status: 200 });
    expect(probes()).toBe(1);
    expect(await probe.current()).toMatchObject({ ready: true, status: 200 });
    expect(probes()).toBe(1);
  });
  it("one rule for the probe's answer and the runs' last answer: the same readiness and status for 200, 400, 404, 429, 401, 403, 500, 503 and no answer", async () => {
    sim = await simulator();
    const answers = new ApiAnswers();
    runsClient = new ApiClient({ baseUrl: sim.url, tokens: { default: String(sim.tokens.admin) }, budget: new LocalRateBudget({ limit: 1000, windowMs: 1000 }), retry: { maxRetries: 0, maxRateLimitRetries: 0 }, hooks: [answers.hooks()] });
    const learned = new ReadinessProbe({ check: () => Promise.reject(new Error('the learned verdict sends no probe')), cacheMs: 1, timeoutMs: 1000, answers });
    const probe = probeFor(sim, 1);
    const run = () => runsClient!.request({ method: 'GET', path: '/transactions', query: { limit: 5 }, contentSchema: z.unknown(), priority: 'incremental', retry: 'none' }).then(() => undefined, () => undefined);
    const faults = { 200: undefined, 400: { kind: 'status', status: 400 }, 404: { kind: 'status', status: 404 }, 429: { kind: 'rate-limit', retryAfter: '1' }, 401: { kind: 'status', status: 401 }, 403: { kind: 'status', status: 403 }, 500: { kind: 'status', status: 500 }, 503: { kind: 'status', status: 503 }, none: { kind: 'refuse' } } as const;
    const expected = { 200: true, 400: true, 404: true, 429: true, 401: false, 403: false, 500: false, 503: false, none: false };
    for (const [answer, fault] of Object.entries(faults)) {
      if (fault) sim.faults.inject(fault);
      await run();
      const fromRuns = await learned.current();
      await new Promise((resolve) => setTimeout(resolve, 2)); // past the probe's 1 ms cache
      if (fault) sim.faults.inject(fault);
      const fromProbe = await probe.current();
      const status = answer === 'none' ? null : Number(answer);
      expect({ answer, ready: fromRuns.ready, status: fromRuns.status }).toEqual({ answer, ready: expected[answer as keyof typeof expected], status });
      expect({ answer, ready: fromProbe.ready, status: fromProbe.status }).toEqual({ answer, ready: expected[answer as keyof typeof expected], status });
    }
  });
});
