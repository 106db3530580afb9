/**
 * The record clock per (stream, partition) (docs/sync.md "Record clock"): `gadgets`, a throwaway
 * partitioned stream whose items carry `updatedAt` (test/streams/throwaway-streams.ts), keeps a high
 * water, a lag and a window per location. A backfill of a list nobody changed records no lag: each
 * partition's high water is the newest stamp of its own records (taken over the table after each
 * partition, the next partition's newer records each measured a lag of days).
 */
import { describe, expect, it } from 'vitest';
import { RecordClockStore } from '../../src/mirror/record-clock-store.ts';
import type { StreamName } from '../../src/streams/definitions.ts';
import { expectMirrorEqualsGroundTruth, syncFixtures } from '../helpers.ts';

const fixtures = syncFixtures();
const GADGETS = 'gadgets' as StreamName;
/** Sizes by stream name, the throwaway ones included (the compiled registry does not know them). */
const SIZES = { transactions: 5, deals: 10, onboardings: 2, customers: 5, qa_corrective_actions: 2, gadgets: 30 };

describe('a partitioned stream whose items carry updatedAt', () => {
  it('backfilled from a list nobody changed, records no lag: each partition keeps its own high water; a change in one partition is listed by the next sync and measures nothing', async () => {
    const { sim, context } = await fixtures.start({ size: SIZES });
    expect((await context.engine.run('deals', 'backfill')).status).toBe('succeeded');
    // The last partition read holds the stream's newest stamp (30 s old): newer than every record of
    // the partitions read before it, as a location's records may well be.
    const queries = sim.world.partitionQueries(GADGETS).sort((a, b) => a.locationId!.localeCompare(b.locationId!));
    const newest = (sim.world.groundTruth(GADGETS, queries.at(-1)) as { id: string }[])[0]!;
    const record = (sim.world.streamRecords(GADGETS as never) as unknown as { id: string; updatedAt: string }[]).find((candidate) => candidate.id === newest.id)!;
    record.updatedAt = new Date(Date.now() - 30_000).toISOString();
    sim.world.touch(GADGETS as never);
    const backfill = await context.engine.run(GADGETS, 'backfill');
    expect(backfill.status).toBe('succeeded');
    expect(backfill.partitions!.length).toBeGreaterThan(1);
    // Before: the newest record measured a lag against the high water of the partitions read before it
    // (taken over the table: theirs), and by the rule of the largest lag every stream's overlap widened by it.
    expect(await context.connection.get('SELECT MAX(lag_seconds) AS lag FROM record_clock')).toEqual({ lag: 0 });

    const clock = new RecordClockStore(context.store.executor);
    for (const query of sim.world.partitionQueries(GADGETS)) {
      const records = sim.world.groundTruth(GADGETS, query) as { updatedAt: string }[];
      const newest = Math.max(...records.map((record) => Date.parse(record.updatedAt)));
      const { highWater, lagSeconds } = await clock.read({ stream: GADGETS, partition: query.locationId! });
      expect({ partition: query.locationId, water: highWater && Date.parse(highWater.updatedAt), lagSeconds }).toEqual({ partition: query.locationId, water: newest, lagSeconds: 0 });
    }

    const [first] = sim.world.partitionQueries(GADGETS);
    const gadget = (sim.world.groundTruth(GADGETS, first) as { id: string }[])[0]!;
    sim.world.updateRecord(GADGETS as never, gadget.id, { label: 'moved along' } as never);
    const sync = await context.engine.run(GADGETS, 'sync');
    expect(sync).toMatchObject({ status: 'succeeded', changes: 1 });
    expect(await context.connection.get('SELECT MAX(lag_seconds) AS lag FROM record_clock')).toEqual({ lag: 0 });
    await expectMirrorEqualsGroundTruth(context, sim, GADGETS);
  });
});
