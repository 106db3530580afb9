/**
 * The real `bizops-sync daemon` process against an in-test simulator over HTTP, with a temp SQLite
 * file and a free HTTP port: its HTTP endpoints, webhook delivery latency and signatures, graceful
 * SIGTERM mid-backfill with a resume, and SIGKILL mid-delivery with at-least-once redelivery. The
 * readiness under a spent rate budget and the write API are what the daemon serves, not what its
 * process does: those two run it in this process (`startDaemon`).
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { startDaemon, type RunningDaemon } from '../../jobs/daemon.ts';
import { readStatus } from '../../jobs/status.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { openMirror, type MirrorDatabase } from '../../src/mirror/database.ts';
import { sqliteConnection } from '../../src/mirror/sql/sqlite.ts';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { STREAM_NAMES } from '../../src/streams/definitions.ts';
import { expectMirrorEqualsGroundTruth, groundTruthTotal, listRequests, simulator, tempDir, testConfig, type TempDir, waitFor } from '../helpers.ts';
import {
  cliEnv,
  newWebhookSecret,
  parsePrometheusText,
  sampleValue,
  spawnDaemon,
  terminate,
  WebhookReceiver,
  type DaemonProcess,
} from './helpers.ts';

let sim: RunningSimulator | undefined;
let dir: TempDir | undefined;
const daemons: DaemonProcess[] = [];
const receivers: WebhookReceiver[] = [];
let inProcess: RunningDaemon | undefined;

afterEach(async () => {
  await inProcess?.stop();
  inProcess = undefined;
  for (const daemon of daemons.splice(0)) if (daemon.child.exitCode === null && daemon.child.signalCode === null) daemon.child.kill('SIGKILL');
  for (const receiver of receivers.splice(0)) await receiver.close();
  await sim?.close();
  dir?.remove();
  sim = dir = undefined;
});

/** The daemon's environment against `sim`: every second a sync, a temp mirror, any free port. */
function daemonEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return cliEnv({
    BIZOPS_BASE_URL: sim!.url,
    BIZOPS_TOKEN: String(sim!.tokens.admin),
    BIZOPS_DB: dir!.file('mirror.db'),
    BIZOPS_HTTP_PORT: '0',
    BIZOPS_SCHEDULE: '*/1 * * * * *',
    BIZOPS_READINESS_CACHE_SECONDS: '1',
    BIZOPS_RATE_LIMIT_PER_MIN: '100000',
    ...extra,
  });
}

function start(env: NodeJS.ProcessEnv): DaemonProcess {
  const daemon = spawnDaemon(env);
  daemons.push(daemon);
  return daemon;
}

/**
 * The daemon in this process, for a test about what it serves rather than about the process (those
 * above and below run the real one): the mirror file, any free port, Redis keys of its own.
 */
async function startInProcess(overrides: Record<string, unknown>): Promise<RunningDaemon> {
  const prefix = `bizops-test:daemon:${randomUUID()}:`;
  inProcess = await startDaemon(testConfig(sim!, dir!.file('mirror.db'), overrides), {
    logger: silentLogger,
    processMetrics: false,
    redisKeys: { budgetPrefix: `${prefix}rate`, queuePrefix: prefix, queueName: 'writes' },
  });
  return inProcess;
}

async function receiver(): Promise<WebhookReceiver> {
  const started = await new WebhookReceiver().start();
  receivers.push(started);
  return started;
}

async function readyz(url: string): Promise<{ status: number; body: { ready: boolean; reason: string; status: number | null } }> {
  const response = await fetch(`${url}/readyz`);
  return { status: response.status, body: (await response.json()) as { ready: boolean; reason: string; status: number | null } };
}

