/**
 * The changelog's retention (docs/mirror.md "Retention"): change rows older than the cut-off are
 * pruned as a prefix, in small batches, never past a webhook endpoint's cursor, its held-back or
 * given-up events, or a named consumer's cursor, and never the newest row; `status` shows the
 * oldest seq kept; `bizops-sync changes prune --before DATE` does it by hand.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readStatus } from '../../jobs/status.ts';
import { ChangelogRetention } from '../../src/daemon/changelog-retention.ts';
import { acknowledge, registerConsumer } from '../../src/notify/pull/consumers.ts';
import { changelogPrunedThrough, pruneChangelog } from '../../src/notify/retention.ts';
import { insertAttempts } from '../../src/notify/delivery/attempts.ts';
import { registerEndpoint, resetCursor } from '../../src/notify/delivery/endpoint-store.ts';
import { insertFailedDelivery } from '../../src/notify/delivery/failed-deliveries.ts';
import { insertHeldEvents } from '../../src/notify/delivery/held-events.ts';
import { runCli } from '../helpers.ts';
import { cliEnv } from '../daemon/helpers.ts';
import { insertChanges, tempMirror, type InsertedChange, type TempMirror } from './helpers.ts';

const DAY_MS = 86_400_000;
let mirror: TempMirror;

beforeEach(async () => {
  mirror = await tempMirror();
});
afterEach(async () => {
  await mirror.cleanup();
});

const monthAgo = () => new Date(Date.now() - 30 * DAY_MS);

async function seqs(): Promise<number[]> {
  return (await mirror.connection.all<{ seq: number }>('SELECT seq FROM changes ORDER BY seq')).map((row) => Number(row.seq));
}

/** 10 changes from 40 days ago, then 3 from now. */
async function oldAndNew(): Promise<{ old: InsertedChange[]; recent: InsertedChange[] }> {
  const old = await insertChanges(mirror.connection, 10, { occurredAt: new Date(Date.now() - 40 * DAY_MS) });
  const recent = await insertChanges(mirror.connection, 3);
  return { old, recent };
}

