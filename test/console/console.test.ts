/**
 * The operator console (docs/operations.md "Operator console") as a person sees it: the real
 * `bizops-sync daemon` process against an in-test simulator, a real webhook receiver, real Redis
 * for the write queue, and Debian's Chromium driven by playwright-core. Nothing waits on time: each
 * step waits for a state (the daemon's own answers, or the page's text after a reload).
 *
 * The screenshot in the README (docs/console.png) is taken here: `UPDATE_CONSOLE_SCREENSHOT=1 npx
 * vitest run test/console/console.test.ts` writes it; otherwise it goes to a temp dir.
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import type { RunningSimulator } from '@bizops-sync/simulator';
import type { StreamStatus } from '../../src/status/index.ts';
import { renderConsole } from '../../src/console/console-page.ts';
import { simulator, tempDir, waitFor, type TempDir } from '../helpers.ts';
import { cliEnv, newWebhookSecret, spawnDaemon, terminate, WebhookReceiver, type DaemonProcess } from '../daemon/helpers.ts';

/** Debian's Chromium (`.ci/run` installs it when missing). */
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const READ_KEY = 'read-key-console-0123456789';
const WRITE_KEY = 'write-key-console-0123456789';
const SCREENSHOT = new URL('../../docs/console.png', import.meta.url).pathname;

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
  browser = await chromium.launchPersistentContext(dir!.file('chromium-profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1440, height: 1000 },
  });
  return browser.pages()[0] ?? (await browser.newPage());
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

/** The text of the table row whose header cell is `name`, in the table captioned `caption`. */
async function rowText(page: Page, caption: string | RegExp, name: string): Promise<string> {
  const table = page.getByRole('table', { name: caption });
  return (await table.getByRole('row').filter({ has: page.getByRole('rowheader', { name, exact: true }) }).innerText()).replace(/\s+/g, ' ');
}

