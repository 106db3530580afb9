import { describe, expect, it } from 'vitest';
import { DaemonMetrics, pageTrustSource } from '../../src/daemon/metrics.ts';
import { failingPartitions } from '../../src/daemon/readiness.ts';
import { formatChangeLine, formatStoredChangeLine, iterateStoredChanges, readChanges } from '../../src/notify/changelog-reader.ts';
import { webhookPayload } from '../../src/notify/event-payload.ts';
import { readMirrorReport } from '../../src/status/mirror-status.ts';
import { SyncEngine } from '../../src/sync/sync-engine.ts';
import { changelogProblems } from '../event-validation.ts';
import { cliEnv } from '../daemon/helpers.ts';
import { verifyStream } from '../../src/sync/mirror-verify.ts';
import { expectMirrorEqualsGroundTruth, listRequests, runCli, simulator, statusOutput, syncFixtures, type SyncFixture } from '../helpers.ts';
import { REDIS_URL } from '../writes/support.ts';

const fixtures = syncFixtures();
const STREAM = 'qa_corrective_actions';
const PATH = '/qa-corrective-actions';
const SIZES = { transactions: 20, deals: 60, onboardings: 5, customers: 10, qa_corrective_actions: 45 };

/** The locations the simulator serves corrective actions for (company A: three). */
function locations(sim: Awaited<ReturnType<typeof fixtures.start>>['sim']): string[] {
  return sim.world.partitionQueries(STREAM).map((query) => query.locationId!);
}

/** Ids of the simulator's corrective actions at `location`. */
function truthIds(sim: Awaited<ReturnType<typeof fixtures.start>>['sim'], location: string): string[] {
  return sim.world.groundTruth(STREAM, { locationId: location }).map((record) => String(record.id)).sort();
}

/** Backfills the deals (which name the locations) and then the corrective actions of every location. */
async function backfillDealsAndActions({ context }: SyncFixture): Promise<void> {
  for (const stream of ['deals', STREAM] as const) expect((await context.engine.run(stream, 'backfill')).status).toBe('succeeded');
}

