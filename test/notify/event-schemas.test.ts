/**
 * Every event validates against its type's JSON Schema (docs/events.md, src/notify/event-schemas.ts).
 * The simulator is driven through a backfill, churn, syncs and complete scans, deletions (one by one,
 * and a mass deletion held back), an undeclared field, an invalid item, writes (succeeded, refused,
 * applied twice) and an endpoint answering 410, so that every event type of the changelog occurs;
 * then every change row is read through the pull API's page (the webhook body plus its id), every
 * body a real receiver got is taken as sent, and each is validated with ajv (test/event-validation.ts). The test also shows a
 * drifted payload failing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { eventSchemas } from '../../src/notify/event-schemas.ts';
import { readChangesPage, type PulledEvent } from '../../src/notify/pull/changes-page.ts';
import { WebhookDispatcher } from '../../src/notify/webhooks/dispatcher.ts';
import { sinkTargets } from '../../src/notify/sinks/index.ts';
import { configSchema } from '../../src/config/schema.ts';
import { freePort } from '../free-port.ts';
import { loadEndpoint } from '../../src/notify/delivery/endpoint-store.ts';
import { buildTestWebhookMessage } from '../../src/notify/webhooks/signing.ts';
import { lastChangeSeq } from '../../src/mirror/changelog-format.ts';
import { STREAM_LIST, STREAM_NAMES, type RegisteredStream, type StreamName } from '../../src/streams/definitions.ts';
import { syncFixtures, waitFor, type SyncFixture } from '../helpers.ts';
import { newSecret, receiverFixture } from './helpers.ts';
import { eventProblems } from '../event-validation.ts';
import { Redis } from 'ioredis';
import { deleteKeys, REDIS_URL, requireRedis, writeStack, type WriteStack } from '../writes/support.ts';

const fixtures = syncFixtures();
const receiver = receiverFixture();
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Runs one stream and expects it to succeed. */
async function run(fixture: SyncFixture, stream: StreamName, reason: 'backfill' | 'sync' | 'reconcile'): Promise<void> {
  expect((await fixture.context.engine.run(stream, reason)).status).toBe('succeeded');
}

/** Runs two complete scans of every stream (a record gone from both is tombstoned). */
async function twoCompleteScans(fixture: SyncFixture): Promise<void> {
  for (let scan = 0; scan < 2; scan += 1) for (const stream of STREAM_NAMES) await run(fixture, stream, 'reconcile');
}

/**
 * Every registered stream's own change types, from its simulator declaration's churn (so a stream
 * added later needs no edit here: docs/adding-a-stream.md): its changes churned and synced until each
 * of its types but its gone one occurred, then, unless it occurred, one of its mirrored records
 * deleted upstream and two complete scans for its gone event.
 */
async function everyStreamEvent(fixture: SyncFixture): Promise<void> {
  const { sim, context } = fixture;
  const occurred = async (stream: string) => new Set((await context.connection.all<{ type: string }>('SELECT DISTINCT type FROM changes WHERE stream = ?', [stream])).map((row) => row.type));
  for (const stream of STREAM_LIST as readonly RegisteredStream[]) {
    const wanted = stream.changes.events.filter((type) => type !== stream.changes.gone);
    for (let round = 0; round < 30; round += 1) {
      const seen = await occurred(stream.name);
      if (wanted.every((type) => seen.has(type))) break;
      sim.world.churnStream(stream.name, 3);
      await run(fixture, stream.name, stream.request.cursor === 'complete-scan' ? 'reconcile' : 'sync');
    }
    if ((await occurred(stream.name)).has(stream.changes.gone)) continue;
    const live = await context.connection.get<{ id: string }>(`SELECT id FROM ${stream.table} WHERE deleted_at IS NULL ORDER BY id LIMIT 1`);
    expect(live, `${stream.name} has a mirrored record`).toBeDefined();
    expect(world(sim).deleteRecord(stream.name, live!.id)).toBe(true);
    for (let scan = 0; scan < 2; scan += 1) await run(fixture, stream.name, 'reconcile');
  }
}

/** The simulated world, its streams named by any registered stream's name. */
function world(sim: RunningSimulator) {
  return sim.world as unknown as { deleteRecord(stream: string, id: string): boolean };
}

/** A write stack (intake + worker, Redis) on the fixture's mirror. */
async function writesOn(sim: RunningSimulator, fixture: SyncFixture): Promise<WriteStack> {
  await requireRedis();
  const id = Math.random().toString(36).slice(2, 10);
  const bed = { dir: fixture.dir.path, dbPath: '', connection: fixture.context.connection, prefix: `test-schemas-${id}`, budgetPrefix: `test-schemas-rate-${id}`, queueName: 'writes', cleanup: async () => {} };
  // A 300 ms deadline: the late commit below outlives the first send.
  const stack = await writeStack(sim, bed, { timeoutMs: 300, worker: { ambiguousSettleMs: 50, ledgerSettleMs: 500, ledgerLookups: 3 } });
  cleanups.push(async () => {
    await stack.close();
    await deleteKeys(`${bed.prefix}:*`);
    await deleteKeys(`${bed.budgetPrefix}:*`);
  });
  return stack;
}

