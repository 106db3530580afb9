/**
 * An API outage and its recovery as an operator sees them in the console (docs/operations.md
 * "Operator console"): the daemon (in this process, with short retries and a fast schedule) against
 * the simulator answering 503 to every list, a webhook receiver down then back, a write the API
 * refused, real Redis, and Debian's Chromium. While the streams fail, every page load shows each
 * one failing (never green), the verdict names them, the errors are short with their HTTP status;
 * the plots carry one point per sample the daemon kept; once the API and the receiver answer again
 * everything recovers by itself. Nothing waits on time: each step waits for a state.
 *
 * The README's screenshot (docs/console.png) is taken here, after the recovery (the lag plots show
 * the outage, the recent runs its failed runs): `UPDATE_CONSOLE_SCREENSHOT=1 npx vitest run
 * test/console/outage.test.ts` writes it; otherwise it goes to a temp dir.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { Redis } from 'ioredis';
import { startDaemon, type RunningDaemon } from '../../jobs/daemon.ts';
import type { ConnectionSnapshot } from '../../src/console/console-snapshot.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { simulator, tempDir, testConfig, waitFor, type TempDir } from '../helpers.ts';
import { newWebhookSecret, WebhookReceiver } from '../daemon/helpers.ts';
import { openBrowser } from './helpers.ts';

const READ_KEY = 'read-key-outage-0123456789';
const WRITE_KEY = 'write-key-outage-0123456789';
const SCREENSHOT = new URL('../../docs/console.png', import.meta.url).pathname;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

let sim: RunningSimulator | undefined;
let dir: TempDir | undefined;
let browser: BrowserContext | undefined;
let daemon: RunningDaemon | undefined;
let hooks: WebhookReceiver | undefined;
let redisPrefix: string | undefined;

afterEach(async () => {
  await browser?.close();
  await daemon?.stop();
  await hooks?.close();
  await sim?.close();
  dir?.remove();
  // The test's own Redis keys (its rate budget and write queue), gone with it.
  if (redisPrefix) {
    const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
    for await (const keys of redis.scanStream({ match: `${redisPrefix}*`, count: 500 }) as AsyncIterable<string[]>) if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  }
  sim = dir = browser = daemon = hooks = redisPrefix = undefined;
});

/** What a script reads at /console.json (bearer key): the one connection's snapshot. */
async function snapshot(url: string): Promise<ConnectionSnapshot> {
  const response = await fetch(`${url}/console.json`, { headers: { authorization: `Bearer ${READ_KEY}` } });
  expect(response.status).toBe(200);
  return ((await response.json()) as { connections: ConnectionSnapshot[] }).connections[0]!;
}

/** The text of the element at `selector`, its spaces collapsed. */
async function text(page: Page, selector: string): Promise<string> {
  return (await page.locator(selector).innerText()).replace(/\s+/g, ' ').trim();
}

/** Each stream's state cell (its words and its class), read in one call. */
async function streamStates(page: Page): Promise<Record<string, { text: string; tone: string }>> {
  return Object.fromEntries(
    await page.locator('table.streams tbody tr:not(.partition)').evaluateAll((rows) =>
      rows.map((row) => {
        const state = row.querySelector('.state')!;
        return [row.querySelector('th')!.textContent!.trim(), { text: state.textContent!.trim(), tone: state.getAttribute('class')! }];
      }),
    ),
  );
}

/** The points of the polyline in `selector` (one per sample). */
async function polylinePoints(page: Page, selector: string): Promise<number> {
  return ((await page.locator(selector).getAttribute('points')) ?? '').trim().split(/\s+/).length;
}