describe('a partitioned stream (GET /qa-corrective-actions, one list per locationId)', () => {
  it('reads exactly the configured partitions, each with its own state; the mirror, status, /metrics and the changelog name the partition', async () => {
    // The same seed gives the same locations: learn them from a first simulator.
    const learnt = await simulator({ size: SIZES });
    const [a, b, c] = locations(learnt);
    await learnt.close();
    expect(c).toBeDefined();
    const { sim: server, context } = await fixtures.start({ size: SIZES }, { sync: { partitions: { [STREAM]: { locationId: [a, b] } } } });
    expect(locations(server)).toEqual([a, b, c]);

    const result = await context.engine.run(STREAM, 'backfill');
    expect(result.status).toBe('succeeded');
    expect(result.partitions?.map((part) => [part.partition, part.status])).toEqual([
      [a, 'succeeded'],
      [b, 'succeeded'],
    ]);
    // Every request carried its partition; none went out without the required parameter, none for c.
    const asked = listRequests(server, PATH).map((request) => new URLSearchParams(request.query).get('locationId'));
    expect(new Set(asked)).toEqual(new Set([a, b]));
    // The mirror holds the two partitions' records, and nothing of c.
    const rows = await context.connection.all<{ id: string; location_id: string }>(`SELECT id, location_id FROM ${STREAM} WHERE deleted_at IS NULL ORDER BY id`);
    expect(rows.map((row) => row.id)).toEqual([...truthIds(server, a!), ...truthIds(server, b!)].sort());
    expect(result.records).toBe(rows.length);

    // A sync state row per partition (listed by value), each with its cursor; the stream's row has the oldest.
    const [first, second] = [a!, b!].sort();
    const states = await context.store.listPartitionStates(STREAM);
    expect(states.map((state) => [state.partition, state.scanNumber, state.cursor !== null])).toEqual([
      [first, 1, true],
      [second, 1, true],
    ]);
    const streamState = await context.store.readSyncState(STREAM);
    expect(streamState.cursor).toBe([states[0]!.cursor!, states[1]!.cursor!].sort()[0]);
    expect(streamState.lastRunRecords).toBe(rows.length);

    // status: the partitions under their stream, each with its records and cursor.
    const report = await readMirrorReport(context.connection);
    const qa = report.streams.find((stream) => stream.stream === STREAM)!;
    expect(qa.skipped).toBeNull();
    expect(qa.partitions?.param).toBe('locationId');
    expect(qa.partitions?.list.map((part) => [part.partition, part.records, part.completeScans, part.cursor])).toEqual([
      [first, truthIds(server, first!).length, 1, states[0]!.cursor],
      [second, truthIds(server, second!).length, 1, states[1]!.cursor],
    ]);

    // The status command's table: a row per partition under its stream.
    const lines = (await statusOutput(context.config.dbPath)).split('\n');
    const streamRow = lines.findIndex((line) => line.startsWith(`${STREAM} `));
    expect(lines[streamRow + 1]).toMatch(new RegExp(`^  locationId=${first} +${truthIds(server, first!).length} +0 +\\d{4}-`));
    expect(lines[streamRow + 2]).toMatch(new RegExp(`^  locationId=${second} +${truthIds(server, second!).length} +0 +\\d{4}-`));

    // The changelog: each created change carries the partition its record was listed in.
    const changes = (await readChanges(context.connection, { limit: 1000 })).filter((event) => event.stream === STREAM);
    expect(changes).toHaveLength(rows.length);
    for (const event of changes) expect(event.partition).toBe((event.data.record as { locationId: string }).locationId);
    expect(JSON.parse(formatChangeLine(changes[0]!))).toMatchObject({ stream: STREAM, partition: changes[0]!.partition });
    // The `changes` command's line, spliced from the stored row, names it too.
    for await (const batch of iterateStoredChanges(context.connection)) {
      const stored = batch.find((row) => row.stream === STREAM)!;
      expect(JSON.parse(formatStoredChangeLine(stored))).toMatchObject({ stream: STREAM, record_id: stored.recordId, partition: stored.partition });
      expect(stored.partition).toBeDefined();
      break;
    }
    // As webhooks send them and the pull API lists them, with `partition`, valid against their JSON Schema.
    expect(webhookPayload(changes[0]!).data).toMatchObject({ stream: STREAM, partition: changes[0]!.partition });
    expect(await changelogProblems(context.connection)).toEqual([]);

    // /metrics: a cursor per partition, and how many partitions the stream has.
    const metrics = new DaemonMetrics({ streams: [STREAM], store: context.store, apiClients: [context.client], budget: context.budgets, processMetrics: false });
    const text = await metrics.registry.metrics();
    expect(text).toContain(`bizops_stream_partitions{connection="default",stream="${STREAM}"} 2`);
    for (const [index, partition] of [first, second].entries()) {
      expect(text).toContain(`bizops_partition_cursor_timestamp_seconds{connection="default",stream="${STREAM}",partition="${partition}"} ${Date.parse(states[index]!.cursor!) / 1000}`);
    }
  });

  it('with no partition configured or mirrored it sends nothing and says so; its values then come from the deals in the mirror, and each partition syncs from its own cursor', async () => {
    const { sim, context } = await fixtures.start({ size: SIZES });
    const none = await context.engine.run(STREAM, 'sync');
    expect(none.status).toBe('no-partitions');
    expect(none.partitions).toEqual([]);
    expect(listRequests(sim, PATH)).toHaveLength(0);
    const before = (await readMirrorReport(context.connection)).streams.find((stream) => stream.stream === STREAM)!;
    expect(before.skipped).toMatch(/^no partitions: qa_corrective_actions is read once per locationId/);
    expect(before.skipped).toContain('deals');

    // The deals name the locations: once they are mirrored, every location is a partition.
    expect((await context.engine.run('deals', 'backfill')).status).toBe('succeeded');
    const first = await context.engine.run(STREAM, 'sync');
    expect(first.status).toBe('succeeded');
    expect(first.partitions?.map((part) => part.partition)).toEqual([...locations(sim)].sort());
    expect(first.partitions?.every((part) => part.mode === 'complete')).toBe(true);
    await expectMirrorEqualsGroundTruth(context, sim, STREAM);
    expect((await readMirrorReport(context.connection)).streams.find((stream) => stream.stream === STREAM)!.skipped).toBeNull();

    // The next sync is incremental per partition: one request each, since that partition's own cursor.
    const states = new Map((await context.store.listPartitionStates(STREAM)).map((state) => [state.partition, state.cursor]));
    const sent = listRequests(sim, PATH).length;
    const second = await context.engine.run(STREAM, 'sync');
    expect(second.status).toBe('succeeded');
    expect(second.partitions?.every((part) => part.mode === 'incremental' && part.pages === 1)).toBe(true);
    const incremental = listRequests(sim, PATH).slice(sent).map((request) => new URLSearchParams(request.query));
    expect(incremental.map((query) => query.get('locationId')).sort()).toEqual([...states.keys()].sort());
    for (const query of incremental) {
      const cursor = states.get(query.get('locationId')!)!;
      expect(Date.parse(query.get('updatedAfter')!)).toBeLessThan(Date.parse(cursor));
      expect(Date.parse(query.get('updatedAfter')!)).toBeGreaterThanOrEqual(Date.parse(cursor) - 121_000);
    }
  });

  it("misses and tombstones stay inside their partition; a location no longer configured is still read while the mirror holds its records", async () => {
    const { sim, context } = await fixtures.start({ size: SIZES });
    const [a, b] = locations(sim);
    const both = new SyncEngine({ client: context.client, store: context.store, partitions: { [STREAM]: { locationId: [a!, b!] } }, massDeletionShare: 1 });
    expect((await both.run(STREAM, 'backfill')).status).toBe('succeeded');
    const gone = truthIds(sim, a!)[0]!;
    expect(sim.world.deleteRecord(STREAM, gone)).toBe(true);

    // Only a is configured now: b is still read (the mirror holds its records), until they are proven gone.
    const onlyA = new SyncEngine({ client: context.client, store: context.store, partitions: { [STREAM]: { locationId: [a!] } }, massDeletionShare: 1 });
    for (let scan = 0; scan < 2; scan += 1) {
      const result = await onlyA.run(STREAM, 'reconcile');
      expect(result.status).toBe('succeeded');
      expect(result.partitions!.map((part) => part.partition)).toEqual([a, b]);
      expect(result.partitionSources).toMatchObject({ count: 2, sources: { configured: 1, derived: 0, mirrored: 2 }, key: `sync.partitions.${STREAM}.locationId`, derivedFrom: 'the locationId of the deals in the mirror' });
    }

    const tombstoned = await context.connection.all<{ id: string; location_id: string }>(`SELECT id, location_id FROM ${STREAM} WHERE deleted_at IS NOT NULL`);
    expect(tombstoned).toEqual([{ id: gone, location_id: a }]);
    const live = await context.connection.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${STREAM} WHERE deleted_at IS NULL AND location_id = ?`, [b!]);
    expect(Number(live!.n)).toBe(truthIds(sim, b!).length);
    const deleted = await context.connection.all<{ record_id: string; partition_value: string }>("SELECT record_id, partition_value FROM changes WHERE type = 'qa_action.deleted'");
    expect(deleted).toEqual([{ record_id: gone, partition_value: a }]);
    expect(await changelogProblems(context.connection)).toEqual([]);
    expect((await context.store.readSyncState(STREAM, a!)).scanNumber).toBe(3);
    expect((await context.store.readSyncState(STREAM, b!)).scanNumber).toBe(3);
  });

  it('a location no deal holds any more is read while the mirror holds its actions: one closed upstream is closed, a new one mirrored; verify finds the mirror equal', async () => {
    const fixture = await fixtures.start({ size: SIZES });
    const { sim, context } = fixture;
    const [a, , c] = locations(sim);
    await backfillDealsAndActions(fixture);
    // No deal holds c any more; its actions stay at the API.
    const atC = sim.world.deals.filter((deal) => deal.locationId === c);
    expect(atC.length).toBeGreaterThan(0);
    for (const deal of atC) sim.world.updateDeal(deal.id, { locationId: a });
    expect((await context.engine.run('deals', 'sync')).status).toBe('succeeded');
    expect(Number((await context.connection.get<{ n: number }>('SELECT COUNT(*) AS n FROM deals WHERE location_id = ?', [c!]))!.n)).toBe(0);
    // Upstream, one of c's open actions is closed and a new one is opened there.
    const open = sim.world.streamRecords(STREAM).find((action) => action.locationId === c && action.status === 'OPEN')!;
    sim.world.updateRecord(STREAM, open.id, { status: 'CLOSED', resolvedAt: sim.world.now(), resolutionNotes: 'Fixed' });
    const now = sim.world.now();
    const added = sim.world.addRecord(STREAM, { ...open, id: sim.world.newId('qca'), status: 'OPEN', resolvedAt: null, resolutionNotes: null, openedAt: now, createdAt: now, updatedAt: now });

    const result = await context.engine.run(STREAM, 'sync');
    expect(result.status).toBe('succeeded');
    expect(result.partitions!.map((part) => part.partition)).toContain(c);
    expect(result.partitionSources).toMatchObject({ count: 3, sources: { configured: 0, derived: 2, mirrored: 3 } });
    await expectMirrorEqualsGroundTruth(context, sim, STREAM);
    const changes = await context.connection.all<{ type: string; record_id: string }>(`SELECT type, record_id FROM changes WHERE stream = ? AND partition_value = ? ORDER BY seq`, [STREAM, c!]);
    expect(changes.slice(-2)).toEqual([
      { type: 'qa_action.closed', record_id: open.id },
      { type: 'qa_action.opened', record_id: added.id },
    ]);
    const verified = await verifyStream(STREAM, { client: context.client, store: context.store });
    expect(verified).toMatchObject({ status: 'equal', partitions: 3, extra: { count: 0 }, outside: { count: 0 } });
  });

  it("actions of a location on no deal: the backfill's summary and status say where the values come from, how many, and the key that adds one; configured, it is read too", async () => {
    const fixture = await fixtures.start({ size: SIZES });
    const { sim, context } = fixture;
    const [a, , c] = locations(sim);
    for (const deal of sim.world.deals.filter((candidate) => candidate.locationId === c)) sim.world.updateDeal(deal.id, { locationId: a });
    expect((await context.engine.run('deals', 'backfill')).status).toBe('succeeded');
    const env = cliEnv({ BIZOPS_BASE_URL: sim.url, BIZOPS_TOKEN: String(sim.tokens.admin), BIZOPS_DB: context.config.dbPath, BIZOPS_CONFIG: '', BIZOPS_LOG_LEVEL: 'silent', REDIS_URL });
    const backfill = await runCli(['backfill', '--stream', STREAM, '--no-progress'], env);
    expect(backfill.code, backfill.stderr).toBe(0);
    const line = `partitions: 2 locationId values (0 from sync.partitions.${STREAM}.locationId, 2 from the locationId of the deals in the mirror, 0 from its own mirrored records); a value none of them names is not read (add it to sync.partitions.${STREAM}.locationId)`;
    expect(backfill.stdout).toContain(line);
    const report = (await readMirrorReport(context.connection)).streams.find((stream) => stream.stream === STREAM)!;
    expect(report.partitions!.sources).toMatchObject({ count: 2, key: `sync.partitions.${STREAM}.locationId`, describe: line.slice('partitions: '.length) });
    expect(Number((await context.connection.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${STREAM} WHERE location_id = ?`, [c!]))!.n)).toBe(0);

    // Configured, c joins the derived locations.
    const configured = new SyncEngine({ client: context.client, store: context.store, partitions: { [STREAM]: { locationId: [c!] } } });
    const result = await configured.run(STREAM, 'sync');
    expect(result.partitionSources).toMatchObject({ count: 3, sources: { configured: 1, derived: 2, mirrored: 2 } });
    await expectMirrorEqualsGroundTruth(context, sim, STREAM);
  });

  it('an action that moves from one location to another is one update (qa_action.updated, locationId in the diff) in verify, repair and sync: never extra, never deleted and opened', async () => {
    const fixture = await fixtures.start({ size: SIZES });
    const { sim, context } = fixture;
    const [a, b] = locations(sim).sort();
    await backfillDealsAndActions(fixture);
    const moved = sim.world.streamRecords(STREAM).find((action) => action.locationId === a)!;
    sim.world.updateRecord(STREAM, moved.id, { locationId: b! });

    const found = await verifyStream(STREAM, { client: context.client, store: context.store });
    expect(found).toMatchObject({ status: 'drift', missing: { count: 0 }, extra: { count: 0 }, outside: { count: 0 }, stale: { count: 1, fields: { locationId: 1 } } });
    const seq = await context.store.lastSeq();
    const repaired = await verifyStream(STREAM, { client: context.client, store: context.store, repair: true });
    expect(repaired.repaired).toEqual({ changes: 1, tombstones: 0, held: 0, missesCounted: 0 });
    const changes = await context.connection.all<{ type: string; record_id: string; data: string; partition_value: string }>('SELECT type, record_id, data, partition_value FROM changes WHERE seq > ?', [seq]);
    expect(changes.map(({ type, record_id, partition_value }) => ({ type, record_id, partition_value }))).toEqual([{ type: 'qa_action.updated', record_id: moved.id, partition_value: b }]);
    expect(JSON.parse(changes[0]!.data).changes.locationId).toEqual({ old: a, new: b });
    expect((await verifyStream(STREAM, { client: context.client, store: context.store })).status).toBe('equal');

    // Back to a, then two complete scans and an incremental sync: one update, never a tombstone.
    sim.world.updateRecord(STREAM, moved.id, { locationId: a! });
    const before = await context.store.lastSeq();
    for (const reason of ['reconcile', 'reconcile', 'sync'] as const) expect((await context.engine.run(STREAM, reason)).status).toBe('succeeded');
    const synced = await context.connection.all<{ type: string; record_id: string }>('SELECT type, record_id FROM changes WHERE seq > ?', [before]);
    expect(synced).toEqual([{ type: 'qa_action.updated', record_id: moved.id }]);
    await expectMirrorEqualsGroundTruth(context, sim, STREAM);
  });

  it('a location whose list keeps failing is failing by name (its own condition and events, status, /readyz, metrics with a partition label) while the others stay ok; the items it quarantined are counted under their partition', async () => {
    const fixture = await fixtures.start({ size: SIZES }, { sync: { failingAfterRuns: 2 } });
    const { sim, context } = fixture;
    const [a, b, c] = locations(sim).sort();
    await backfillDealsAndActions(fixture);
    sim.faults.inject({ kind: 'status', status: 500, body: { message: 'Internal error' }, times: 1_000_000, match: { path: PATH, query: { locationId: c! } } });
    // b lists one changed action, served invalid: quarantined by b.
    sim.world.updateRecord(STREAM, truthIds(sim, b!)[0]!, { actionTaken: 'Changed' });
    sim.faults.inject({ kind: 'invalid-item', index: 0, times: 2, match: { path: PATH, query: { locationId: b! } } });
    const seq = await context.store.lastSeq();
    for (let run = 0; run < 2; run += 1) expect((await context.engine.run(STREAM, 'sync')).status).toBe('failed');

    expect(await context.conditions.read(STREAM, c!)).toMatchObject({ condition: 'failing', failedRuns: 2 });
    expect(await context.conditions.read(STREAM, a!)).toMatchObject({ condition: 'ok', failedRuns: 0 });
    const events = await context.connection.all<{ type: string; partition_value: string | null; data: string }>("SELECT type, partition_value, data FROM changes WHERE seq > ? AND type LIKE 'stream.%' ORDER BY seq", [seq]);
    expect(events.map((event) => [event.type, event.partition_value, JSON.parse(event.data).record.partition ?? null])).toEqual([
      ['stream.failing', null, null],
      ['stream.failing', c, c],
    ]);
    const report = (await readMirrorReport(context.connection)).streams.find((stream) => stream.stream === STREAM)!;
    const byValue = new Map(report.partitions!.list.map((part) => [part.partition, part]));
    expect(byValue.get(c!)!.condition).toMatchObject({ condition: 'failing', failedRuns: 2 });
    expect(byValue.get(a!)!.condition!.condition).toBe('ok');
    expect([byValue.get(a!)!.rejected, byValue.get(b!)!.rejected, byValue.get(c!)!.rejected]).toEqual([0, 1, 0]);
    expect(await failingPartitions(context.conditions, [STREAM])).toEqual([`${STREAM}/${c}`]);
    const metrics = new DaemonMetrics({ streams: [STREAM], store: context.store, apiClients: [context.client], budget: context.budgets, processMetrics: false, conditions: context.conditions, pageTrust: pageTrustSource(context.store) });
    const text = await metrics.registry.metrics();
    const labels = (partition: string) => `connection="default",stream="${STREAM}",partition="${partition}"`;
    expect(text).toContain(`bizops_partition_condition{${labels(c!)},condition="failing"} 1`);
    expect(text).toContain(`bizops_partition_condition{${labels(a!)},condition="ok"} 1`);
    expect(text).toContain(`bizops_partition_consecutive_failures{${labels(c!)}} 2`);
    expect(text).toContain(`bizops_partition_records_quarantined{${labels(b!)}} 1`);
    expect(text).toContain(`bizops_partition_records{${labels(a!)},state="live"} ${truthIds(sim, a!).length}`);
    expect(text).toMatch(new RegExp(`bizops_partition_last_success_timestamp_seconds\\{${labels(a!)}\\} \\d+`));

    // The location answers again: it recovers by name.
    sim.faults.clear();
    expect((await context.engine.run(STREAM, 'sync')).status).toBe('succeeded');
    expect(await context.conditions.read(STREAM, c!)).toMatchObject({ condition: 'ok', failedRuns: 0 });
    const recovered = await context.connection.all<{ partition_value: string | null }>("SELECT partition_value FROM changes WHERE seq > ? AND type = 'stream.recovered' ORDER BY seq", [seq]);
    expect(recovered.map((event) => event.partition_value)).toEqual([null, c]);
  });
});
