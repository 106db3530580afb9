/**
 * A new reader starts from a snapshot (docs/mirror.md "Starting from a snapshot"): the current rows
 * of its streams, one `<stream>.snapshot` event per live record at the boundary, then every change
 * after it. Checked under churn between the snapshot's pages (deals updated, created and deleted
 * by real syncs of the simulator; for the sink, while a page waits for the broker's answers): the
 * snapshot events hold each record as it stood at the boundary (never a later state, which its
 * change would then repeat), the changes after the boundary follow, and applying both gives exactly
 * the mirror's live records (no gap). Through the
 * pull API (a named consumer over HTTP) and through a sink (the delivery core, Redis Streams).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { configSchema } from '../../src/config/schema.ts';
import { changeRoutes } from '../../src/daemon/change-routes.ts';
import { startDaemonHttpServer, type RunningHttpServer } from '../../src/daemon/http-server.ts';
import { RouteTable } from '../../src/http/route-table.ts';
import { lastChangeSeq } from '../../src/mirror/changelog-format.ts';
import { DeliveryDispatcher } from '../../src/notify/delivery/delivery-dispatcher.ts';
import { latestAttempts, listAttemptsOfEvent } from '../../src/notify/delivery/attempts.ts';
import { loadEndpoint } from '../../src/notify/delivery/endpoint-store.ts';
import { ChangeSignal } from '../../src/notify/pull/change-signal.ts';
import { pruneChangelog } from '../../src/notify/retention.ts';
import { sinkTargets } from '../../src/notify/sinks/index.ts';
import { eventProblems } from '../event-validation.ts';
import { syncFixtures, waitFor, type SyncFixture } from '../helpers.ts';
import { REDIS_URL, startProxy, uniqueName, type BrokerProxy } from './brokers.ts';

const KEY = 'read-key-for-snapshot-tests';
const fixtures = syncFixtures();
let fixture: SyncFixture;
let server: RunningHttpServer;
const cleanups: (() => Promise<unknown>)[] = [];

beforeEach(async () => {
  // Small lists: the snapshot still takes several pages (of 7) of every stream, churn between them.
  fixture = await fixtures.start({ size: { transactions: 8, deals: 30, onboardings: 3, customers: 5, qa_corrective_actions: 4 } });
  for (const stream of fixture.context.config.sync.streams) await fixture.context.engine.run(stream, 'backfill');
  server = await startDaemonHttpServer({
    host: '127.0.0.1',
    port: 0,
    readiness: async () => ({ ready: true, status: 200, reason: 'test', checkedAt: null }),
    metrics: async () => ({ contentType: 'text/plain', body: '' }),
    routes: new RouteTable({ readKey: KEY }).mount(changeRoutes({ executor: fixture.context.connection, signal: new ChangeSignal(), pollMs: 50 })),
  });
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  await server.close();
});

/** A JSON answer, read loosely (each test asserts the members it uses). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- test answers are checked member by member
type Answer = Record<string, any>;

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: Answer }> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Answer };
}

/** One event as a reader got it. */
interface Got {
  id: string;
  type: string;
  data: { seq: number; stream: string; record_id: string; record: Record<string, unknown> };
}

/** The live deals of the mirror now, by id (their stored record). */
async function liveDeals(): Promise<Map<string, string>> {
  const rows = await fixture.context.connection.all<{ id: string; raw: string }>('SELECT id, raw FROM deals WHERE deleted_at IS NULL');
  return new Map(rows.map((row) => [row.id, row.raw]));
}

/** Deals changed, created and deleted by the simulator, then synced: churn while a snapshot is read. */
async function churn(round: number): Promise<void> {
  const world = fixture.sim.world;
  const open = world.deals.filter((deal) => deal.status === 'OPEN');
  world.updateDeal(open[round]!.id, { title: `changed in round ${round}` });
  world.updateDeal(open[round + 5]!.id, { title: `changed again in round ${round}` });
  world.deleteRecord('deals', open[round + 10]!.id);
  world.createDeal({ title: `created in round ${round}` });
  expect((await fixture.context.engine.run('deals', 'sync')).status).toBe('succeeded');
  // Two complete scans tombstone the deleted deal (the two-scan rule).
  for (let scan = 0; scan < 2; scan += 1) expect((await fixture.context.engine.run('deals', 'reconcile')).status).toBe('succeeded');
}

/**
 * What a reader must hold: every snapshot event's record as it stood at the boundary, the changes
 * after it, and, applied in order, exactly the mirror's live deals now.
 */
