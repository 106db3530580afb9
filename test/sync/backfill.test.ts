import { describe, expect, it } from 'vitest';
import { STREAM_LIST, STREAM_NAMES } from '../../src/streams/definitions.ts';
import { RecordClockProbe } from '../../src/sync/record-clock-probe.ts';
import { TEST_MIRROR_BACKEND } from '../test-mirror.ts';
import { createdEvent, expectMirrorEqualsGroundTruth, listRequests, quietSyncRequests, scanRequests, syncFixtures } from '../helpers.ts';

const fixtures = syncFixtures();

describe('backfill', () => {
  it('mirrors every registered stream field by field (10,000 transactions; 2,000 on PostgreSQL), with ceil(N/100) requests per stream and one created change per record', async () => {
    // The scale (10,000) on SQLite; on PostgreSQL a fifth of it, still many pages of every list: what
    // the back end changes is how each page is written (one page per transaction), not how many there are.
    const { sim, context } = await fixtures.start({ size: TEST_MIRROR_BACKEND === 'postgres' ? { transactions: 2_000, deals: 200, onboardings: 150 } : { transactions: 10_000, deals: 1_000, onboardings: 150 } });
    for (const stream of STREAM_LIST) {
      const result = await context.engine.run(stream.name, 'backfill');
      expect(result.status, stream.name).toBe('succeeded');
      await expectMirrorEqualsGroundTruth(context, sim, stream.name);
      const truth = sim.world.groundTruth(stream.name);
      // One request per page of 100 of each list (each partition's), at least one, and at most one more (the empty page after a full last one).
      const pages = scanRequests(sim, stream.name);
      const sent = listRequests(sim, stream.request.path).length;
      expect(sent, stream.name).toBeGreaterThanOrEqual(pages.min);
      expect(sent, stream.name).toBeLessThanOrEqual(pages.max);
      // One change per record, each the stream's event for a new record.
      const changes = await context.connection.all<{ type: string; n: number }>('SELECT type, COUNT(*) AS n FROM changes WHERE stream = ? GROUP BY type', [stream.name]);
      expect(changes, stream.name).toEqual([{ type: createdEvent(stream.name, truth[0]!), n: truth.length }]);
    }
    // Every request asked for the maximum page size.
    for (const request of sim.requests) expect(new URLSearchParams(request.query).get('limit')).toBe('100');
  });

  it('a backfill over a mirror holding some of its records, after pages of records it lacks, records one created change per record it lacked and none for the others', async () => {
    const { sim, context } = await fixtures.start({ size: { transactions: 350, deals: 10, onboardings: 10 } });
    expect((await context.engine.run('transactions', 'backfill')).status).toBe('succeeded');
    // The mirror loses the rows of the first two pages listed; it keeps the next two pages' (their change rows stay).
    const listedFirst = (await context.connection.all<{ id: string }>("SELECT record_id AS id FROM changes WHERE stream = 'transactions' ORDER BY seq LIMIT 200")).map((row) => row.id);
    for (const id of listedFirst) await context.connection.run('DELETE FROM transactions WHERE id = ?', [id]);
    const seq = await context.store.lastSeq();
    // On PostgreSQL the second page is written as new without asking (the first held none), and the third,
    // written so too, is refused by the table's key and written again asking: no change for its records.
    const result = await context.engine.run('transactions', 'backfill');
    expect(result.status).toBe('succeeded');
    expect(result.changes).toBe(200);
    const added = await context.connection.all<{ type: string; id: string }>('SELECT type, record_id AS id FROM changes WHERE seq > ? ORDER BY seq', [seq]);
    expect(added).toEqual(listedFirst.map((id) => ({ type: 'transaction.created', id })));
    await expectMirrorEqualsGroundTruth(context, sim, 'transactions');
  });

  it('a second sync with nothing changed upstream records zero changes and sends one request per stream (per partition of a partitioned one), and one record clock probe in all: a count of the one list whose items carry no timestamps', async () => {
    // Transactions and deals longer than a page: a complete scan of either sends more than one request.
    const { sim, context } = await fixtures.start({ size: { transactions: 300, deals: 150, onboardings: 60 } });
    for (const stream of STREAM_NAMES) await context.engine.run(stream, 'backfill');
    const seqBefore = await context.store.lastSeq();
    const requestsBefore = sim.requests.length;
    for (const stream of STREAM_NAMES) {
      const result = await context.engine.run(stream, 'sync');
      expect(result.status, stream).toBe('succeeded');
      expect(result.changes, stream).toBe(0);
    }
    expect(await context.store.lastSeq()).toBe(seqBefore);
    const after = sim.requests.slice(requestsBefore);
    // The streams whose items carry updatedAt bound the lag on their own pages; the one unpartitioned
    // list without timestamps (transactions) counts its list once (docs/sync.md "Record clock"). Before:
    // a page of deals sorted by updatedAt before the transactions and again before the corrective actions.
    const probes = STREAM_LIST.filter((stream) => RecordClockProbe.probes(stream)).map((stream) => `/api/public/v1${stream.request.path}`);
    expect(probes).toEqual(['/api/public/v1/transactions']);
    expect(after.map((r) => r.path).sort()).toEqual(
      [...STREAM_LIST.flatMap((stream) => Array.from({ length: scanRequests(sim, stream.name).lists }, () => `/api/public/v1${stream.request.path}`)), ...probes].sort(),
    );
    expect(after.length).toBe(quietSyncRequests(sim).total);
    expect(after.filter((r) => r.query.includes('sortBy=updatedAt'))).toEqual([]);
    const probe = new URLSearchParams(after.find((r) => r.path.endsWith('/transactions') && !r.query.includes('updatedAfter'))!.query);
    expect(Object.fromEntries(probe)).toEqual({ limit: '1' });
    // Incremental runs ask for what changed since the cursor minus the overlap.
    const transactionsQuery = new URLSearchParams(after.find((r) => r.path.endsWith('/transactions') && r.query.includes('updatedAfter'))!.query);
    expect(transactionsQuery.get('updatedAfter')).toBeTruthy();
    expect(transactionsQuery.get('sortBy')).toBe('createdAt');
  });

  it('an incremental sync records each upstream change once, typed by what changed', async () => {
    const { sim, context } = await fixtures.start({ size: { transactions: 300, deals: 120, onboardings: 20 } });
    for (const stream of STREAM_NAMES) await context.engine.run(stream, 'backfill');
    const seq = await context.store.lastSeq();
    const deals = sim.world.groundTruth('deals') as { id: string; status: string; stageId: string }[];
    const open = deals.filter((d) => d.status === 'OPEN');
    sim.world.updateDeal(open[0]!.id, { status: 'WON', wonLostReason: 'signed', closedAt: new Date().toISOString() });
    sim.world.updateDeal(open[1]!.id, { stageId: `${open[1]!.stageId}-next` });
    const created = sim.world.createTransaction({ type: 'EXPENSE', amount: -1234 });
    const transactions = sim.world.groundTruth('transactions') as { id: string; status: string }[];
    const pending = transactions.find((t) => t.status === 'PENDING' && t.id !== created.id)!;
    sim.world.updateTransaction(pending.id, { status: 'VOIDED' });
    for (const stream of STREAM_NAMES) await context.engine.run(stream, 'sync');
    const newChanges = (await context.connection.all('SELECT type, record_id FROM changes WHERE seq > ? ORDER BY seq', [seq])) as { type: string; record_id: string }[];
    expect(newChanges).toEqual(
      expect.arrayContaining([
        { type: 'deal.won', record_id: open[0]!.id },
        { type: 'deal.stage_changed', record_id: open[1]!.id },
        { type: 'transaction.created', record_id: created.id },
        { type: 'transaction.voided', record_id: pending.id },
      ]),
    );
    expect(newChanges).toHaveLength(4);
    const won = (await context.connection.get('SELECT data FROM changes WHERE seq > ? AND type = ?', [seq, 'deal.won'])) as { data: string };
    expect(JSON.parse(won.data).changes.status).toEqual({ old: 'OPEN', new: 'WON' });
    for (const stream of ['transactions', 'deals'] as const) await expectMirrorEqualsGroundTruth(context, sim, stream);
  });
});