describe('event schemas', () => {
  it('every event type occurs, and every event, read through the pull API or received by a webhook, validates against its schema', async () => {
    const schemas = eventSchemas();
    const fixture = await fixtures.start({ size: { transactions: 40, deals: 20, onboardings: 15, customers: 6 } });
    const { sim, context } = fixture;
    const world = sim.world;

    // Two endpoints from the start: one that is gone (410: disabled, announced), one that takes everything.
    const witness = await receiver();
    const gone = await receiver();
    gone.handler = (_request, response) => void response.writeHead(410).end();
    // And a sink whose broker never answers (a closed port), disabled after a second of failing.
    const closedPort = await freePort();
    // And a sink whose broker refuses every publish (its key holds a string: WRONGTYPE) until the key is freed: failing, then recovered.
    const refusedKey = `bizops-test:schemas${process.pid}:refused`;
    const redis = new Redis(REDIS_URL);
    cleanups.push(async () => {
      await redis.del(refusedKey);
      redis.disconnect();
    });
    await redis.set(refusedKey, 'not a stream');
    const deadSink = configSchema.parse({
      baseUrl: 'http://127.0.0.1:9',
      tokens: { default: 'tok_default_0000' },
      sinks: [
        { name: 'dead', kind: 'redis-stream', url: `redis://127.0.0.1:${closedPort}`, disableAfterDays: 0.00001 },
        { name: 'refused', kind: 'redis-stream', url: REDIS_URL, key: refusedKey },
      ],
    }).sinks;
    const dispatcher = new WebhookDispatcher({
      connection: context.connection,
      endpoints: [
        { name: 'witness', url: witness.url, secret: newSecret(), events: ['*'] },
        { name: 'gone', url: gone.url, secret: newSecret(), events: ['*'] },
      ],
      targets: await sinkTargets(deadSink),
      pollMs: 30,
      scheduleMs: [0, 20, 40],
      jitterRatio: 0,
      // Long: the witness must get each event once, and a loaded machine can hold an answer for seconds (a timeout re-sends).
      timeoutMs: 30_000,
      stopGraceMs: 100,
    });
    await dispatcher.start();
    cleanups.push(() => dispatcher.stop());

    // Backfill: created/started, a field the spec does not show (announced once), an invalid item (quarantined).
    const pending = world.createTransaction({ status: 'PENDING' });
    world.exposeUndeclaredFields('transactions.notes');
    world.updateTransaction(world.transactions[0]!.id, { notes: 'a note the spec does not show' });
    sim.faults.inject({ kind: 'invalid-item', index: 0, times: 1, match: { path: '/deals' } });
    for (const stream of STREAM_NAMES) await run(fixture, stream, 'backfill');

    // Churn of every kind a stream names.
    const [txA, txB, txC] = world.transactions.filter((transaction) => transaction.id !== pending.id && transaction.status !== 'VOIDED');
    world.updateTransaction(txA!.id, { description: 'changed description', notes: 'changed note' });
    world.updateTransaction(pending.id, { status: 'CONFIRMED' });
    world.updateTransaction(txB!.id, { status: 'VOIDED' });
    world.deleteRecord('transactions', txC!.id);
    // Not the first deal: the invalid item kept it out of the backfill (the next run creates it).
    const open = world.deals.slice(1).filter((deal) => deal.status === 'OPEN');
    const [dealA, dealB, dealC, dealD] = open;
    world.updateDeal(dealA!.id, { title: 'renamed deal' });
    world.updateDeal(dealB!.id, { stageId: world.deals.find((deal) => deal.stageId !== dealB!.stageId)!.stageId });
    world.closeDeal(dealC!.id, { status: 'LOST' });
    world.deleteRecord('deals', dealD!.id);
    const [onboardingA, onboardingB, onboardingC] = world.onboardings;
    world.advanceOnboarding(onboardingA!.id);
    onboardingB!.fullname = 'Renamed Person';
    onboardingB!.updatedAt = world.now();
    world.touch('onboardings');
    world.completeOnboarding(onboardingC!.id);
    const [customerA, customerB] = world.customers;
    world.updateRecord('customers', customerA!.id, { lastName: 'Renamed' });
    world.deleteRecord('customers', customerB!.id);
    // Corrective actions at a location the deals name (the locations read: docs/sync.md "Partitioned streams").
    const read = new Set(world.deals.map((deal) => deal.locationId));
    const actions = world.streamRecords('qa_corrective_actions').filter((action) => read.has(action.locationId));
    const [actionA, actionB] = actions.filter((action) => action.status === 'OPEN');
    world.updateRecord('qa_corrective_actions', actionA!.id, { status: 'CLOSED', resolvedAt: world.now(), resolutionNotes: 'Fixed' });
    world.updateRecord('qa_corrective_actions', actionB!.id, { actionTaken: 'Changed what was done' });
    world.deleteRecord('qa_corrective_actions', actions.find((action) => action !== actionA && action !== actionB)!.id);
    for (const stream of STREAM_NAMES) await run(fixture, stream, 'sync');
    world.updateDeal(dealC!.id, { status: 'OPEN' });
    await twoCompleteScans(fixture);
    await everyStreamEvent(fixture);

    // A mass deletion: more than 10 records and more than a tenth of the stream, held back.
    for (const transaction of world.transactions.slice(-12)) world.deleteRecord('transactions', transaction.id);
    await run(fixture, 'transactions', 'reconcile');
    await run(fixture, 'transactions', 'reconcile');

    // Operational events: transactions failing sync.failingAfterRuns (3) runs in a row (its list answers
    // 404, the others answer), then stale, then recovered; deals unsupported (its list answers 404).
    // (Every request to the list answers 404 until the three runs failed: a run may ask it more than once.)
    sim.faults.inject({ match: { path: '/transactions' }, kind: 'status', status: 404, body: { message: 'Not found' }, times: Number.MAX_SAFE_INTEGER });
    for (let failed = 0; failed < 3; failed += 1) expect((await context.engine.run('transactions', 'sync')).status).toBe('failed');
    sim.faults.clear();
    expect((await context.conditions.checkStale('transactions', 1, new Date(0)))?.type).toBe('stream.stale');
    await run(fixture, 'transactions', 'sync');
    sim.faults.inject({ match: { path: '/deals' }, kind: 'status', status: 404, body: { message: 'Not found' }, times: 1 });
    expect((await context.engine.run('deals', 'backfill')).status).toBe('unsupported');

    // Writes: one succeeded (its deal written through), one refused by the API, one applied twice.
    const writes = await writesOn(sim, fixture);
    sim.faults.inject({ kind: 'late-commit', afterNextMatch: true, match: { method: 'POST', path: '/transactions' } });
    const twice = await writes.intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 7600, description: 'Late twice' });
    expect((await writes.finished(twice.id, 30_000)).status).toBe('needs_review');
    const won = await writes.intake.enqueueWrite('deal.close', { dealId: dealA!.id, status: 'WON' });
    expect((await writes.finished(won.id)).status).toBe('succeeded');
    const refused = await writes.intake.enqueueWrite('deal.close', { dealId: 'deal_does_not_exist', status: 'WON' });
    expect((await writes.finished(refused.id)).status).toBe('failed');

    await waitFor(async () => (await loadEndpoint(context.connection, 'dead'))?.disabledAt, 'the dead sink disabled');
    await waitFor(async () => (await context.connection.all("SELECT seq FROM changes WHERE type = 'sink.failing' AND record_id = 'refused'")).length === 1, 'the refused sink failing');
    await redis.del(refusedKey);
    await waitFor(async () => (await context.connection.all("SELECT seq FROM changes WHERE type = 'sink.recovered'")).length === 1, 'the refused sink recovered');

    // Every change row through the pull API's page: the webhook body with its id.
    const lastSeq = await lastChangeSeq(context.connection);
    const pulled: PulledEvent[] = [];
    for (let after = 0; after < lastSeq; after = pulled.at(-1)!.data.seq) pulled.push(...(await readChangesPage(context.connection, { after, limit: 1000 })).events);
    const failures = pulled.flatMap((event) => eventProblems(event));
    expect(failures).toEqual([]);

    // Every event type of the changelog occurred (webhook.test is never in it: checked below).
    const occurred = new Set(pulled.map((event) => event.type));
    // (webhook.test and the <stream>.snapshot types are never in the changelog: tested where they are sent.)
    expect([...occurred].sort()).toEqual(Object.keys(schemas).filter((type) => type !== 'webhook.test' && !type.endsWith('.snapshot')).sort());

    // What a receiver really got: the same bodies, valid too.
    await waitFor(async () => (await loadEndpoint(context.connection, 'witness'))?.deliveredSeq === lastSeq, 'the witness endpoint to receive every event');
    const received = witness.requests.map((request) => JSON.parse(request.body) as { type: string });
    expect(received).toHaveLength(lastSeq);
    expect(received.flatMap((body) => eventProblems(body))).toEqual([]);
    expect(eventProblems(JSON.parse(buildTestWebhookMessage('witness').body) as { type: string })).toEqual([]);

    // A payload that drifts fails: a typed column of another type, a member no schema describes.
    const created = pulled.find((event) => event.type === 'transaction.created')!;
    expect(eventProblems({ ...created, data: { ...created.data, record: { ...(created.data.record as object), amount: '12.50' } } })).toEqual([
      expect.stringContaining('transaction.created /data/record/amount must be integer'),
    ]);
    expect(eventProblems({ ...created, data: { ...created.data, version: 2 } })).toEqual([expect.stringContaining('must NOT have additional properties {"additionalProperty":"version"}')]);
  });
});
