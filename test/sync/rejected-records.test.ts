/**
 * One bad record does not stop a stream for ever: an item failing its schema is
 * quarantined in `rejected_records` with a `record.rejected` change, the valid records of its page
 * commit, `status` and `/metrics` count it, and it leaves the quarantine when a run accepts it.
 */
import { describe, expect, it } from 'vitest';
import { describeOnSqlite } from '../sqlite-only.ts';
import { readStatus } from '../../jobs/status.ts';
import type { Context } from '../../jobs/context.ts';
import { DaemonMetrics, pageTrustSource } from '../../src/daemon/metrics.ts';
import { RejectedRecords } from '../../src/mirror/rejected-records.ts';
import { runCli, simulator, statusOutput, syncFixtures, tempDir, testMirrorLocation } from '../helpers.ts';

const fixtures = syncFixtures();

const liveDeals = async (ctx: Context) => ((await ctx.connection.get('SELECT COUNT(*) AS n FROM deals WHERE deleted_at IS NULL')) as { n: number }).n;
const changesOfType = async (ctx: Context, type: string) => (await ctx.connection.all('SELECT record_id, data FROM changes WHERE type = ? ORDER BY seq', [type])) as { record_id: string; data: string }[];

function metricsOf(ctx: Context): DaemonMetrics {
  const metrics = new DaemonMetrics({ streams: ['deals'], store: ctx.store, pageTrust: pageTrustSource(ctx.store), apiClients: [ctx.client], budget: ctx.budgets, processMetrics: false });
  ctx.onChanges((changes) => metrics.recordChanges(changes));
  return metrics;
}