function expectNoGapNoDuplicate(got: readonly Got[], atBoundary: Map<string, string>, boundary: number, now: Map<string, string>): void {
  const snapshot = got.filter((event) => event.type === 'deals.snapshot');
  const changes = got.filter((event) => !event.type.endsWith('.snapshot') && event.data.stream === 'deals');
  expect(snapshot.length).toBeGreaterThan(0);
  for (const event of snapshot) {
    expect(event.data.seq).toBe(boundary);
    expect(JSON.stringify(event.data.record)).toBe(atBoundary.get(event.data.record_id)); // never a state after the boundary
    expect(eventProblems(event)).toEqual([]);
  }
  expect(new Set(snapshot.map((event) => event.data.record_id)).size).toBe(snapshot.length);
  // Every snapshot event before every change; changes only after the boundary, in order.
  expect(got.findIndex((event) => !event.type.endsWith('.snapshot'))).toBeGreaterThanOrEqual(got.filter((event) => event.type.endsWith('.snapshot')).length);
  expect(changes.every((event) => event.data.seq > boundary)).toBe(true);
  const state = new Map<string, string>();
  for (const event of [...snapshot, ...changes]) {
    if (event.type === 'deal.deleted') state.delete(event.data.record_id);
    else state.set(event.data.record_id, JSON.stringify(event.data.record));
  }
  expect(new Map([...state].sort())).toEqual(new Map([...now].sort()));
}

