/**
 * A new stream is its definition, its registry line and its simulator declaration
 * (docs/adding-a-stream.md): with the throwaway streams of test/streams/throwaway-streams.ts
 * registered (the `streams` project's setup), and nothing else edited, the simulator serves them
 * (route, the new scope in the tokens, the snapshot key, churn) and the checks the suite makes of
 * every stream hold for them: each mirrored field by field in its minimum requests, a quiet sync at
 * its minimum, verify equal, status and the configuration naming them, their events in the event
 * schemas. test/notify/event-schemas.test.ts runs in the same project, unedited, over them too.
 */
import { describe, expect, it } from 'vitest';
import { SIMULATOR_TOKENS } from '@bizops-sync/simulator';
import { configSchema } from '../../src/config/schema.ts';
import { eventSchemas } from '../../src/notify/event-schemas.ts';
import { readMirrorReport } from '../../src/status/mirror-status.ts';
import { STREAM_LIST, STREAM_NAMES, type RegisteredStream, type StreamName } from '../../src/streams/definitions.ts';
import { verifyStream } from '../../src/sync/mirror-verify.ts';
import { expectMirrorEqualsGroundTruth, listRequests, quietSyncRequests, scanRequests, syncFixtures } from '../helpers.ts';

const fixtures = syncFixtures();
const SIZES = { transactions: 30, deals: 20, onboardings: 5, customers: 10, qa_corrective_actions: 12, locations: 130, gadgets: 24 };
/** The throwaway streams' names: registered at run time, so no `StreamName` of the compiled registry. */
const THROWAWAY = ['locations', 'gadgets'] as unknown as StreamName[];

describe('a throwaway stream, plain and partitioned, registered by its definition and declaration alone', () => {
  it('the simulator serves it from its declaration: its route, its scope in the tokens that read lists, its own snapshot key, its churn', async () => {
    const { sim } = await fixtures.start({ size: SIZES });
    expect(STREAM_NAMES.slice(-2)).toEqual(THROWAWAY);
    const readOnly = await fetch(`${sim.url}/api/public/v1/locations?limit=100`, { headers: { authorization: `Bearer ${SIMULATOR_TOKENS.readOnly}` } });
    expect(readOnly.status).toBe(200);
    expect(((await readOnly.json()) as { content: { pagination: { total: number } } }).content.pagination.total).toBe(130);
    const noParameter = await fetch(`${sim.url}/api/public/v1/gadgets?limit=100`, { headers: { authorization: `Bearer ${SIMULATOR_TOKENS.admin}` } });
    expect(noParameter.status).toBe(400);
    // The stream's count has a key of its own: the world's count of the company's locations keeps its own.
    expect(sim.world.snapshot().streams).toMatchObject({ locations: 130, gadgets: 24 });
    expect(sim.world.snapshot().locations).toBe(sim.world.data.locations.length);
    expect(sim.world.churnStream('locations' as never, 2).map((change) => change.stream)).toEqual(['locations', 'locations']);
  });

  it('every registered stream is mirrored field by field in its minimum requests, a quiet sync stays at its minimum, verify finds each equal, status and the configuration name it, and its events have schemas', async () => {
    const { sim, context } = await fixtures.start({ size: SIZES });
    for (const stream of STREAM_LIST as readonly RegisteredStream[]) {
      const before = listRequests(sim, stream.request.path).length;
      const result = await context.engine.run(stream.name, 'backfill');
      expect(result.status, stream.name).toBe('succeeded');
      // The simulator has no churn here and no list holds a multiple of 100 records, so each list
      // ends on a short page: the backfill sends exactly one request per page of 100 of each list.
      expect(listRequests(sim, stream.request.path).length - before, stream.name).toBe(scanRequests(sim, stream.name).min);
      await expectMirrorEqualsGroundTruth(context, sim, stream.name);
    }
    // A quiet sync: one request per list (per partition), and the record clock's probes.
    const sent = sim.requests.length;
    for (const stream of STREAM_NAMES) expect((await context.engine.run(stream, 'sync')).changes, stream).toBe(0);
    const quiet = quietSyncRequests(sim);
    expect(sim.requests.slice(sent).filter((request) => request.method === 'GET' && request.path.startsWith('/api/public/v1/')).length).toBe(quiet.total);
    for (const stream of STREAM_NAMES) expect((await verifyStream(stream, { client: context.client, store: context.store })).status, stream).toBe('equal');

    const report = await readMirrorReport(context.connection);
    const gadgets = report.streams.find((stream) => (stream.stream as string) === 'gadgets')!;
    expect(report.streams.find((stream) => (stream.stream as string) === 'locations')).toMatchObject({ records: 130, partitions: null });
    expect(gadgets.records).toBe(24);
    expect(gadgets.partitions!.list.map((part) => part.partition)).toEqual(sim.world.partitionQueries('gadgets' as never).map((query) => query.locationId).sort());
    expect(gadgets.partitions!.sources).toMatchObject({ key: 'sync.partitions.gadgets.locationId', derivedFrom: 'the locationId of the deals in the mirror' });
    expect(configSchema.parse({ baseUrl: sim.url, tokens: { default: 'x' }, sync: { streams: THROWAWAY, partitions: { gadgets: { locationId: ['loc_1'] } } } }).sync.streams).toEqual(THROWAWAY);
    expect(Object.keys(eventSchemas())).toEqual(expect.arrayContaining(['location.created', 'location.renamed', 'location.updated', 'location.deleted', 'gadget.created', 'gadget.switched', 'gadget.updated', 'gadget.deleted']));
  });
});