describe('the console through an API outage', { timeout: 120_000 }, () => {
  it('shows every stream failing while the API answers 503 (never green), the verdict, short errors and plots; recovers by itself', async () => {
    sim = await simulator({ size: { transactions: 30, deals: 6, onboardings: 3, customers: 3, qa_corrective_actions: 4 } });
    dir = tempDir();
    hooks = await new WebhookReceiver().start();
    let receiverDown = true;
    hooks.handler = (_request, response) => {
      if (!receiverDown) return false;
      response.writeHead(500, { 'content-type': 'text/plain' }).end('receiver down for a deploy');
      return true;
    };
    redisPrefix = `test:console-outage:${randomUUID()}`;
    const config = testConfig(sim, dir.file('mirror.db'), {
      sync: { schedule: '*/1 * * * * *', reconcileSchedule: '0 0 0 1 1 *', failingAfterRuns: 1, maxPollFactor: 1 },
      // A limit the requests plot can show beside this test's few requests.
      rateLimit: { perMinute: 600, windowMs: 60_000 },
      http: { port: 0, readApiKey: READ_KEY, writeApiKey: WRITE_KEY },
      webhooks: [{ name: 'erp', url: hooks.url, secret: newWebhookSecret() }],
    });
    daemon = await startDaemon(config, {
      logger: silentLogger,
      processMetrics: false,
      // A run retries each failed list request 3 times over about 1 s (150, 300 and 500 ms apart): most
      // of the time one is in progress, as in production.
      clientRetry: { maxRetries: 3, minTimeoutMs: 150, maxTimeoutMs: 500 },
      consoleSampleMs: 200,
      webhooks: { scheduleMs: [100, 200, 400], jitterRatio: 0, pollMs: 50 },
      redisKeys: { budgetPrefix: `${redisPrefix}:rate`, queuePrefix: redisPrefix, queueName: 'writes' },
    });
    const url = daemon.url;
    const streams = config.sync.streams;
    // Chromium starts while the daemon backfills.
    const opening = openBrowser(dir.file('chromium-profile'));

    // The backfill done; a write the API refuses (no such deal: 404) fails for good.
    const accepted = await fetch(`${url}/writes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${WRITE_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'deal.close', payload: { dealId: 'deal_gone_for_good', status: 'WON' } }),
    });
    expect(accepted.status).toBe(202);
    const { write } = (await accepted.json()) as { write: { id: string } };
    await waitFor(async () => {
      const now = await snapshot(url);
      return now.report!.streams.filter((stream) => streams.includes(stream.stream)).every((stream) => stream.lastRun.succeededAt !== null) && now.report!.failedWrites.some((failed) => failed.id === write.id);
    }, 'the backfill and the failed write', 30_000);

    // The outage: every list answers 503.
    sim.faults.inject({ kind: 'status', status: 503, match: { method: 'GET' }, times: 1_000_000 });
    const failing = await waitFor(async () => {
      const now = await snapshot(url);
      const conditions = now.report!.streams.filter((stream) => streams.includes(stream.stream)).map((stream) => stream.condition.condition);
      const endpointFailing = now.webhooks.every((endpoint) => endpoint.failingSince !== null);
      return conditions.every((condition) => condition === 'failing') && now.activeRuns.some((run) => run.retrying) && endpointFailing ? now : undefined;
    }, 'every stream failing, a run retrying, the endpoint failing', 30_000);
    expect(failing.verdict.ok).toBe(false);

    const opened = await opening;
    browser = opened.browser;
    const page = opened.page;
    await page.setExtraHTTPHeaders({ authorization: `Bearer ${READ_KEY}` });

    // Page after page while the API fails: each stream reads failing, in the bad colour, never ok.
    let retryingSeen = false;
    for (let load = 0; load < 2; load++) {
      await page.goto(url);
      const states = await streamStates(page);
      expect(Object.keys(states).sort()).toEqual([...streams].sort());
      for (const [stream, state] of Object.entries(states)) {
        expect(state.text, stream).toMatch(/^failing since \d\d:\d\d UTC \(\d+ failed runs? in a row\)/);
        expect(state.tone, stream).toBe('state bad');
        if (/, retrying \(/.test(state.text)) retryingSeen = true;
      }
    }
    expect(retryingSeen).toBe(true);

    // The verdict first: the streams failing, the write that failed; each a link to its rows.
    // (CSS locators here: a page this size makes every role query walk its accessibility tree.)
    const verdict = page.locator('section.verdict');
    expect(await verdict.innerText()).toMatch(new RegExp(`^${streams.length} streams failing since \\d\\d:\\d\\d UTC, .*1 write failed`));
    expect(await verdict.locator('a', { hasText: 'streams failing since' }).getAttribute('href')).toMatch(/^#stream-default-/);
    expect(await verdict.locator('a', { hasText: '1 write failed' }).getAttribute('href')).toBe('#writes-default-failed');
    // The receiver down too: the endpoint reads failing (paused, or retrying when its pause is over), in the verdict too.
    expect(await verdict.locator('a', { hasText: /^1 endpoint (paused until|failing since) / }).getAttribute('href')).toBe('#endpoint-default-erp');
    expect(await text(page, '#endpoint-default-erp')).toMatch(/^erp \S+ failing since \d\d:\d\d UTC, (paused until \d\d:\d\d UTC|retrying) /);
    expect(await text(page, `#writes-default-failed tr:has(code:text-is("${write.id}"))`)).toMatch(/ deal\.close .* HTTP 404 .*Deal deal_gone_for_good not found$/);

    // The error short with its HTTP status; a failed run's own figures (it read nothing), not the backfill's 30 records.
    expect(await text(page, '#stream-default-transactions')).toMatch(/HTTP 503 · GET \/transactions: Injected fault: HTTP 503$/);
    const failedRun = await waitFor(async () => (await snapshot(url)).report!.streams.find((stream) => stream.stream === 'transactions' && stream.lastRun.state === 'finished'), 'a failed run of transactions ended');
    expect(failedRun.lastRun).toMatchObject({ requests: 0, records: 0, changes: 0 });
    expect(failedRun.lastError).toMatch(/HTTP 503 \(GET \/transactions\?/);
    // The recent runs show the failed ones while the outage lasts (read now: after the recovery, runs
    // every second may push them out of the latest 25 before the page is read again).
    await page.goto(url);
    expect(await text(page, 'table.runs')).toMatch(/transactions \S+ \S+ UTC sync \(incremental\) failed /);

    // The recovery: the API and the receiver answer again; no command (no enable, no retry now): the paused endpoint resumes by itself.
    sim.faults.clear();
    receiverDown = false;
    const recovered = await waitFor(async () => {
      const now = await snapshot(url);
      const ok = now.report!.streams.filter((stream) => streams.includes(stream.stream)).every((stream) => stream.condition.condition === 'ok' && stream.lastError === null);
      const delivering = now.webhooks.every((endpoint) => endpoint.failingSince === null && endpoint.lagEvents === 0);
      return ok && delivering ? now : undefined;
    }, 'every stream ok and the endpoint delivering again', 30_000);
    expect(recovered.verdict.text).toBe('1 write failed');

    await page.goto(url);
    for (const [stream, state] of Object.entries(await streamStates(page))) {
      expect(state.tone, stream).toBe('state ok');
      expect(state.text, stream).toMatch(/^ok(, running \(sync\))?$/);
    }
    expect(await text(page, '#endpoint-default-erp')).toMatch(/^erp \S+ delivering /);
    // The recent runs, after the failed ones above: succeeded ones.
    expect(await text(page, 'table.runs')).toMatch(/transactions \S+ \S+ UTC sync \(incremental\) succeeded /);

    // The plots: one point per sample the daemon kept (read before and after the page: samples go on).
    const before = await snapshot(url);
    await page.goto(url);
    const after = await snapshot(url);
    const between = (count: number, low: number, high: number) => expect(count >= low && count <= high, `${count} in [${low}, ${high}]`).toBe(true);
    for (const stream of streams) {
      const points = await polylinePoints(page, `#stream-default-${stream} svg.plot polyline`);
      between(points, before.history!.streams[stream]!.length, after.history!.streams[stream]!.length);
      expect(points).toBeGreaterThan(2);
    }
    between(await polylinePoints(page, '#endpoint-default-erp svg.plot polyline'), before.history!.endpoints.erp!.length, after.history!.endpoints.erp!.length);
    between(await page.locator('figure.requests svg rect').count(), before.history!.requests.length, after.history!.requests.length);

    // A phone's width: nothing wider than the screen.
    await page.setViewportSize({ width: 400, height: 800 });
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(400);
    await page.setViewportSize({ width: 1440, height: 1000 });
    const screenshot = process.env.UPDATE_CONSOLE_SCREENSHOT === '1' ? SCREENSHOT : dir.file('console.png');
    await page.screenshot({ path: screenshot, fullPage: true });
    expect(readFileSync(screenshot).subarray(1, 4).toString()).toBe('PNG');
  });
});
