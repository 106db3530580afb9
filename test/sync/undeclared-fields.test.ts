/**
 * Every field the API returns counts (docs/mirror.md "Fields the spec does not show"): the
 * simulator's list items carry fields the spec does not show (`notes` on transactions, `user.email`
 * on onboardings); a later change of only that field reaches `raw` and the changelog, one update per
 * changed record, and the field's first appearance is announced once per stream.
 */
import { describe, expect, it } from 'vitest';
import type { Context } from '../../jobs/context.ts';
import { readStatus } from '../../jobs/status.ts';
import { STREAMS } from '../../src/streams/definitions.ts';
import { syncFixtures } from '../helpers.ts';

const fixtures = syncFixtures();

async function changesOfType(context: Context, type: string): Promise<{ record_id: string; data: string; stream: string }[]> {
  return context.connection.all<{ record_id: string; data: string; stream: string }>('SELECT record_id, data, stream FROM changes WHERE type = ? ORDER BY seq', [type]);
}

async function rawOf(context: Context, table: string): Promise<Map<string, Record<string, unknown>>> {
  const rows = await context.connection.all<{ id: string; raw: string }>(`SELECT id, raw FROM ${table}`);
  return new Map(rows.map((row) => [row.id, JSON.parse(row.raw) as Record<string, unknown>]));
}