describe('quarantined records', () => {
  it('an invalid item is quarantined, the rest of its page commits, and a later run that accepts it releases it', async () => {
    const { sim, context: ctx } = await fixtures.start({ size: { deals: 30, transactions: 5 } });
    const metrics = metricsOf(ctx);
    sim.faults.inject({ kind: 'invalid-item', index: 2, field: 'status', value: { state: 'WON', sensitiveData: { iban: 'DE-secret-iban' } }, times: 100, match: { path: '/deals' } });

    const first = await ctx.engine.run('deals', 'backfill');
    // The quarantined item was listed: the scan is complete (its id counts), the cursor moves on.
    expect(first).toMatchObject({ status: 'succeeded', records: 29, rejected: 1, scan: { outcome: 'complete' } });
    expect(await liveDeals(ctx)).toBe(29);
    const [row] = await new RejectedRecords(ctx.store).list('deals');
    expect(row).toMatchObject({ stream: 'deals', recordId: expect.stringMatching(/^deal_/), timesSeen: 1 });
    expect(row!.error).toMatch(/item 2 field status/);
    expect(row!.raw).toMatchObject({ id: row!.recordId, status: { state: 'WON' } });
    expect(JSON.stringify(row!.raw)).not.toContain('DE-secret-iban');
    const rejectedChanges = await changesOfType(ctx, 'record.rejected');
    expect(rejectedChanges.map((c) => c.record_id)).toEqual([row!.recordId]);
    expect(rejectedChanges[0]!.data).not.toContain('DE-secret-iban');
    expect(JSON.parse(rejectedChanges[0]!.data)).toMatchObject({ error: expect.stringMatching(/field status/) });
    expect((await readStatus(ctx.config.dbPath)).streams.find((s) => s.stream === 'deals')).toMatchObject({ rejected: 1, lastError: null });
    let exposition = (await metrics.render()).body;
    expect(exposition).toMatch(/bizops_records_quarantined\{connection="default",stream="deals"\} 1/);
    expect(exposition).toMatch(/bizops_records_rejected_total\{connection="default",stream="deals"\} 1/);

    // Listed again, still invalid and unchanged: counted, no second change row.
    expect(await ctx.engine.run('deals', 'reconcile')).toMatchObject({ status: 'succeeded', rejected: 1, scan: { outcome: 'complete' } });
    expect((await new RejectedRecords(ctx.store).list('deals'))[0]!.timesSeen).toBe(2);
    expect(await changesOfType(ctx, 'record.rejected')).toHaveLength(1);

    // The API serves it valid again: the next run that lists it accepts it and empties the quarantine.
    sim.faults.clear();
    expect(await ctx.engine.run('deals', 'reconcile')).toMatchObject({ status: 'succeeded', rejected: 0 });
    expect(await liveDeals(ctx)).toBe(30);
    expect(await new RejectedRecords(ctx.store).count('deals')).toBe(0);
    expect((await changesOfType(ctx, 'deal.created')).map((c) => c.record_id)).toContain(row!.recordId);
    expect((await readStatus(ctx.config.dbPath)).streams.find((s) => s.stream === 'deals')!.rejected).toBe(0);
    exposition = (await metrics.render()).body;
    expect(exposition).toMatch(/bizops_records_quarantined\{connection="default",stream="deals"\} 0/);
  });

  it('a mirrored record that turns invalid is not tombstoned by the complete scans that list it invalid', async () => {
    const { sim, context: ctx } = await fixtures.start({ size: { deals: 30, transactions: 5 } });
    expect((await ctx.engine.run('deals', 'backfill')).status).toBe('succeeded');
    sim.faults.inject({ kind: 'invalid-item', index: 0, times: 100, match: { path: '/deals' } });
    for (let scan = 0; scan < 3; scan++) expect(await ctx.engine.run('deals', 'reconcile')).toMatchObject({ status: 'succeeded', rejected: 1, tombstones: 0, scan: { outcome: 'complete' } });
    expect(await liveDeals(ctx)).toBe(30);
    expect(await changesOfType(ctx, 'deal.deleted')).toHaveLength(0);
    expect(await new RejectedRecords(ctx.store).count('deals')).toBe(1);
  });

  it('incremental syncs go on past a quarantined record: later changes are mirrored', async () => {
    const { sim, context: ctx } = await fixtures.start({ size: { deals: 30, transactions: 5 } });
    expect((await ctx.engine.run('deals', 'backfill')).status).toBe('succeeded');
    const [bad, good] = sim.world.deals;
    sim.world.updateDeal(bad!.id, { title: 'turns invalid' });
    sim.faults.inject({ kind: 'invalid-item', index: 0, times: 100, match: { path: '/deals' } });
    const sync = await ctx.engine.run('deals', 'sync');
    expect(sync).toMatchObject({ status: 'succeeded', rejected: 1 });
    sim.world.updateDeal(good!.id, { title: 'renamed after' });
    // Both are listed again (the overlap); the first item stays invalid, the other commits.
    const next = await ctx.engine.run('deals', 'sync');
    expect(next.status).toBe('succeeded');
    const title = ((await ctx.connection.get('SELECT title FROM deals WHERE id = ?', [good!.id])) as { title: string }).title;
    expect(title).toBe('renamed after');
  });
});

// The command's exit code and line; the quarantine itself is tested on both back ends above.
describeOnSqlite('the CLI', () => {
  it('backfill exits 0 with the invalid record quarantined, and status counts it', async () => {
    const sim = await simulator({ size: { deals: 12, transactions: 5, onboardings: 3 } });
    const dir = tempDir();
    try {
      const env = { PATH: process.env.PATH, HOME: process.env.HOME, BIZOPS_LOG_FORMAT: 'json', BIZOPS_BASE_URL: sim.url, BIZOPS_TOKEN: String(sim.tokens.admin), BIZOPS_DB: testMirrorLocation(dir.file('mirror.db')) };
      sim.faults.inject({ kind: 'invalid-item', index: 4, times: 100, match: { path: '/deals' } });
      const backfill = await runCli(['backfill', '--stream', 'deals', '--no-progress'], env);
      expect(backfill.code).toBe(0);
      expect(backfill.stdout).toMatch(/deals: succeeded .*11 records.*1 invalid record quarantined/);
      expect(await statusOutput(env.BIZOPS_DB)).toContain('deals: 1 record(s) quarantined in rejected_records');
      // `status --json` prints readStatus's answer as JSON.
      expect((await readStatus(env.BIZOPS_DB)).streams.find((s) => s.stream === 'deals')!.rejected).toBe(1);
    } finally {
      await sim.close();
      dir.remove();
    }
  });
});
