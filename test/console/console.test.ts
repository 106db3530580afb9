/**
 * The operator console (docs/operations.md "Operator console") as a person sees it: the real
 * `bizops-sync daemon` process against an in-test simulator, a real webhook receiver, real Redis
 * for the write queue, and Debian's Chromium driven by playwright-core. Nothing waits on time: each
 * step waits for a state (the daemon's own answers, or the page's text after a reload).
 * The page's rendering alone (the verdict, states, partitions, plots, a 400 px screen) is checked
 * on a fixed snapshot; an outage and its recovery in a running daemon are in outage.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { verdictOf, type MirrorReport, type StreamStatus } from '../../src/status/index.ts';
import { renderConsole } from '../../src/console/console-page.ts';
import { CONSOLE_CSS } from '../../src/console/console-style.ts';
import type { ConnectionSnapshot } from '../../src/console/console-snapshot.ts';
import { simulator, tempDir, waitFor, type TempDir } from '../helpers.ts';
import { cliEnv, newWebhookSecret, spawnDaemon, terminate, WebhookReceiver, type DaemonProcess } from '../daemon/helpers.ts';
import { openBrowser as launch, rowText, stateClass } from './helpers.ts';

const READ_KEY = 'read-key-console-0123456789';
const WRITE_KEY = 'write-key-console-0123456789';

let sim: RunningSimulator | undefined;
let dir: TempDir | undefined;
let browser: BrowserContext | undefined;
const daemons: DaemonProcess[] = [];
const receivers: WebhookReceiver[] = [];

afterEach(async () => {
  await browser?.close();
  for (const daemon of daemons.splice(0)) if (daemon.child.exitCode === null && daemon.child.signalCode === null) daemon.child.kill('SIGKILL');
  for (const receiver of receivers.splice(0)) await receiver.close();
  await sim?.close();
  dir?.remove();
  sim = dir = browser = undefined;
});

function daemonEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return cliEnv({
    BIZOPS_BASE_URL: sim!.url,
    BIZOPS_TOKEN: String(sim!.tokens.admin),
    BIZOPS_DB: dir!.file('mirror.db'),
    BIZOPS_HTTP_PORT: '0',
    // Only the backfill at start runs: no scheduled sync or reconciliation replaces the last run the page shows.
    BIZOPS_SCHEDULE: '0 0 0 1 1 *',
    BIZOPS_RECONCILE_SCHEDULE: '0 0 0 1 1 *',
    BIZOPS_RATE_LIMIT_PER_MIN: '100000',
    ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
    ...extra,
  });
}

function start(env: NodeJS.ProcessEnv): DaemonProcess {
  const daemon = spawnDaemon(env);
  daemons.push(daemon);
  return daemon;
}

/** A fresh Chromium profile (its own user-data-dir under the test's temp dir). */
async function openBrowser(): Promise<Page> {
  const opened = await launch(dir!.file('chromium-profile'));
  browser = opened.browser;
  return opened.page;
}

/** A connection's snapshot around a report, as the console gathers it (the verdict over the given streams). */
function snapshotOf(report: Partial<MirrorReport>, extra: Partial<ConnectionSnapshot> = {}, now = new Date('2026-01-01T01:00:00Z')): ConnectionSnapshot {
  const full: MirrorReport = { changelogSeq: 1, oldestSeq: 1, consumers: [], streams: [], unsupported: [], writes: {}, writesNeedingReview: [], failedWrites: [], recentFailedWrites: 0, endpoints: [], leases: [], waiting: [], ...report };
  return {
    name: 'default',
    verdict: verdictOf({ streams: full.streams, recentFailedWrites: full.recentFailedWrites, writesNeedingReview: full.writes.needs_review ?? 0, now }),
    report: full,
    error: null,
    webhooks: [],
    streams: full.streams.map((stream) => stream.stream),
    recentRuns: {},
    activeRuns: [],
    heldLeases: [],
    history: null,
    ...extra,
  };
}

/** What the console knows, as a script reads it (bearer key). */
interface ConsoleJson {
  connections: {
    report: {
      streams: { stream: string; cursor: string | null; records: number; rejected: number }[];
      writes: Record<string, number>;
      writesNeedingReview: { id: string }[];
    } | null;
    webhooks: { name: string; lastStatus: number | null; failingSince: string | null; deliveredSeq: number | null; lagEvents: number }[];
  }[];
}

