/**
 * Late commits of an ambiguous `transaction.create` (docs/writes.md "Late commits"): the server
 * commits the first send long after the client's request deadline cut it. Time is scaled down (a
 * 300 ms deadline); the simulator's `late-commit` fault commits at a set time after arrival, or only
 * after the re-send committed. Asserted: ledger entries, POSTs, the write's status and its change rows.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { WRITE_DUPLICATED } from '../../src/writes/index.ts';
import { simulator, writeStack, writeTestBed, type WriteStack, type WriteTestBed } from './support.ts';

let sim: RunningSimulator;
let bed: WriteTestBed;
let stack: WriteStack;

beforeEach(async () => {
  sim = await simulator();
  bed = await writeTestBed();
});

afterEach(async () => {
  await stack?.close();
  await sim?.close();
  await bed?.cleanup();
});

function posts(): number {
  return sim.requests.filter((request) => request.method === 'POST' && request.path === '/api/public/v1/transactions').length;
}

describe('a transaction the server commits late', () => {
  it('within the request deadline plus the settle time: found in the ledger, never sent again, one entry', async () => {
    stack = await writeStack(sim, bed, { timeoutMs: 300, worker: { ambiguousSettleMs: 50, ledgerSettleMs: 3000, ledgerLookups: 6 } });
    // Commits 1 s after it arrived: long after the 300 ms deadline cut the request.
    sim.faults.inject({ kind: 'late-commit', ms: 1000, match: { method: 'POST', path: '/transactions' } });
    const description = `Late commit ${Date.now()}`;
    const { id } = await stack.intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 7500, description });
    const write = await stack.finished(id, 30_000);
    expect(sim.world.transactions.filter((transaction) => transaction.description === description)).toHaveLength(1);
    expect(posts()).toBe(1);
    expect(write).toMatchObject({ status: 'succeeded', outcome: expect.stringMatching(/found in the ledger after an ambiguous outcome/) });
  });

  it('after the re-send: needs_review naming both ledger records, with a write.duplicated change; never succeeded over two', async () => {
    stack = await writeStack(sim, bed, { timeoutMs: 300, worker: { ambiguousSettleMs: 50, ledgerSettleMs: 500, ledgerLookups: 3 } });
    // The first send commits only once the re-send has: two entries, whatever the lookups did.
    sim.faults.inject({ kind: 'late-commit', afterNextMatch: true, match: { method: 'POST', path: '/transactions' } });
    const description = `Late twice ${Date.now()}`;
    const { id } = await stack.intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 7600, description });
    const write = await stack.finished(id, 30_000);
    const entries = sim.world.transactions.filter((transaction) => transaction.description === description).map((transaction) => transaction.id);
    expect(entries).toHaveLength(2);
    expect(posts()).toBe(2);
    expect(write.status).toBe('needs_review');
    for (const ledgerId of entries) expect(write.outcome).toContain(ledgerId);
    const changes = await bed.connection.all<{ type: string; data: string }>("SELECT type, data FROM changes WHERE stream = 'writes' AND record_id = ? ORDER BY seq", [id]);
    expect(changes.map((change) => change.type)).toEqual(['write.needs_review', WRITE_DUPLICATED]);
    const duplicated = JSON.parse(changes[1]!.data) as { record: { id: string; status: string; result: { ledgerIds: string[] } } };
    expect(duplicated.record).toMatchObject({ id, status: 'needs_review' });
    expect([...duplicated.record.result.ledgerIds].sort()).toEqual([...entries].sort());
  });
});