describe('fields the spec does not show', () => {
  it('a change of only an undeclared field updates raw and emits one update event per changed record, over two complete scans', async () => {
    const { sim, context } = await fixtures.start({ size: { transactions: 120, deals: 5, onboardings: 15 } });
    sim.world.exposeUndeclaredFields('transactions.notes', 'onboardings.user.email');
    const transactions = sim.world.transactions;
    const onboardings = sim.world.onboardings;
    for (const record of transactions) sim.world.updateTransaction(record.id, { notes: `first note of ${record.id}` });
    for (const record of onboardings) sim.world.setOnboardingEmail(record.id, `${record.id}@first.example`);

    expect((await context.engine.run('transactions', 'backfill')).status).toBe('succeeded');
    expect((await context.engine.run('onboardings', 'backfill')).status).toBe('succeeded');
    // Announced once per stream, not per record; the records were created, not updated.
    expect((await changesOfType(context, 'schema.field_added')).map((change) => [change.stream, change.record_id])).toEqual([
      ['transactions', 'notes'],
      ['onboardings', 'user.email'],
    ]);
    const [notesAdded] = await changesOfType(context, 'schema.field_added');
    expect(JSON.parse(notesAdded!.data)).toMatchObject({ record: { stream: 'transactions', field: 'notes', exampleRecordId: expect.stringMatching(/^txn_/) } });
    expect(await changesOfType(context, 'transaction.updated')).toEqual([]);

    // Only the undeclared field changes upstream.
    for (const record of transactions) sim.world.updateTransaction(record.id, { notes: `second note of ${record.id}` });
    for (const record of onboardings) sim.world.setOnboardingEmail(record.id, `${record.id}@second.example`);
    for (let scan = 0; scan < 2; scan += 1) {
      expect((await context.engine.run('transactions', 'reconcile')).status).toBe('succeeded');
      expect((await context.engine.run('onboardings', 'sync')).status).toBe('succeeded');
    }

    const transactionRaw = await rawOf(context, 'transactions');
    expect([...transactionRaw.values()].filter((raw) => String(raw.notes).startsWith('second note')).length).toBe(transactions.length);
    const onboardingRaw = await rawOf(context, 'onboardings');
    expect([...onboardingRaw.values()].filter((raw) => String((raw.user as { email: string }).email).endsWith('@second.example')).length).toBe(onboardings.length);

    const updates = await changesOfType(context, 'transaction.updated');
    expect(updates).toHaveLength(transactions.length);
    expect(new Set(updates.map((update) => update.record_id)).size).toBe(transactions.length);
    const first = transactions[0]!;
    expect(JSON.parse(updates.find((update) => update.record_id === first.id)!.data).changes).toEqual({ notes: { old: `first note of ${first.id}`, new: `second note of ${first.id}` } });
    const onboardingUpdates = await changesOfType(context, 'onboarding.updated');
    expect(onboardingUpdates).toHaveLength(onboardings.length);
    expect(JSON.parse(onboardingUpdates[0]!.data).changes).toEqual({ 'user.email': { old: expect.stringMatching(/@first\.example$/), new: expect.stringMatching(/@second\.example$/) } });
    expect(await changesOfType(context, 'schema.field_added')).toHaveLength(2);

    // `status` lists them; the typed columns stay as declared.
    const status = await readStatus(context.config.dbPath);
    expect(status.streams.find((stream) => stream.stream === 'transactions')!.undeclaredFields).toMatchObject([{ field: 'notes' }]);
    expect(status.streams.find((stream) => stream.stream === 'onboardings')!.undeclaredFields).toMatchObject([{ field: 'user.email' }]);
    expect(status.streams.find((stream) => stream.stream === 'deals')!.undeclaredFields).toEqual([]);
    const columns = await context.connection.all<{ name: string }>(
      context.connection.dialect === 'sqlite'
        ? "SELECT name FROM pragma_table_info('transactions')"
        : "SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'transactions'",
    );
    expect(columns.map((column) => column.name)).not.toContain('notes');
  });

  it('lists served with every item\'s keys in reverse order (an undeclared field among them) change nothing: no change row, raw and content hash byte for byte', async () => {
    const { sim, context } = await fixtures.start({ size: { transactions: 120, deals: 40, onboardings: 15 } });
    sim.world.exposeUndeclaredFields('transactions.notes', 'onboardings.user.email');
    for (const record of sim.world.transactions) sim.world.updateTransaction(record.id, { notes: `note of ${record.id}` });
    const streams = ['transactions', 'deals', 'onboardings'] as const;
    for (const stream of streams) expect((await context.engine.run(stream, 'backfill')).status).toBe('succeeded');
    const rows = async () =>
      Object.fromEntries(
        await Promise.all(
          streams.map(async (stream) => [stream, await context.connection.all<{ id: string; raw: string; content_hash: string }>(`SELECT id, raw, content_hash FROM ${STREAMS[stream].table} ORDER BY id`)] as const),
        ),
      );
    const before = await rows();
    const lastSeq = (await context.connection.all<{ seq: number }>('SELECT MAX(seq) AS seq FROM changes'))[0]!.seq;
    expect(before.transactions).toHaveLength(120);
    // As listed, a transaction's keys come in its schema's order with `notes` last.
    expect(Object.keys(JSON.parse(before.transactions![0]!.raw) as object).at(-1)).toBe('notes');

    // Every list page from now on with its items' keys reversed (`notes` first), over two complete scans.
    sim.faults.inject({ kind: 'key-order', times: 10_000, match: { method: 'GET' } });
    for (let scan = 0; scan < 2; scan += 1) {
      for (const stream of streams) expect((await context.engine.run(stream, 'reconcile')).status).toBe('succeeded');
    }
    expect(sim.faults.list()[0]!.remaining).toBeLessThan(10_000);
    expect(await context.connection.all('SELECT seq, type, record_id FROM changes WHERE seq > ?', [lastSeq])).toEqual([]);
    expect(await rows()).toEqual(before);
  });

  it('the API starts returning a field on every record at once (a deploy): announced once, raw rewritten, no record updated, on every page; later changes of it are updates; a write response field a later list item lacks is not a change', async () => {
    const { sim, context } = await fixtures.start({ size: { transactions: 130, deals: 2, onboardings: 110 } });
    await context.engine.run('transactions', 'backfill');
    await context.engine.run('onboardings', 'backfill');
    const afterBackfill = await context.store.lastSeq();

    // Every list item now carries `notes` and `user.email`, with values (records stamped as they
    // were: a deploy, not an edit): one schema.field_added each, not one update per record on every
    // page after the first (before: 30 and 10).
    for (const record of sim.world.transactions) record.notes = `deployed note of ${record.id}`;
    for (const record of sim.world.onboardings) record.email = `${record.id}@deployed.example`;
    sim.world.exposeUndeclaredFields('transactions.notes', 'onboardings.user.email');
    await context.engine.run('transactions', 'reconcile');
    await context.engine.run('onboardings', 'sync');
    expect((await changesOfType(context, 'schema.field_added')).map((change) => change.record_id)).toEqual(['notes', 'user.email']);
    expect(await context.store.lastSeq()).toBe(afterBackfill + 2);
    const raws = [...(await rawOf(context, 'transactions')).values()];
    expect(raws.filter((raw) => 'notes' in raw)).toHaveLength(130);
    const onboardingRaws = [...(await rawOf(context, 'onboardings')).values()];
    expect(onboardingRaws.filter((raw) => 'email' in (raw.user as object))).toHaveLength(110);
    // Verify agrees: nothing differs (the field is in raw now).
    expect(await context.engine.run('transactions', 'reconcile')).toMatchObject({ changes: 0 });
    expect(await context.store.lastSeq()).toBe(afterBackfill + 2);
    const changed = sim.world.onboardings[105]!;
    sim.world.setOnboardingEmail(changed.id, 'someone@later.example');
    await context.engine.run('onboardings', 'sync');
    expect((await changesOfType(context, 'onboarding.updated')).map((update) => [update.record_id, JSON.parse(update.data).changes])).toEqual([
      [changed.id, { 'user.email': { old: `${changed.id}@deployed.example`, new: 'someone@later.example' } }],
    ]);
    const afterOnboarding = await context.store.lastSeq();

    // A write response (more fields than a list item) written through, then the list without them: no update.
    const [noted, other] = sim.world.transactions;
    const item = sim.world.groundTruth('transactions').find((candidate) => candidate.id === other!.id)!;
    await context.store.applyRecords(STREAMS.transactions, [{ ...item, counterpartyName: 'Acme', irsCategory: 'SUPPLIES' }]);
    await context.engine.run('transactions', 'reconcile');
    expect(await context.store.lastSeq()).toBe(afterOnboarding);

    // One record's note changes: one update.
    sim.world.updateTransaction(noted!.id, { notes: 'now noted' });
    await context.engine.run('transactions', 'reconcile');
    const updates = await changesOfType(context, 'transaction.updated');
    expect(updates.map((update) => [update.record_id, JSON.parse(update.data).changes])).toEqual([[noted!.id, { notes: { old: `deployed note of ${noted!.id}`, new: 'now noted' } }]]);
  });
});