async function metrics(url: string) {
  const response = await fetch(`${url}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheusText(await response.text());
}

/** Every changelog event_id of the mirror, in seq order. */
function changelogIds(db: MirrorDatabase): string[] {
  return (db.prepare('SELECT event_id FROM changes ORDER BY seq').all() as { event_id: string }[]).map((row) => row.event_id);
}

// Real processes on a shared 2-core machine: the limit is a hang guard, never a speed check.
describe('bizops-sync daemon', { timeout: 120_000 }, () => {
  it('serves /healthz, valid Prometheus /metrics and /readyz; readiness turns 503 when the API goes away; SIGTERM exits 0', async () => {
    sim = await simulator({ size: { transactions: 150, deals: 40, onboardings: 10 } });
    dir = tempDir();
    const daemon = start(daemonEnv());
    const url = await daemon.url;

    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });

    // Every stream backfilled, then synced on the 1-second schedule.
    const { samples, types } = await waitFor(async () => {
      const parsed = await metrics(url);
      return STREAM_NAMES.every((stream) => (sampleValue(parsed.samples, 'bizops_stream_runs_total', { stream, reason: 'sync', status: 'succeeded' }) ?? 0) >= 1) ? parsed : undefined;
    }, 'a successful sync of every stream');
    for (const [name, type] of [
      ['bizops_stream_last_success_timestamp_seconds', 'gauge'],
      ['bizops_stream_records', 'gauge'],
      ['bizops_stream_changes_recorded_total', 'counter'],
      ['bizops_stream_run_errors_total', 'counter'],
      ['bizops_stream_run_duration_seconds', 'histogram'],
      ['bizops_api_requests_total', 'counter'],
      ['bizops_api_rate_limited_total', 'counter'],
      ['bizops_rate_budget_wait_seconds_total', 'counter'],
      ['bizops_changelog_last_seq', 'gauge'],
    ]) {
      expect(types.get(name!), name).toBe(type);
    }
    expect(sampleValue(samples, 'bizops_stream_records', { stream: 'transactions', state: 'live' })).toBe(150);
    expect(sampleValue(samples, 'bizops_stream_changes_recorded_total', { stream: 'deals' })).toBe(40);
    expect(sampleValue(samples, 'bizops_stream_run_errors_total', { stream: 'deals', reason: 'sync' })).toBe(0);
    expect(sampleValue(samples, 'bizops_stream_last_success_timestamp_seconds', { stream: 'onboardings' })).toBeGreaterThan(Date.now() / 1000 - 60);
    // Backfills (2 + 1 + 1 pages) and one sync of each stream at least.
    expect(sampleValue(samples, 'bizops_api_requests_total')).toBeGreaterThanOrEqual(7);
    expect(sampleValue(samples, 'bizops_rate_budget_granted_total', { priority: 'backfill' })).toBeGreaterThanOrEqual(4);

    // Readiness reads the answers the runs got, sending no probe of its own (test/daemon/readiness.test.ts
    // counts the requests; here a rested onboardings poll, a change probe, sends the same `limit=1`).
    const ready = await readyz(url);
    expect(ready).toMatchObject({ status: 200, body: { ready: true } });
    expect(ready.body.reason).toMatch(/the daemon's last request/);
    await sim.close();
    const down = await waitFor(async () => {
      const answer = await readyz(url);
      return answer.status === 503 ? answer : undefined;
    }, '/readyz to answer 503', 30_000, 200);
    expect(down.body.ready).toBe(false);
    expect(down.body.reason).toMatch(/unreachable/);

    const exit = await terminate(daemon);
    expect(exit.code).toBe(0);
  });

  it('/readyz stays 200 while the rate budget is spent and paused by the server (remaining 0), with the wait in the body', async () => {
    sim = await simulator({ size: { transactions: 400, deals: 5, onboardings: 3 }, rateLimit: { limit: 3, windowMs: 60_000 } });
    dir = tempDir();
    const { url } = await startInProcess({
      rateLimit: { perMinute: 3, windowMs: 60_000 },
      sync: { schedule: '*/1 * * * * *' },
      http: { port: 0, readinessCacheSeconds: 1 },
    });
    // The start-up backfill spends the window; the server's `remaining: 0` pauses the budget.
    const answer = await waitFor(async () => {
      const current = await readyz(url);
      return (current.body as { budget?: { waitMs: number } }).budget ? current : undefined;
    }, '/readyz to report the paused budget', 20_000, 200);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ ready: true, budget: { waitMs: expect.any(Number) } });
    await inProcess!.stop();
    inProcess = undefined;
  });

  it('/readyz answers 503 naming the refusal while the API refuses the token (403 without the scope, 401 unknown)', async () => {
    sim = await simulator({ size: { transactions: 10, deals: 5, onboardings: 3 } });
    dir = tempDir();
    const noScopes = start(daemonEnv({ BIZOPS_TOKEN: String(sim.tokens.noScopes), BIZOPS_DB: dir.file('a.db') }));
    const unknown = start(daemonEnv({ BIZOPS_TOKEN: 'not-a-token-the-api-knows', BIZOPS_DB: dir.file('b.db') }));
    const [forbidden, unauthorized] = await Promise.all([readyz(await noScopes.url), readyz(await unknown.url)]);
    expect(forbidden.status).toBe(503);
    expect(forbidden.body).toMatchObject({ ready: false, status: 403 });
    expect(forbidden.body.reason).toMatch(/refused the token \(HTTP 403\)/);
    expect(unauthorized.status).toBe(503);
    expect(unauthorized.body).toMatchObject({ ready: false, status: 401 });
    expect(unknown.stderr()).not.toContain('not-a-token-the-api-knows');
    expect((await terminate(noScopes)).code).toBe(0);
    expect((await terminate(unknown)).code).toBe(0);
  });

  it('a change made upstream reaches the webhook receiver with a valid Standard Webhooks signature (its latency is bench/latency.ts)', async () => {
    sim = await simulator({ size: { transactions: 50, deals: 30, onboardings: 5 } });
    dir = tempDir();
    const secret = newWebhookSecret();
    const hooks = await receiver();
    const daemon = start(daemonEnv({ BIZOPS_WEBHOOK_URL: hooks.url, BIZOPS_WEBHOOK_SECRET: secret }));
    const url = await daemon.url;
    // The backfill's 85 created events are delivered first (other events, such as a stream's
    // condition, may come between them).
    const createdEvents = () => hooks.received.filter((request) => (JSON.parse(request.body) as { type: string }).type.endsWith('.created')).length;
    await waitFor(() => createdEvents() >= 85, 'the backfill events', 60_000);

    const deal = sim.world.groundTruth('deals')[3] as { id: string };
    const changedAt = Date.now();
    sim.world.updateDeal(deal.id, { title: 'Renamed upstream' });
    const arrival = await waitFor(
      () =>
        hooks.received.find((request) => {
          const body = JSON.parse(request.body) as { type: string; data: { record_id: string } };
          return request.at >= changedAt && body.type === 'deal.updated' && body.data.record_id === deal.id;
        }),
      'the deal.updated webhook',
      20_000,
    );
    const payload = new Webhook(secret).verify(arrival.body, arrival.headers as Record<string, string>) as { type: string; data: { changes: Record<string, unknown> } };
    expect(payload.type).toBe('deal.updated');
    expect(payload.data.changes.title).toEqual({ old: expect.any(String), new: 'Renamed upstream' });
    // Every delivery verifies, and a forged body does not.
    for (const request of hooks.received) expect(() => new Webhook(secret).verify(request.body, request.headers as Record<string, string>)).not.toThrow();
    expect(() => new Webhook(secret).verify(arrival.body.replace('Renamed', 'Forged'), arrival.headers as Record<string, string>)).toThrow();

    const { samples } = await metrics(url);
    expect(sampleValue(samples, 'bizops_webhook_deliveries_total', { endpoint: 'env' })).toBeGreaterThanOrEqual(86);
    expect(sampleValue(samples, 'bizops_webhook_lag_events', { endpoint: 'env' })).toBe(0);
    expect((await terminate(daemon)).code).toBe(0);
  });

  it('SIGTERM during a backfill page: exit 0; a restart resumes from the checkpoint and nothing is lost', async () => {
    sim = await simulator({ size: { transactions: 1_000, deals: 20, onboardings: 5 } });
    // The page at offset 400 is held at the simulator until the SIGTERM is received: the signal lands
    // while a backfill page is in flight, however fast or slow the machine runs.
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    sim.faults.inject({ kind: 'hold', until: gate, match: { method: 'GET', path: '/transactions', query: { offset: '400' } } });
    dir = tempDir();
    const env = daemonEnv({ BIZOPS_SCHEDULE: '0 0 1 1 *' });
    const first = start(env);
    await waitFor(() => listRequests(sim!, '/transactions').some((request) => new URLSearchParams(request.query).get('offset') === '400'), 'the backfill to ask for the page at offset 400', 30_000);
    const stopping = terminate(first);
    await waitFor(() => first.logs.some((entry) => entry.msg === 'stop signal received'), 'the daemon to receive the SIGTERM', 30_000);
    open();
    const exit = await stopping;
    expect(exit.code).toBe(0);
    expect(first.logs.some((entry) => entry.msg === 'daemon stopped')).toBe(true);

    const interrupted = (await readStatus(dir.file('mirror.db'))).streams.find((stream) => stream.stream === 'transactions')!;
    expect(interrupted.cursor).toBeNull();
    expect(interrupted.inProgress).toMatchObject({ reason: 'backfill', mode: 'complete' });
    const checkpointOffset = interrupted.inProgress!.offset;
    expect(checkpointOffset).toBeGreaterThan(0);
    expect(interrupted.records).toBe(checkpointOffset);

    const before = listRequests(sim, '/transactions').length;
    const second = start(env);
    await waitFor(async () => (await readStatus(dir!.file('mirror.db'))).streams.every((stream) => stream.cursor !== null && stream.inProgress === null), 'the resumed backfill to finish', 60_000, 100);
    const resumedAt = new URLSearchParams(listRequests(sim, '/transactions')[before]!.query).get('offset');
    expect(Number(resumedAt)).toBe(checkpointOffset);
    expect(second.logs.some((entry) => entry.msg === 'resuming an unfinished run from its checkpoint' && entry.stream === 'transactions')).toBe(true);
    expect((await terminate(second)).code).toBe(0);

    const db = openMirror(dir.file('mirror.db'), { readonly: true });
    try {
      for (const stream of STREAM_NAMES) await expectMirrorEqualsGroundTruth({ connection: sqliteConnection(db) }, sim, stream);
      const duplicates = db.prepare("SELECT record_id FROM changes WHERE type = 'transaction.created' GROUP BY record_id HAVING COUNT(*) > 1").all();
      expect(duplicates).toEqual([]);
    } finally {
      db.close();
    }
  });

  it('SIGKILL while delivering webhooks, then a restart: every event is delivered at least once, with the same webhook-id', async () => {
    sim = await simulator({ size: { transactions: 60, deals: 30, onboardings: 10 } });
    dir = tempDir();
    const secret = newWebhookSecret();
    const hooks = await receiver();
    // The killed daemon's leases lapse after 2 s, then the restarted one takes its streams and webhooks.
    const env = daemonEnv({ BIZOPS_WEBHOOK_URL: hooks.url, BIZOPS_WEBHOOK_SECRET: secret, BIZOPS_SCHEDULE: '0 0 1 1 *', BIZOPS_LEASE_SECONDS: '2' });
    const first = start(env);
    // Its URL is not needed; killed before its stderr is read, that promise rejects: not an error here.
    first.url.catch(() => undefined);
    // The 41st delivery never gets an answer: the daemon is killed while it waits for it.
    let hungId: string | undefined;
    hooks.handler = (request) => {
      if (hooks.received.length !== 41) return false;
      hungId = String(request.headers['webhook-id']);
      first.child.kill('SIGKILL');
      return true;
    };
    const killed = await first.exited;
    expect(killed.signal).toBe('SIGKILL');
    expect(hungId).toBeDefined();
    hooks.handler = () => false;

    const second = start(env);
    const db = openMirror(dir.file('mirror.db'), { readonly: true });
    try {
      // The kill may land before every stream's backfill committed: the restart finishes them.
      const records = groundTruthTotal(sim!);
      await waitFor(() => changelogIds(db).length === records, 'every stream backfilled', 60_000);
      const all = changelogIds(db);
      expect(all).toHaveLength(records);
      await waitFor(() => {
        const got = new Set(hooks.ids());
        return all.every((id) => got.has(id));
      }, 'every event to be delivered', 60_000);
      const ids = hooks.ids();
      // Nothing but changelog events, each carrying its event_id as webhook-id.
      expect(ids.every((id) => all.includes(id))).toBe(true);
      // The event in flight at the kill was delivered again, same id, same body.
      const hung = hooks.received.filter((request) => request.headers['webhook-id'] === hungId);
      expect(hung.length).toBeGreaterThanOrEqual(2);
      expect(new Set(hung.map((request) => request.body)).size).toBe(1);
      for (const request of hooks.received) expect(() => new Webhook(secret).verify(request.body, request.headers as Record<string, string>)).not.toThrow();
      // By record: the first deliveries of each record's events follow the changelog's seq order.
      const firstSeen = [...new Set(ids)];
      const recordOf = new Map(hooks.received.map((request) => [String(request.headers['webhook-id']), (JSON.parse(request.body) as { data: { stream: string; record_id: string } }).data]));
      for (const record of new Set([...recordOf.values()].map((data) => `${data.stream}/${data.record_id}`))) {
        const ofRecord = (list: readonly string[]) => list.filter((id) => `${recordOf.get(id)!.stream}/${recordOf.get(id)!.record_id}` === record);
        expect(ofRecord(firstSeen)).toEqual(ofRecord(all));
      }
    } finally {
      db.close();
    }
    expect((await terminate(second)).code).toBe(0);
  });

  it('POST /writes on the daemon: the write is queued, sent once through the shared budget, recorded as write.succeeded and written through into the mirror', async () => {
    sim = await simulator({ size: { transactions: 20, deals: 15, onboardings: 3 } });
    dir = tempDir();
    const key = 'write-key-0123456789abcdef';
    const { url } = await startInProcess({ sync: { schedule: '*/30 * * * * *' }, http: { port: 0, readinessCacheSeconds: 1, writeApiKey: key } });
    // The start-up backfill first: a deals page it read before the close, committed after the
    // write-through, would put the deal back to OPEN in the mirror.
    await waitFor(async () => (await readStatus(dir!.file('mirror.db'))).streams.every((stream) => stream.cursor !== null && stream.inProgress === null), 'the start-up backfill to finish', 60_000, 100);
    const open = (sim.world.groundTruth('deals') as { id: string; status: string }[]).find((deal) => deal.status === 'OPEN')!;
    const post = (body: unknown, auth = `Bearer ${key}`) =>
      fetch(`${url}/writes`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect((await post({ kind: 'deal.close', payload: { dealId: open.id, status: 'WON' } }, 'Bearer wrong-key-0123456789')).status).toBe(401);
    const invalid = await post({ kind: 'transaction.create', payload: { type: 'INCOME', amount: 0, description: 'x', date: '2026-11-21' } });
    expect(invalid.status).toBe(400);
    expect(JSON.stringify(await invalid.json())).toContain('amount');
    const accepted = await post({ kind: 'deal.close', payload: { dealId: open.id, status: 'WON', reason: 'signed' }, idempotencyKey: 'close-1' });
    expect(accepted.status).toBe(202);
    const { write } = (await accepted.json()) as { write: { id: string } };
    const done = await waitFor(async () => {
      const response = await fetch(`${url}/writes/${write.id}`, { headers: { authorization: `Bearer ${key}` } });
      const body = (await response.json()) as { write: { status: string } };
      return body.write.status === 'succeeded' ? body.write : undefined;
    }, 'the write to succeed');
    expect(done.status).toBe('succeeded');
    expect((sim.world.groundTruth('deals') as { id: string; status: string }[]).find((deal) => deal.id === open.id)!.status).toBe('WON');
    expect(sim.requests.filter((r) => r.method === 'POST' && r.path === `/api/public/v1/deals/${open.id}/close`)).toHaveLength(1);
    const db = openMirror(dir.file('mirror.db'), { readonly: true });
    try {
      expect(db.prepare("SELECT record_id FROM changes WHERE type = 'write.succeeded'").all()).toEqual([{ record_id: write.id }]);
      expect(db.prepare('SELECT status, won_lost_reason FROM deals WHERE id = ?').get(open.id)).toEqual({ status: 'WON', won_lost_reason: 'signed' });
    } finally {
      db.close();
    }
    await inProcess!.stop();
    inProcess = undefined;
  });
});