describe('starting from a snapshot', () => {
  it('a named consumer reads the current rows page by page under churn, then the changes after the boundary: no gap, no duplicate', async () => {
    const registered = await call('PUT', '/consumers/erp?initial=snapshot');
    expect(registered.status).toBe(201);
    const boundary = registered.body.consumer.cursor as number;
    expect(boundary).toBe(await lastChangeSeq(fixture.context.connection));
    const atBoundary = await liveDeals();

    const got: Got[] = [];
    for (let round = 0; ; round += 1) {
      const page = await call('GET', '/consumers/erp/changes?limit=7');
      expect(page.status).toBe(200);
      if (!page.body.snapshot) {
        got.push(...(page.body.events as Got[]));
        if ((page.body.events as Got[]).length === 0) break;
        expect((await call('POST', '/consumers/erp/ack', { seq: page.body.next })).status).toBe(200);
        continue;
      }
      got.push(...(page.body.events as Got[]));
      // A seq is refused while the snapshot is read; its position moves it.
      if (round === 0) expect((await call('POST', '/consumers/erp/ack', { seq: boundary })).status).toBe(400);
      expect((await call('POST', '/consumers/erp/ack', { snapshot: page.body.snapshot.position })).status).toBe(200);
      if (round < 4) await churn(round);
    }
    expectNoGapNoDuplicate(got, atBoundary, boundary, await liveDeals());
    // Every stream's rows came (transactions and onboardings too), each once.
    expect(new Set(got.filter((event) => event.type.endsWith('.snapshot')).map((event) => event.data.stream))).toEqual(new Set(['transactions', 'deals', 'onboardings', 'customers', 'qa_corrective_actions'].filter((stream) => fixture.context.config.sync.streams.includes(stream as never))));
  });

  it('a consumer whose cursor the retention pruned is told to reset from a snapshot, and the reset starts one', async () => {
    expect((await call('PUT', '/consumers/late', { after: 0 })).status).toBe(201);
    const pruned = await pruneChangelog(fixture.context.connection, { before: new Date(Date.now() + 60_000), endpoints: [] });
    expect(pruned.prunedThrough).toBe(0); // held by the consumer's cursor
    await call('DELETE', '/consumers/late');
    await pruneChangelog(fixture.context.connection, { before: new Date(Date.now() + 60_000), endpoints: [] });
    expect((await call('PUT', '/consumers/late', { after: 0 })).status).toBe(410);
    expect((await call('PUT', '/consumers/late')).status).toBe(201);
    await fixture.context.connection.run('UPDATE consumers SET cursor = 0 WHERE name = ?', ['late']);
    const gone = await call('GET', '/consumers/late/changes');
    expect(gone.status).toBe(410);
    expect(gone.body.error).toMatch(/POST \/consumers\/NAME\/reset\?initial=snapshot/);
    const reset = await call('POST', '/consumers/late/reset?initial=snapshot');
    expect(reset.status).toBe(200);
    const first = await call('GET', '/consumers/late/changes?limit=5');
    expect(first.body.snapshot).toMatchObject({ boundary: reset.body.consumer.cursor, last: false });
    expect(first.body.events).toHaveLength(5);
  });

  it('a sink with initial "snapshot" publishes the current rows, then the changes after the boundary, with churn while its pages are in flight', async () => {
    const prefix = `bizops-test:${uniqueName('snap')}:`;
    cleanups.push(async () => {
      const redis = new Redis(REDIS_URL);
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    });
    // The sink reaches Redis through a proxy that holds Redis's answers back: a page stays unacknowledged while the churn runs.
    const proxy: BrokerProxy = await startProxy(Number(new URL(REDIS_URL).port || 6379));
    cleanups.push(() => proxy.close());
    const viaProxy = new URL(REDIS_URL);
    viaProxy.port = String(proxy.port);
    proxy.holdAnswers(true);
    const sink = configSchema.parse({ baseUrl: 'http://127.0.0.1:9', tokens: { default: 'tok_default_0000' }, sinks: [{ name: 'feed', kind: 'redis-stream', url: viaProxy.toString(), key: `${prefix}all`, events: ['deal.*'], initial: 'snapshot', maxInFlight: 4, ackTimeoutSeconds: 120 }] }).sinks;
    const atBoundary = await liveDeals();
    const dispatcher = new DeliveryDispatcher({ connection: fixture.context.connection, targets: await sinkTargets(sink), pollMs: 20, scheduleMs: [0, 20, 40] });
    cleanups.push(() => dispatcher.stop());
    await dispatcher.start();
    const boundary = (await loadEndpoint(fixture.context.connection, 'feed'))!.deliveredSeq;
    // Each round: the sink waits for Redis's answers to what it sent, the snapshot unfinished; deals change, are created and deleted; then the answers pass.
    for (let round = 0; round < 3; round += 1) {
      await waitFor(() => proxy.heldChunks > 0, 'a page sent, its answers held back');
      expect((await loadEndpoint(fixture.context.connection, 'feed'))!.snapshot).not.toBeNull();
      await churn(round);
      proxy.releaseHeld();
    }
    proxy.holdAnswers(false);
    dispatcher.notify();
    const last = await lastChangeSeq(fixture.context.connection);
    await waitFor(async () => {
      const state = await loadEndpoint(fixture.context.connection, 'feed');
      return state?.snapshot === null && state.deliveredSeq === last;
    }, 'the snapshot, then every change');
    const redis = new Redis(REDIS_URL);
    cleanups.push(async () => redis.disconnect());
    const got: Got[] = (await redis.xrange(`${prefix}all`, '-', '+')).map(([, fields]) => ({ id: fields[1]!, ...(JSON.parse(fields[9]!) as Omit<Got, 'id'>) }));
    // The filter `deal.*` snapshots deals only.
    expect(new Set(got.filter((event) => event.type.endsWith('.snapshot')).map((event) => event.type))).toEqual(new Set(['deals.snapshot']));
    expectNoGapNoDuplicate(got, atBoundary, boundary, await liveDeals());
  });

  it('a sink\'s snapshot attempts carry no seq, so pages acknowledged whole stay a row per attempt, each found by its event id (never in the changelog)', async () => {
    const prefix = `bizops-test:${uniqueName('snapatt')}:`;
    cleanups.push(async () => {
      const redis = new Redis(REDIS_URL);
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    });
    const sink = configSchema.parse({ baseUrl: 'http://127.0.0.1:9', tokens: { default: 'tok_default_0000' }, sinks: [{ name: 'feed', kind: 'redis-stream', url: REDIS_URL, key: `${prefix}all`, events: ['deal.*'], initial: 'snapshot', maxInFlight: 16 }] }).sinks;
    const deals = (await liveDeals()).size;
    const dispatcher = new DeliveryDispatcher({ connection: fixture.context.connection, targets: await sinkTargets(sink), pollMs: 20, scheduleMs: [0, 20, 40] });
    cleanups.push(() => dispatcher.stop());
    await dispatcher.start();
    const connection = fixture.context.connection;
    await waitFor(async () => (await loadEndpoint(connection, 'feed'))?.snapshot === null && (await latestAttempts(connection, 'feed', 1000)).length === deals, 'the snapshot acknowledged, its attempts written');
    // Pages of up to 16 snapshot events, each acknowledged whole, but without a seq: no batch row
    // (a batch is found from its seqs), a row each in webhook_attempts.
    const batches = Number((await connection.get<{ n: number | string }>("SELECT COUNT(*) AS n FROM webhook_attempt_batches WHERE endpoint = 'feed'"))!.n);
    const rows = Number((await connection.get<{ n: number | string }>("SELECT COUNT(*) AS n FROM webhook_attempts WHERE endpoint = 'feed'"))!.n);
    expect([batches, rows]).toEqual([0, deals]);
    const redis = new Redis(REDIS_URL);
    cleanups.push(async () => redis.disconnect());
    const entries = await redis.xrange(`${prefix}all`, '-', '+');
    expect(entries.length).toBe(deals);
    for (const [entryId, fields] of entries) {
      const eventId = fields[fields.indexOf('id') + 1]!;
      const attempts = await listAttemptsOfEvent(connection, eventId);
      expect(attempts.map((attempt) => [attempt.endpoint, attempt.type, attempt.seq, attempt.attempt, attempt.outcome, attempt.response])).toEqual([['feed', 'deals.snapshot', null, 1, 'delivered', `${prefix}all ${entryId}`]]);
    }
  });
});
