/**
 * Scan memory (docs/sync.md "Scan memory"): a complete scan keeps only its latest first listings in
 * memory and asks the mirror's scan marks for the rest, so memory stays flat in the number of
 * records (the figure: `npm run bench -- memory`). Here the engine keeps 150 or 100 listings of scans
 * of 350 and 800 records, so every drift gap and tie re-read at the end reads positions the
 * memory forgot: the scans must still be exactly as complete and correct as with a memory of all.
 */
import { describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import type { Context } from '../../jobs/context.ts';
import { ScanMemory } from '../../src/sync/scan-memory.ts';
import { SyncEngine } from '../../src/sync/sync-engine.ts';
import { expectMirrorEqualsGroundTruth, syncFixtures } from '../helpers.ts';

const fixtures = syncFixtures();
const ANCHOR = Date.UTC(2026, 0, 1);

/** An engine on the context's client and mirror keeping `scanMemory` first listings per complete scan. */
function forgetfulEngine(context: Context, scanMemory: number): SyncEngine {
  return new SyncEngine({ client: context.client, store: context.store, scanMemory });
}

/** Ids the simulator lists that scan `scanNumber` did not mark seen. */
async function unseenInScan(context: Context, sim: RunningSimulator, table: string, stream: 'onboardings' | 'transactions', scanNumber: number): Promise<string[]> {
  const seen = new Set((await context.connection.all<{ id: string }>(`SELECT id FROM ${table} WHERE last_seen_scan = ?`, [scanNumber])).map((row) => row.id));
  return (sim.world.groundTruth(stream) as { id: string }[]).map((record) => record.id).filter((id) => !seen.has(id));
}

describe('ScanMemory', () => {
  it('keeps the latest `limit` first listings, the oldest dropped first; without a limit, every one', () => {
    const bounded = new ScanMemory(3);
    for (let index = 0; index < 10; index += 1) bounded.remember(`id${index}`, index);
    expect(bounded.size).toBe(3);
    expect(bounded.bounded).toBe(true);
    expect(['id6', 'id7', 'id8', 'id9'].map((id) => bounded.has(id))).toEqual([false, true, true, true]);
    bounded.removed = 2;
    bounded.remember('id10', 10);
    expect(bounded.get('id10')).toEqual({ position: 10, removed: 2, added: 0 });
    const all = new ScanMemory();
    for (let index = 0; index < 1_000; index += 1) all.remember(`id${index}`, index);
    expect(all.size).toBe(1_000);
    expect(all.bounded).toBe(false);
    expect(() => new ScanMemory(0)).toThrow(/^limit: must be an integer >= 1, got 0/);
  });
});

describe('a complete scan with a memory far shorter than the list', () => {
  it('one onboarding completes after every page (drift gaps read at the end, behind what the memory holds): every scan complete, every record still listed seen, completions recorded within two syncs', async () => {
    const { sim, context } = await fixtures.start({ size: { onboardings: 350 }, anchor: ANCHOR, seed: 4 });
    (sim.world.streamRecords('onboardings') as { createdAt: string }[]).forEach((record, index) => (record.createdAt = new Date(ANCHOR - 10_000_000 + index * 1000).toISOString()));
    sim.world.touch('onboardings');
    const engine = forgetfulEngine(context, 150);
    const completed = new Map<string, number>();
    let step = 0;
    for (let sync = 1; sync <= 4; sync += 1) {
      const result = await engine.run('onboardings', 'sync', {
        onProgress: () => {
          const list = sim.world.streamRecords('onboardings') as { id: string }[];
          const victim = list[(step++ * 37) % list.length]!;
          sim.world.completeOnboarding(victim.id);
          completed.set(victim.id, sync);
        },
      });
      expect(result.status).toBe('succeeded');
      expect(result.driftStepBacks).toBeGreaterThan(0);
      expect(result.scan?.outcome).toBe('complete');
      expect(await unseenInScan(context, sim, 'onboardings', 'onboardings', (await context.store.readSyncState('onboardings')).scanNumber)).toEqual([]);
    }
    const recorded = new Set((await context.connection.all<{ record_id: string }>("SELECT record_id FROM changes WHERE type = 'onboarding.completed'")).map((row) => row.record_id));
    for (const [id, during] of completed) if (during <= 2) expect(recorded.has(id), `${id} completed during sync ${during}`).toBe(true);
    const live = new Set((sim.world.groundTruth('onboardings') as { id: string }[]).map((record) => record.id));
    expect([...recorded].filter((id) => live.has(id))).toEqual([]);
  });

  it('tie runs longer than a page in a new order per request (re-read at the end, far behind what the memory holds): the first scan lists every record, no deletion after two reconciliations', async () => {
    const { sim, context } = await fixtures.start({ size: { transactions: 800 }, createdInBursts: 150, anchor: ANCHOR });
    sim.faults.inject({ kind: 'unstable-order', seed: 2, times: 1_000_000, match: { path: '/transactions', method: 'GET' } });
    const engine = forgetfulEngine(context, 100);
    const first = await engine.run('transactions', 'backfill');
    expect(first.scan!.repeatedIds).toBeGreaterThan(100);
    expect(first.scan).toMatchObject({ outcome: 'complete', total: 800, distinctIds: 800 });
    await expectMirrorEqualsGroundTruth(context, sim, 'transactions');
    for (let run = 0; run < 2; run += 1) expect((await engine.run('transactions', 'reconcile')).status).toBe('succeeded');
    expect(await context.connection.get("SELECT COUNT(*) AS n FROM changes WHERE type = 'transaction.deleted'")).toEqual({ n: 0 });
    expect(await unseenInScan(context, sim, 'transactions', 'transactions', (await context.store.readSyncState('transactions')).scanNumber)).toEqual([]);
  });
});
