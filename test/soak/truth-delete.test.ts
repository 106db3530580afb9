/**
 * The soak's `delete` step (soak/truth.ts) never removes a record a soak write made: the oracle
 * counts that write's effects by its mark, and a deleted one read as "succeeded with 0 effects"
 * (a CI soak, seed 1415059024 on SQLite: a transaction a write-burst created, then deleted by step 9).
 */
import { afterEach, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { TruthTimeline } from '../../soak/truth.ts';
import { simulator } from '../helpers.ts';

let sim: RunningSimulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

it('deletes any other record, drawn by its pick, but never one carrying a soak write\'s mark', async () => {
  sim = await simulator({ size: { transactions: 3 } });
  const timeline = new TruthTimeline(sim);
  const written = sim.world.createTransaction({ description: 'soak s1-2-3' });
  expect(sim.world.transactions.map((record) => record.id).indexOf(written.id)).toBe(3); // pick 3 draws it among all four
  for (const pick of [3, 3, 3, 3]) timeline.delete('transactions', pick);
  expect(sim.world.transactions.map((record) => record.id)).toEqual([written.id]);
});