async function consoleJson(url: string): Promise<ConsoleJson> {
  const response = await fetch(`${url}/console.json`, { headers: { authorization: `Bearer ${READ_KEY}` } });
  expect(response.status).toBe(200);
  return (await response.json()) as ConsoleJson;
}

describe('the operator console', { timeout: 120_000 }, () => {
  it('is off without a read key: / is the daemon\'s 404, like the other read routes', async () => {
    sim = await simulator({ size: { transactions: 5, deals: 2, onboardings: 1, customers: 1, qa_corrective_actions: 2 } });
    dir = tempDir();
    const daemon = start(daemonEnv({ BIZOPS_WRITE_API_KEY: WRITE_KEY }));
    const url = await daemon.url;
    for (const path of ['/', '/console.json', '/console/console.css']) {
      const response = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${READ_KEY}` } });
      expect(response.status, path).toBe(404);
    }
    const signIn = await fetch(`${url}/console/sign-in`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `key=${READ_KEY}` });
    expect(signIn.status).toBe(404);
    expect((await terminate(daemon)).code).toBe(0);
  });

  it('shows a backfill, a failing endpoint and a parked write to a signed-in browser; sign-in refuses a wrong key; replay works from a button', async () => {
    sim = await simulator({ size: { transactions: 30, deals: 6, onboardings: 3, customers: 3, qa_corrective_actions: 4 } });
    dir = tempDir();
    // One record of the backfill fails its schema: it is quarantined, the rest of its page commits.
    sim.faults.inject({ kind: 'invalid-item', index: 3, times: 1, match: { path: '/transactions' } });
    const hooks = new WebhookReceiver();
    await hooks.start();
    receivers.push(hooks);
    let hooksDown = true;
    hooks.handler = (_request, response) => {
      if (!hooksDown) return false;
      // Retry-After: a pause long enough (60 s) that it cannot end between reading the page and clicking "Retry now".
      response.writeHead(500, { 'content-type': 'text/plain', 'retry-after': '60' }).end('receiver down for maintenance');
      return true;
    };
    const webhookSecret = newWebhookSecret();
    const daemon = start(
      daemonEnv({ BIZOPS_READ_API_KEY: READ_KEY, BIZOPS_WRITE_API_KEY: WRITE_KEY, BIZOPS_WEBHOOK_URL: hooks.url, BIZOPS_WEBHOOK_SECRET: webhookSecret }),
    );
    const url = await daemon.url;

    // A parked write: the simulator commits the email and loses the answer; an email is never sent twice.
    sim.faults.inject({ kind: 'lose-response-after-commit', match: { method: 'POST', path: '/emails' } });
    const from = sim.world.data.emailAddresses.find((address) => address.employeeId === sim!.world.employeeForRole('admin').id)!.address;
    const accepted = await fetch(`${url}/writes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${WRITE_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'email.send', payload: { from, to: 'guest@example.org', subject: 'Quarterly report', text: 'Attached.' } }),
    });
    expect(accepted.status).toBe(202);
    const { write } = (await accepted.json()) as { write: { id: string } };

    // The state a person will look at: the backfill done, the endpoint failing, the write parked.
    await waitFor(async () => {
      const [connection] = (await consoleJson(url)).connections;
      const report = connection!.report!;
      const backfilled = report.streams.every((stream) => stream.cursor !== null);
      const failing = connection!.webhooks.some((endpoint) => endpoint.lastStatus === 500 && endpoint.failingSince !== null);
      return backfilled && failing && report.writesNeedingReview.some((parked) => parked.id === write.id);
    }, 'the backfill, a failed webhook attempt and the parked write', 60_000);

    // A named consumer of the changelog over HTTP (the read routes on the same key and port).
    expect((await fetch(`${url}/consumers/erp`, { method: 'PUT', headers: { authorization: `Bearer ${READ_KEY}` } })).status).toBe(201);

    // A script with a wrong bearer key is refused; with the right one it gets the page.
    expect((await fetch(url, { headers: { authorization: 'Bearer not-the-read-key-0123456' } })).status).toBe(401);
    const scripted = await fetch(url, { headers: { authorization: `Bearer ${READ_KEY}` } });
    expect(scripted.status).toBe(200);
    expect(await scripted.text()).toContain('<caption>Streams</caption>');

    const page = await openBrowser();
    const first = await page.goto(url);
    expect(first!.status()).toBe(401);
    await expect(page.getByRole('heading', { name: 'bizops-sync console' }).isVisible()).resolves.toBe(true);

    // A wrong key: refused with a clear message, nothing typed shown back, no cookie.
    await page.getByLabel('Read key').fill('certainly-not-the-read-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').innerText()).toMatch(/Sign-in refused: that is not the read key/);
    expect(await page.content()).not.toContain('certainly-not-the-read-key');
    expect(await browser!.cookies()).toEqual([]);

    // The right keys (the write key too: the action buttons).
    await page.getByLabel('Read key').fill(READ_KEY);
    await page.getByLabel(/Write key/).fill(WRITE_KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('table', { name: 'Streams' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/');
    expect(page.url()).not.toContain(READ_KEY);
    const [cookie] = await browser!.cookies();
    expect(cookie).toMatchObject({ name: 'bizops_console', httpOnly: true, sameSite: 'Strict', path: '/' });
    expect(cookie!.value).not.toContain(READ_KEY);
    expect(cookie!.expires * 1000).toBeGreaterThan(Date.now());
    expect(cookie!.expires * 1000).toBeLessThanOrEqual(Date.now() + 8 * 3600 * 1000 + 60_000);

    // The backfill: each stream with its counts and cursor; the invalid record quarantined.
    const transactions = await rowText(page, 'Streams', 'transactions');
    expect(transactions).toMatch(/^transactions ok 29 0 \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC /);
    // 29 records stored; 30 changes: 29 created and one record.rejected.
    expect(transactions).toMatch(/: 1 request, 29 records, 30 changes; ended \d{4}-/);
    expect(transactions).toMatch(/ 1$/); // one record quarantined, no last error
    expect(await rowText(page, /^Recent runs \(this daemon, latest \d+\)$/, 'transactions')).toMatch(/ backfill \(complete\) succeeded 1 29 30 /);
    expect(await rowText(page, 'Streams', 'deals')).toMatch(/^deals ok 6 0 \d{4}-/);
    expect(await rowText(page, 'Streams', 'onboardings')).toMatch(/^onboardings ok 3 0 \d{4}-/);
    expect(await page.getByText('transactions: 1 record quarantined in rejected_records').count()).toBe(1);

    // The failing endpoint: its state, its last attempt's answer, the attempt itself.
    const endpoint = await rowText(page, 'Webhook endpoints', 'env');
    expect(endpoint).toMatch(/failing since \d\d:\d\d UTC, (paused until \d\d:\d\d UTC|retrying)/);
    expect(endpoint).toMatch(/HTTP 500 at \d{4}-/);
    expect(endpoint).toContain(hooks.url);
    const attempts = (await page.getByRole('table', { name: 'Recent attempts of env' }).innerText()).replace(/\s+/g, ' ');
    expect(attempts).toMatch(/failed HTTP 500/);

    expect(await rowText(page, 'Changelog consumers', 'erp')).toMatch(/^erp \d+ \d+ events?/);

    // The parked write: counted, and listed with why.
    expect((await page.getByRole('table', { name: 'Writes by status' }).innerText()).replace(/\s+/g, ' ')).toMatch(/queued sending succeeded failed needs review 0 0 0 0 1$/);
    const parked = await rowText(page, /Writes needing review/, write.id);
    expect(parked).toMatch(/email\.send/);
    expect(parked).toMatch(/not sent again/);

    // The leases this daemon holds.
    expect(await rowText(page, 'Leases', 'stream:transactions')).toMatch(/held by this daemon$/);
    expect(await rowText(page, 'Leases', 'webhooks')).toMatch(/held by this daemon$/);

    // No secret anywhere on the page.
    const content = await page.content();
    for (const secret of [READ_KEY, WRITE_KEY, webhookSecret, String(sim.tokens.admin)]) expect(content).not.toContain(secret);

    // A state-changing form without the session's CSRF token is refused, the cookie notwithstanding.
    const forged = await page.request.post(`${url}/console/webhooks/enable`, { form: { connection: 'default', endpoint: 'env' } });
    expect(forged.status()).toBe(403);
    expect(await forged.text()).toMatch(/no valid CSRF token/);

    // The receiver is back. Taken for down, the endpoint is paused: "Retry now" ends the pause at once.
    // (Its first failures may not have paused it yet when the page was read.)
    await waitFor(async () => {
      if (/paused until /.test(await rowText(page, 'Webhook endpoints', 'env'))) return true;
      await page.goto(url);
      return false;
    }, 'the endpoint to read paused', 30_000);
    hooksDown = false;
    await page.getByRole('button', { name: 'Retry env now' }).click();
    await page.getByRole('status').waitFor();
    expect(await page.getByRole('status').innerText()).toMatch(/^env: the pause until \d{4}-\S+ is ended; its next event goes out now\.$/);
    await waitFor(async () => (await consoleJson(url)).connections[0]!.webhooks[0]!.failingSince === null, 'the endpoint delivering after retry now');

    // Replay everything from seq 0 with the button; the endpoint delivers again.
    await page.getByLabel('Re-send events after seq').fill('0');
    await page.getByRole('button', { name: 'Replay env' }).click();
    await page.getByRole('status').waitFor();
    expect(await page.getByRole('status').innerText()).toMatch(/Replay of env: the events after seq 0 are sent again/);
    await waitFor(async () => {
      await page.goto(url);
      return (await rowText(page, 'Webhook endpoints', 'env')).includes('delivering');
    }, 'the endpoint to deliver again', 30_000);
    expect(hooks.received.filter((request) => request.headers['webhook-id'] !== undefined).length).toBeGreaterThan(0);

    // Signing out ends the session: the same cookie no longer opens the page.
    const sessionCookie = (await browser!.cookies())[0]!;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Read key').waitFor();
    const replayed = await fetch(url, { headers: { cookie: `${sessionCookie.name}=${sessionCookie.value}` } });
    expect(replayed.status).toBe(401);

    // Behind a TLS proxy the cookie is Secure too; a form posted from another site is refused.
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const proxied = await fetch(`${url}/console/sign-in`, { method: 'POST', redirect: 'manual', headers: { ...form, 'x-forwarded-proto': 'https' }, body: new URLSearchParams({ key: READ_KEY }) });
    expect(proxied.status).toBe(303);
    expect(proxied.headers.get('set-cookie')).toMatch(/^bizops_console=[\w-]{43}; Max-Age=28800; Path=\/; HttpOnly; Secure; SameSite=Strict$/);
    const crossSite = await fetch(`${url}/console/sign-in`, { method: 'POST', redirect: 'manual', headers: { ...form, origin: 'https://attacker.example' }, body: new URLSearchParams({ key: READ_KEY }) });
    expect(crossSite.status).toBe(403);
    expect(crossSite.headers.get('set-cookie')).toBeNull();

    // Nothing secret reached the daemon's log either.
    const logs = daemon.stderr();
    expect(logs).toContain('console sign-in refused: wrong read key');
    for (const secret of [READ_KEY, WRITE_KEY, 'certainly-not-the-read-key', sessionCookie.value]) expect(logs).not.toContain(secret);
    expect((await terminate(daemon)).code).toBe(0);
  });

  it('leads with the verdict linking its rows; a stream reads its condition first and its activity second; partitions, failed writes, short errors, plots; fits a 400 px screen', async () => {
    const now = new Date('2026-01-01T01:00:00Z');
    const at = (minute: number) => new Date(now.getTime() - (60 - minute) * 60_000).toISOString();
    const stream = (name: StreamStatus['stream'], part: Partial<StreamStatus>): StreamStatus => ({
      stream: name,
      supported: true,
      records: 10,
      tombstoned: 0,
      cursor: '2026-01-01T00:00:00.000Z',
      lagSeconds: 60,
      completeScans: 1,
      lastRun: { mode: 'incremental', startedAt: at(58), finishedAt: at(59), succeededAt: '2025-12-31T22:00:00.000Z', requests: 1, records: 0, changes: 0, state: 'finished' },
      lastError: null,
      condition: { condition: 'ok', failedRuns: 0, since: null },
      lastScan: null,
      skipped: null,
      recordClockLagSeconds: 0,
      unlistedRecords: null,
      deletionHold: null,
      rejected: 0,
      undeclaredFields: [],
      inProgress: null,
      partitions: null,
      ...part,
    });
    const outage = 'HTTP 503: Service unavailable: upstream maintenance (GET /transactions?limit=100&offset=0&sortBy=createdAt&sortOrder=asc&updatedAfter=2026-01-01T00:00:00.000Z)';
    const partitionRun = { mode: 'incremental', startedAt: at(58), finishedAt: at(59), succeededAt: at(59), requests: 2, records: 3, changes: 1, state: 'finished' as const };
    const streams = [
      stream('transactions', {
        lastError: outage,
        condition: { condition: 'failing', failedRuns: 3, since: at(10) },
        lastRun: { mode: 'incremental', startedAt: at(58), finishedAt: at(59), succeededAt: at(5), requests: 6, records: 0, changes: 0, state: 'finished' },
      }),
      stream('deals', { condition: { condition: 'stale', failedRuns: 0, since: at(20) } }),
      stream('onboardings', { lastError: 'HTTP 502: Bad gateway (GET /employee-onboardings?limit=100&offset=0)', condition: { condition: 'ok', failedRuns: 1, since: null } }),
      stream('customers', {}),
      stream('qa_corrective_actions', {
        lastError: 'partition loc_2: HTTP 500: Internal error (GET /qa/corrective-actions?locationId=loc_2&limit=100&offset=0)',
        partitions: {
          param: 'locationId',
          list: [
            { partition: 'loc_1', records: 4, tombstoned: 0, cursor: at(59), lagSeconds: 60, completeScans: 1, lastRun: partitionRun, lastError: null, lastScan: null, deletionHold: null, inProgress: null },
            { partition: 'loc_2', records: 2, tombstoned: 1, cursor: at(40), lagSeconds: 1200, completeScans: 1, lastRun: partitionRun, lastError: 'HTTP 500: Internal error (GET /qa/corrective-actions?locationId=loc_2&limit=100&offset=0)', lastScan: null, deletionHold: null, inProgress: null },
          ],
        },
      }),
    ];
    const failedWrites = [1, 2, 3].map((n) => ({ id: `wr_failed_${n}`, kind: 'deal.close', error: `HTTP 404: Deal not found (POST /deals/deal_missing_${n}/close)`, httpStatus: 404, finishedAt: at(50 + n) }));
    const endpoint = {
      name: 'erp', kind: 'webhook', url: 'https://erp.example/hooks', configured: true, registered: true, enabled: true, disabledAt: null, disabledReason: null, disabledKind: null,
      failingSince: at(40), failedEvents: 0, heldEvents: 2, ordering: 'record' as const, maxInFlight: 16, recentAttempts: [], events: ['*'], deliveredSeq: 10, lagEvents: 5, lagSeconds: 1200,
      consecutiveFailures: 4, nextAttemptAt: new Date(now.getTime() + 30 * 60_000).toISOString(), pausedUntil: new Date(now.getTime() + 30 * 60_000).toISOString(), lastAttemptAt: at(59), lastStatus: 502, lastSuccessAt: at(39), lastError: 'HTTP 502 from the receiver', lastErrorAt: at(59), deliveredCount: 10, failedCount: 4,
    };
    const points = (minutes: number[], value: (index: number) => number) => minutes.map((minute, index) => ({ at: at(minute), value: value(index) }));
    const report: Partial<MirrorReport> = {
      streams,
      writes: { failed: 3, succeeded: 5 },
      failedWrites,
      recentFailedWrites: 3,
      // deals yielded to a one-off run waiting for it (--wait): released by the daemon, the waiter not running yet.
      leases: [{ name: 'stream:deals', holder: null, fence: 4, expiresAt: null, acquiredAt: at(50), renewedAt: at(59), free: true }],
      waiting: [{ stream: 'deals', waiter: 'ops-host:77:0badcafe', until: at(59) }],
    };
    const snapshot = snapshotOf(report, {
      verdict: verdictOf({ streams, endpoints: [endpoint], recentFailedWrites: 3, now }),
      webhooks: [endpoint],
      activeRuns: [
        { stream: 'transactions', reason: 'sync', retrying: { since: at(58), retries: 2, lastError: outage } },
        { stream: 'customers', reason: 'sync', retrying: { since: at(59), retries: 1, lastError: 'HTTP 503: Service unavailable' } },
        { stream: 'qa_corrective_actions', reason: 'sync' },
      ],
      history: {
        sampleMs: 60_000,
        streams: { transactions: points([55, 56, 57, 58, 59], (i) => 60 * (i + 1)), deals: points([58, 59], () => 30) },
        endpoints: { erp: points([56, 57, 58, 59], (i) => 300 * i) },
        requests: points([54, 55, 56, 57, 58, 59], (i) => (i === 2 ? 75 : 10 * i)),
        requestLimit: 60,
      },
    }, now);
    const html = await renderConsole({ connections: [snapshot], now, refreshSeconds: 0, csrfToken: 'token', mayAct: false, writeKeyConfigured: false });
    dir = tempDir();
    const page = await openBrowser();
    await page.setContent(html);
    // The daemon serves this stylesheet at /console/console.css; here the page has no server.
    await page.addStyleTag({ content: CONSOLE_CSS });

    // The verdict first, worst first, each part a link to its rows.
    const verdict = page.getByRole('region', { name: 'Verdict' });
    expect((await verdict.innerText()).trim()).toBe('1 stream failing since 00:10 UTC, 1 stream stale since 00:20 UTC, 1 endpoint paused until 01:30 UTC, 3 writes failed, 2 streams with a failed last run');
    expect(await verdict.getByRole('link', { name: '1 stream failing since 00:10 UTC' }).getAttribute('href')).toBe('#stream-default-transactions');
    expect(await verdict.getByRole('link', { name: '1 endpoint paused until 01:30 UTC' }).getAttribute('href')).toBe('#endpoint-default-erp');
    expect(await verdict.getByRole('link', { name: '3 writes failed' }).getAttribute('href')).toBe('#writes-default-failed');
    for (const link of await verdict.getByRole('link').all()) expect(await page.locator((await link.getAttribute('href'))!).count()).toBe(1);

    // The condition first, the activity second; never green while a stream fails, even on its first retries.
    expect(await rowText(page, 'Leases', 'stream:deals')).toMatch(/yielded to a waiting one-off run \(ops-host:77:0badcafe\)$/);
    expect(await rowText(page, 'Streams', 'transactions')).toMatch(/^transactions failing since 00:10 UTC \(3 failed runs in a row\), retrying \(2 retries since 00:58 UTC, HTTP 503\) 10 0 /);
    expect(await stateClass(page, 'Streams', 'transactions')).toBe('state bad');
    expect(await rowText(page, 'Streams', 'deals')).toMatch(/^deals stale: no success since 2025-12-31 22:00 UTC 10 0 /);
    expect(await stateClass(page, 'Streams', 'deals')).toBe('state bad');
    expect(await rowText(page, 'Streams', 'onboardings')).toMatch(/^onboardings last run failed 10 0 /);
    expect(await stateClass(page, 'Streams', 'onboardings')).toBe('state warn');
    expect(await rowText(page, 'Streams', 'customers')).toMatch(/^customers retrying \(1 retry since 00:59 UTC, HTTP 503\) 10 0 /);
    expect(await stateClass(page, 'Streams', 'customers')).toBe('state warn');
    expect(await rowText(page, 'Streams', 'qa_corrective_actions')).toMatch(/^qa_corrective_actions last run failed, retrying \(sync\) 10 0 .*partition loc_2: HTTP 500 · GET \/qa\/corrective-actions: Internal error$/);
    expect(await stateClass(page, 'Streams', 'qa_corrective_actions')).toBe('state warn');

    // A failed run's own figures, not the last success's; its error short with the HTTP status, whole on demand.
    const transactions = await rowText(page, 'Streams', 'transactions');
    expect(transactions).toContain('incremental: failed after 6 pages, 0 records, 0 changes; ended 2026-01-01 00:59:00 UTC');
    expect(transactions).toMatch(/HTTP 503 · GET \/transactions: Service unavailable: upstream maintenance$/);
    const error = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'transactions', exact: true }) }).locator('details');
    expect(await error.locator('.detail').isVisible()).toBe(false);
    await error.locator('summary').click();
    expect(await error.locator('.detail').innerText()).toBe(outage);

    // Each partition on a row of its own under its stream.
    expect(await rowText(page, 'Streams', 'locationId=loc_1')).toMatch(/^locationId=loc_1 ok 4 0 /);
    expect(await rowText(page, 'Streams', 'locationId=loc_2')).toMatch(/^locationId=loc_2 last run failed 2 1 .*HTTP 500 · GET \/qa\/corrective-actions: Internal error$/);

    // The endpoint paused, the failed writes listed with their error.
    expect(await rowText(page, 'Webhook endpoints', 'erp')).toMatch(/failing since 00:40 UTC, paused until 01:30 UTC .* HTTP 502 from the receiver$/);
    expect(await rowText(page, 'Failed writes', 'wr_failed_3')).toMatch(/^wr_failed_3 deal\.close 2026-01-01 00:53:00 UTC HTTP 404 HTTP 404 · POST \/deals\/deal_missing_3\/close: Deal not found$/);

    // The plots: one point per sample, drawn on the server.
    const polylinePoints = async (selector: string) => ((await page.locator(selector).getAttribute('points')) ?? '').trim().split(/\s+/).length;
    expect(await polylinePoints('#stream-default-transactions svg.plot polyline')).toBe(5);
    expect(await polylinePoints('#stream-default-deals svg.plot polyline')).toBe(2);
    expect(await page.locator('#stream-default-onboardings svg.plot').count()).toBe(0);
    expect(await polylinePoints('#endpoint-default-erp svg.plot polyline')).toBe(4);
    expect(await page.locator('figure.requests svg rect').count()).toBe(6);
    expect(await page.locator('figure.requests svg rect.over').count()).toBe(1);
    expect(await page.locator('figure.requests figcaption').innerText()).toMatch(/^Requests per minute \(this daemon\) over the last 5 min: 6 samples, now 50, peak 75; the limit is 60$/);
    expect(await page.locator('script').count()).toBe(0);

    // A phone: 400 px wide. The page is no wider than the screen; the verdict and each stream's state are in view.
    await page.setViewportSize({ width: 400, height: 800 });
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(400);
    const box = await verdict.boundingBox();
    expect(box!.x + box!.width).toBeLessThanOrEqual(400);
    expect(box!.y).toBeLessThan(200);
    for (const name of ['transactions', 'deals', 'customers']) {
      const cell = await page.locator(`#stream-default-${name} .state`).boundingBox();
      expect(cell!.x + cell!.width, name).toBeLessThanOrEqual(400);
    }
    expect(await page.getByRole('columnheader', { name: 'Cursor' }).isVisible()).toBe(false);
  });

  it('escapes what it shows: a value holding markup is text, never markup', async () => {
    const hostile = '<script>document.title="owned"</script><b>bold</b>';
    const page = await renderConsole({
      connections: [
        snapshotOf({
          writes: { needs_review: 1, failed: 1 },
          writesNeedingReview: [{ id: 'wr_1', kind: 'email.send', outcome: hostile, error: `"'><img src=x onerror=alert(1)>`, createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z' }],
          failedWrites: [{ id: 'wr_2', kind: 'deal.close', error: `HTTP 422: ${hostile} (POST /deals/d/close)`, httpStatus: 422, finishedAt: '2026-01-01T00:00:00.000Z' }],
        }),
      ],
      now: new Date('2026-01-01T00:00:00Z'),
      refreshSeconds: 0,
      csrfToken: 'token',
      mayAct: false,
      writeKeyConfigured: false,
    });
    expect(page).not.toContain('<script>');
    expect(page).not.toContain('<b>bold');
    expect(page).not.toContain('<img');
    expect(page).toContain('&lt;script&gt;document.title=&quot;owned&quot;&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;');
  });
});
