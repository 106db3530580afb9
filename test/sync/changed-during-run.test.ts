/**
 * A deal changed while an incremental run of deals is under way, after the page its position
 * falls on was read: that run does not list it, and a later change in the same run (listed on a
 * later page) raises the stream's high water above its stamp. The next run must still list it
 * (docs/sync.md "Incremental", "Record clock"): it asks from the earlier of the cursor (the run's
 * first page, not its end) and the high water, each minus the overlap. The overlap is 0 here so
 * nothing but those two bounds can catch it.
 */
import { describe, expect, it } from 'vitest';
import type { Context } from '../../jobs/context.ts';
import { expectMirrorEqualsGroundTruth, syncFixtures } from '../helpers.ts';

const fixtures = syncFixtures();

const updatesOf = async (ctx: Context, id: string) =>
  (await ctx.connection.all<{ type: string }>('SELECT type FROM changes WHERE stream = ? AND record_id = ? AND type = ? ORDER BY seq', ['deals', id, 'deal.updated'])).length;

describe('a deal changed during an incremental run', () => {
  it('is missed by that run (it entered the list before the page being read) and listed by the next: its deal.updated row exists', async () => {
    const { sim, context: ctx } = await fixtures.start({ size: { deals: 150, transactions: 5 } }, { sync: { overlapSeconds: 0 } });
    expect((await ctx.engine.run('deals', 'backfill')).status).toBe('succeeded');

    // 110 changes: the next sync lists them on two pages (createdAt order, 100 a page).
    const deals = sim.world.deals;
    for (const deal of deals.slice(10, 120)) sim.world.updateDeal(deal.id, { title: `busy ${deal.id}` });
    const early = deals[0]!.id;
    const late = deals[130]!.id;
    let changedDuringRun = false;
    const during = await ctx.engine.run('deals', 'sync', {
      onProgress: (progress) => {
        if (progress.pages !== 1 || changedDuringRun) return;
        changedDuringRun = true;
        // After the first page: `early` enters the list ahead of it (not listed by this run),
        // then `late` enters it at the end (listed on the second page, raising the high water).
        sim.world.updateDeal(early, { title: `changed during the run ${early}` });
        sim.world.updateDeal(late, { title: `changed during the run ${late}` });
      },
    });
    expect(during.status).toBe('succeeded');
    expect(changedDuringRun).toBe(true);
    expect(await updatesOf(ctx, late)).toBe(1);
    expect(await updatesOf(ctx, early)).toBe(0);

    const next = await ctx.engine.run('deals', 'sync');
    expect(next.status).toBe('succeeded');
    expect(await updatesOf(ctx, early)).toBe(1);
    expect(await updatesOf(ctx, late)).toBe(1);
    await expectMirrorEqualsGroundTruth(ctx, sim, 'deals');
  });
});
