/**
 * A consumer behind a firewall pulls the changelog from the real `bizops-sync daemon` over HTTP with
 * the read key (docs/mirror.md "Reading over HTTP"): the backfill's changes page by page, a named
 * consumer's long-poll woken by the next sync's change, its lag in /metrics and in `status`; without
 * the key configured the routes are off. Conditions only, no time asserted.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { readStatus } from '../../jobs/status.ts';
import { eventSchemas } from '../../src/notify/event-schemas.ts';
import { startDaemon, type RunningDaemon } from '../../jobs/daemon.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { groundTruthTotal, simulator, statusOutput, tempDir, testConfig, type TempDir, waitFor } from '../helpers.ts';
import { cliEnv, parsePrometheusText, sampleValue, spawnDaemon, type DaemonProcess } from './helpers.ts';

const KEY = 'read-key-0123456789abcdef';
let sim: RunningSimulator | undefined;
let dir: TempDir | undefined;
const daemons: DaemonProcess[] = [];
let inProcess: RunningDaemon | undefined;

afterEach(async () => {
  await inProcess?.stop();
  inProcess = undefined;
  for (const daemon of daemons.splice(0)) if (daemon.child.exitCode === null && daemon.child.signalCode === null) daemon.child.kill('SIGKILL');
  await sim?.close();
  dir?.remove();
  sim = dir = undefined;
});

function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return cliEnv({
    BIZOPS_BASE_URL: sim!.url,
    BIZOPS_TOKEN: String(sim!.tokens.admin),
    BIZOPS_DB: dir!.file('mirror.db'),
    BIZOPS_HTTP_PORT: '0',
    BIZOPS_SCHEDULE: '*/1 * * * * *',
    BIZOPS_RATE_LIMIT_PER_MIN: '100000',
    ...extra,
  });
}

type Page = { events: { id: string; type: string; data: { seq: number; record_id: string } }[]; next: number; latestSeq: number };

describe('the changelog over HTTP on the daemon', { timeout: 120_000 }, () => {
  it('pages the backfill, wakes a named consumer on the next change, shows its lag in /metrics and status', async () => {
    sim = await simulator({ size: { transactions: 30, deals: 12, onboardings: 4 } });
    dir = tempDir();
    const daemon = spawnDaemon(env({ BIZOPS_READ_API_KEY: KEY }));
    daemons.push(daemon);
    const url = await daemon.url;
    const get = async (path: string, init: RequestInit = {}) => {
      const response = await fetch(`${url}${path}`, { ...init, headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', ...(init.headers ?? {}) } });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    // One created change per record of every stream.
    const total = groundTruthTotal(sim);
    await waitFor(async () => ((await get('/changes?after=0&limit=1000')).body as unknown as Page).events.length === total, 'the backfill readable over HTTP', 60_000);

    // Page by page: every event once, in seq order.
    const seen: number[] = [];
    let after = 0;
    for (;;) {
      const page = (await get(`/changes?after=${after}&limit=10`)).body as unknown as Page;
      if (page.events.length === 0) break;
      seen.push(...page.events.map((event) => event.data.seq));
      after = page.next;
    }
    expect(seen).toEqual(Array.from({ length: total }, (_, index) => index + 1));

    // A named consumer starting at the end waits; the next sync's change wakes it.
    expect((await get('/consumers/erp', { method: 'PUT' })).status).toBe(201);
    const waiting = get('/consumers/erp/changes?wait=60');
    const deal = sim.world.groundTruth('deals')[0] as { id: string };
    sim.world.updateDeal(deal.id, { title: 'Renamed for the consumer' });
    const woken = (await waiting).body as unknown as Page;
    expect(woken.events.map((event) => [event.type, event.data.record_id])).toEqual([['deal.updated', deal.id]]);

    // Not acknowledged: its lag shows in /metrics and in status.
    const metrics = parsePrometheusText(await (await fetch(`${url}/metrics`)).text());
    expect(sampleValue(metrics.samples, 'bizops_consumer_lag_events', { consumer: 'erp' })).toBe(1);
    expect(sampleValue(metrics.samples, 'bizops_consumer_lag_seconds', { consumer: 'erp' })).toBeGreaterThanOrEqual(0);
    const status = await readStatus(dir.file('mirror.db'));
    expect(status.consumers).toMatchObject([{ name: 'erp', cursor: total, lagEvents: 1 }]);
    // What `bizops-sync status` prints (its job and text, in this process).
    expect(await statusOutput(dir.file('mirror.db'))).toMatch(new RegExp(`consumers: erp at seq ${total} \\(1 events / \\d+ s behind, last read `));
    expect((await get('/consumers/erp/ack', { method: 'POST', body: JSON.stringify({ seq: woken.next }) })).body).toMatchObject({ consumer: { cursor: total + 1 } });

    // The event schemas on the same port and key: every type, one type, an unknown type named.
    const listing = (await get('/schemas')).body as { schemas: Record<string, { $id: string; properties: { type: { const: string } } }> };
    expect(Object.keys(listing.schemas)).toEqual(Object.keys(eventSchemas()));
    expect(listing.schemas['deal.updated']).toMatchObject({ $id: 'urn:bizops-sync:event:deal.updated', properties: { type: { const: 'deal.updated' } } });
    const one = await fetch(`${url}/schemas/deal.updated`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(one.headers.get('content-type')).toMatch(/^application\/schema\+json/);
    expect(await one.json()).toEqual(listing.schemas['deal.updated']);
    expect(await get('/schemas/deal.exploded')).toMatchObject({ status: 404, body: { parameter: 'type', error: expect.stringMatching(/^type: no event type "deal.exploded"; GET \/schemas lists them \(transaction.created, /) } });
    expect((await fetch(`${url}/schemas`)).status).toBe(401);
  });

  it('without http.readApiKey the read routes are off (404)', async () => {
    sim = await simulator({ size: { transactions: 2, deals: 1, onboardings: 1 } });
    dir = tempDir();
    // The daemon's routes, in this process (the real process serves them in the test above).
    const prefix = `bizops-test:pull-api:${randomUUID()}:`;
    inProcess = await startDaemon(testConfig(sim, dir.file('mirror.db'), { http: { port: 0 } }), {
      logger: silentLogger,
      processMetrics: false,
      redisKeys: { budgetPrefix: `${prefix}rate`, queuePrefix: prefix, queueName: 'writes' },
    });
    const url = inProcess.url;
    expect((await fetch(`${url}/changes?after=0`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(404);
    expect((await fetch(`${url}/schemas`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(404);
  });
});