describe('the changelog retention', () => {
  it('prunes the old prefix in small batches, stopping at a consumer\'s cursor until it moves', async () => {
    await oldAndNew();
    await registerConsumer(mirror.connection, 'erp', 4);
    const first = await pruneChangelog(mirror.connection, { before: monthAgo(), endpoints: [], batchRows: 3 });
    expect(first).toMatchObject({ rows: 4, prunedThrough: 4, oldestSeq: 5, heldBy: 'consumer erp' });
    expect(first.bytes).toBeGreaterThan(0);
    expect(await seqs()).toEqual([5, 6, 7, 8, 9, 10, 11, 12, 13]);
    await acknowledge(mirror.connection, 'erp', 13);
    const second = await pruneChangelog(mirror.connection, { before: monthAgo(), endpoints: [], batchRows: 3 });
    // Every old change, in batches of three; the recent ones are younger than the cut-off.
    expect(second).toMatchObject({ rows: 6, prunedThrough: 10, oldestSeq: 11, heldBy: null });
    expect(await seqs()).toEqual([11, 12, 13]);
    expect((await readStatus(mirror.path)).oldestSeq).toBe(11);
    // Nothing more to prune: nothing changes.
    expect(await pruneChangelog(mirror.connection, { before: monthAgo(), endpoints: [] })).toMatchObject({ rows: 0, prunedThrough: 10 });
  });

  it("never prunes what a configured webhook endpoint has not received: its cursor, its held-back events, the events it gave up on; nor the newest change", async () => {
    const { old } = await oldAndNew();
    await registerEndpoint(mirror.connection, 'crm', 'http://127.0.0.1:9/hooks');
    await resetCursor(mirror.connection, 'crm', 8);
    await insertHeldEvents(mirror.connection, [
      { endpoint: 'crm', seq: 6, eventId: old[5]!.eventId, type: old[5]!.type, stream: 'deals', recordId: old[5]!.recordId, attempts: 2, nextAttemptAt: new Date().toISOString(), heldAt: new Date().toISOString(), lastStatus: 422, lastError: 'HTTP 422' },
    ]);
    expect(await pruneChangelog(mirror.connection, { before: monthAgo(), endpoints: ['crm'] })).toMatchObject({ rows: 5, oldestSeq: 6, heldBy: 'webhook endpoint crm (an event held back)' });
    await mirror.connection.run('DELETE FROM webhook_held_events');
    await insertFailedDelivery(mirror.connection, { endpoint: 'crm', seq: 7, eventId: old[6]!.eventId, type: old[6]!.type, attempts: 8, lastStatus: 500, lastError: 'HTTP 500', failedAt: new Date().toISOString() });
    expect(await pruneChangelog(mirror.connection, { before: monthAgo(), endpoints: ['crm'] })).toMatchObject({ rows: 1, oldestSeq: 7, heldBy: 'webhook endpoint crm (an event given up on, not yet replayed)' });
    await mirror.connection.run('DELETE FROM webhook_failed_deliveries');
    expect(await pruneChangelog(mirror.connection, { before: monthAgo(), endpoints: ['crm'] })).toMatchObject({ rows: 2, oldestSeq: 9, heldBy: 'webhook endpoint crm (its cursor)' });
    // An endpoint no longer configured holds nothing.
    expect(await pruneChangelog(mirror.connection, { before: monthAgo(), endpoints: [] })).toMatchObject({ oldestSeq: 11, heldBy: null });
    // Everything older than now, but the newest change stays (the changelog's end stays readable).
    expect(await pruneChangelog(mirror.connection, { before: new Date(Date.now() + DAY_MS), endpoints: [] })).toMatchObject({ oldestSeq: 13, heldBy: 'the newest change' });
    expect(await seqs()).toEqual([13]);
    expect(await changelogPrunedThrough(mirror.connection)).toBe(12);
  });

  it('the daemon\'s retention prunes on its own and the delivery attempts older than a week go too', async () => {
    await oldAndNew();
    await insertAttempts(mirror.connection, [
      { endpoint: 'crm', seq: 1, eventId: 'evt_old', type: 'deal.updated', attempt: 1, attemptedAt: new Date(Date.now() - 8 * DAY_MS).toISOString(), outcome: 'failed', status: 500, latencyMs: 3, error: 'HTTP 500', response: '' },
      { endpoint: 'crm', seq: 12, eventId: 'evt_new', type: 'deal.updated', attempt: 1, attemptedAt: new Date().toISOString(), outcome: 'delivered', status: 204, latencyMs: 3, error: null, response: '' },
    ]);
    const runs: number[] = [];
    const retention = new ChangelogRetention({ executor: mirror.connection, retainDays: 30, endpoints: [], onPruned: (result) => runs.push(result.rows) });
    retention.start();
    await expect.poll(() => runs.length, { timeout: 10_000 }).toBeGreaterThan(0);
    await retention.stop();
    expect(runs[0]).toBe(10);
    expect(await seqs()).toEqual([11, 12, 13]);
    expect((await mirror.connection.all<{ event_id: string }>('SELECT event_id FROM webhook_attempts')).map((row) => row.event_id)).toEqual(['evt_new']);
    // retainDays 0 keeps every change.
    const keepAll = new ChangelogRetention({ executor: mirror.connection, retainDays: 0, endpoints: [] });
    expect(await keepAll.runOnce()).toMatchObject({ rows: 0 });
  });

  it('bizops-sync changes prune --before DATE prunes by hand and says what held it; a bad date is a usage error', async () => {
    await oldAndNew();
    await registerConsumer(mirror.connection, 'erp', 7);
    const env = cliEnv({ BIZOPS_BASE_URL: 'http://127.0.0.1:1', BIZOPS_TOKEN: 'token-0123456789', BIZOPS_DB: mirror.path });
    const before = new Date(Date.now() - 30 * DAY_MS).toISOString().slice(0, 10);
    const pruned = await runCli(['changes', 'prune', '--before', before], env);
    expect(pruned.stderr).toBe('');
    expect(pruned.code).toBe(0);
    expect(pruned.stdout).toMatch(/^pruned 7 changes \(\d+ characters of text\) through seq 7; the changelog starts at seq 8\nstopped short of .*: consumer erp has not received the events after it\n$/);
    const bad = await runCli(['changes', 'prune', '--before', 'last tuesday'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^bizops-sync: --before: must be an ISO 8601 date/);
    // The tail still works beside the subcommand.
    const tail = await runCli(['changes', '--since', '10'], env);
    expect(tail.code).toBe(0);
    expect(tail.stdout.trim().split('\n').map((line) => (JSON.parse(line) as { seq: number }).seq)).toEqual([11, 12, 13]);
  });
});