describe('the operator console', { timeout: 120_000 }, () => {
  it('is off without a read key: / is the daemon\'s 404, like the other read routes', async () => {
    sim = await simulator({ size: { transactions: 5, deals: 2, onboardings: 1 } });
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
    sim = await simulator({ size: { transactions: 30, deals: 6, onboardings: 3 } });
    dir = tempDir();
    // One record of the backfill fails its schema: it is quarantined, the rest of its page commits.
    sim.faults.inject({ kind: 'invalid-item', index: 3, times: 1, match: { path: '/transactions' } });
    const hooks = new WebhookReceiver();
    await hooks.start();
    receivers.push(hooks);
    let hooksDown = true;
    hooks.handler = (_request, response) => {
      if (!hooksDown) return false;
      response.writeHead(500, { 'content-type': 'text/plain' }).end('receiver down for maintenance');
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
    expect(transactions).toMatch(/ 1 $/); // one record quarantined, no last error
    expect(await rowText(page, /^Recent runs \(this daemon, latest \d+\)$/, 'transactions')).toMatch(/ backfill \(complete\) succeeded 1 29 30 /);
    expect(await rowText(page, 'Streams', 'deals')).toMatch(/^deals ok 6 0 \d{4}-/);
    expect(await rowText(page, 'Streams', 'onboardings')).toMatch(/^onboardings ok 3 0 \d{4}-/);
    expect(await page.getByText('transactions: 1 record quarantined in rejected_records').count()).toBe(1);

    // The failing endpoint: its state, its last attempt's answer, the attempt itself.
    const endpoint = await rowText(page, 'Webhook endpoints', 'env');
    expect(endpoint).toMatch(/failing since \d{4}-/);
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

    const screenshot = process.env.UPDATE_CONSOLE_SCREENSHOT === '1' ? SCREENSHOT : dir.file('console.png');
    await page.screenshot({ path: screenshot, fullPage: true });
    expect(readFileSync(screenshot).subarray(1, 4).toString()).toBe('PNG');

    // A state-changing form without the session's CSRF token is refused, the cookie notwithstanding.
    const forged = await page.request.post(`${url}/console/webhooks/enable`, { form: { connection: 'default', endpoint: 'env' } });
    expect(forged.status()).toBe(403);
    expect(await forged.text()).toMatch(/no valid CSRF token/);

    // The receiver is back. Taken for down, the endpoint is paused: "Retry now" ends the pause at once.
    expect(await rowText(page, 'Webhook endpoints', 'env')).toMatch(/paused until \d{4}-/);
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

  it('a stream is failing or stale as its operational condition says; one failed run reads "last run failed"', async () => {
    const stream = (name: StreamStatus['stream'], part: Partial<StreamStatus>): StreamStatus => ({
      stream: name,
      supported: true,
      records: 10,
      tombstoned: 0,
      cursor: '2026-01-01T00:00:00.000Z',
      lagSeconds: 60,
      completeScans: 1,
      lastRun: { mode: 'incremental', startedAt: '2026-01-01T00:00:00.000Z', finishedAt: '2026-01-01T00:00:01.000Z', succeededAt: '2025-12-31T22:00:00.000Z', requests: 1, records: 0, changes: 0, state: 'finished' },
      lastError: null,
      condition: { condition: 'ok', failedRuns: 0, since: null },
      lastScan: null,
      skipped: null,
      recordClockLagSeconds: 0,
      deletionHold: null,
      rejected: 0,
      undeclaredFields: [],
      inProgress: null,
      partitions: null,
      ...part,
    });
    const html = await renderConsole({
      connections: [
        {
          name: 'default',
          report: {
            changelogSeq: 1,
            oldestSeq: 1,
            consumers: [],
            streams: [
              stream('transactions', { lastError: 'HTTP 500 from GET /transactions', condition: { condition: 'failing', failedRuns: 3, since: '2026-01-01T00:10:00.000Z' } }),
              stream('deals', { condition: { condition: 'stale', failedRuns: 0, since: '2026-01-01T00:20:00.000Z' } }),
              stream('onboardings', { lastError: 'HTTP 502 from GET /onboardings', condition: { condition: 'ok', failedRuns: 1, since: null } }),
              stream('customers', {}),
            ],
            unsupported: [],
            writes: {},
            writesNeedingReview: [],
            leases: [],
          },
          error: null,
          webhooks: [],
          streams: ['transactions', 'deals', 'onboardings', 'customers'],
          recentRuns: {},
          activeRuns: [],
          heldLeases: [],
        },
      ],
      now: new Date('2026-01-01T01:00:00Z'),
      refreshSeconds: 0,
      csrfToken: 'token',
      mayAct: false,
      writeKeyConfigured: false,
    });
    dir = tempDir();
    const page = await openBrowser();
    await page.setContent(html);
    expect(await rowText(page, 'Streams', 'transactions')).toMatch(/^transactions failing since 2026-01-01 00:10:00 UTC: 3 failed runs in a row 10 0 /);
    expect(await rowText(page, 'Streams', 'deals')).toMatch(/^deals stale: no success since 2025-12-31 22:00:00 UTC 10 0 /);
    expect(await rowText(page, 'Streams', 'onboardings')).toMatch(/^onboardings last run failed 10 0 .* HTTP 502 from GET \/onboardings$/);
    expect(await rowText(page, 'Streams', 'customers')).toMatch(/^customers ok 10 0 /);
    // The tones a person sees: the conditions in the bad colour, one failed run a warning.
    const tone = async (name: string) => page.getByRole('table', { name: 'Streams' }).getByRole('row').filter({ has: page.getByRole('rowheader', { name, exact: true }) }).locator('.state').getAttribute('class');
    expect(await tone('transactions')).toBe('state bad');
    expect(await tone('deals')).toBe('state bad');
    expect(await tone('onboardings')).toBe('state warn');
  });

  it('escapes what it shows: a value holding markup is text, never markup', async () => {
    const hostile = '<script>document.title="owned"</script><b>bold</b>';
    const page = await renderConsole({
      connections: [
        {
          name: 'default',
          report: {
            changelogSeq: 1,
            oldestSeq: 1,
            consumers: [],
            streams: [],
            unsupported: [],
            writes: { needs_review: 1 },
            writesNeedingReview: [{ id: 'wr_1', kind: 'email.send', outcome: hostile, error: `"'><img src=x onerror=alert(1)>`, createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z' }],
            leases: [],
          },
          error: null,
          webhooks: [],
          streams: [],
          recentRuns: {},
          activeRuns: [],
          heldLeases: [],
        },
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
