/**
 * Bad characters and hostile shapes (docs/writes.md "Intake", docs/sync.md "Invalid records"):
 * intake refuses control characters and unpaired surrogates in every text field of every write
 * kind, naming the field and the rule, caps text the spec leaves open, and refuses a payload nested
 * past the depth limit before anything recursive looks at it; a record from the API that either
 * mirror cannot store (src/client/storable-json.ts: a NUL, an unpaired surrogate, in a value or a
 * key, nesting too deep) is quarantined like an invalid item and never fails its stream, including
 * one that arrives in a write's response (its write-through, the record clock's read of the stored
 * result). Runs on both back ends.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { RejectedRecords } from '../../src/mirror/rejected-records.ts';
import { WriteValidationError, type WriteKindName } from '../../src/writes/index.ts';
import { WRITE_KIND_NAMES } from '../../src/writes/kinds/index.ts';
import { WriteIntake } from '../../src/writes/queue/index.ts';
import { MAX_TEXT_CHARACTERS, validateWritePayload } from '../../src/writes/validation.ts';
import { isStorable, MAX_JSON_DEPTH } from '../../src/client/storable-json.ts';
import { syncFixtures, waitFor } from '../helpers.ts';
import { deleteKeys, REDIS_URL, writeTestBed } from './support.ts';

/** `[[[...]]]`, `levels` arrays deep, built without recursion. */
function nested(levels: number): unknown {
  let value: unknown = [];
  for (let level = 1; level < levels; level += 1) value = [value];
  return value;
}

/** A valid payload of each kind with every text field it has filled in (clock-in has none). */
const FULL_PAYLOADS: Record<WriteKindName, Record<string, unknown>> = {
  'transaction.create': {
    type: 'INCOME',
    amount: 100,
    description: 'Catering',
    date: '2026-01-01',
    dueDate: '2026-01-02',
    notes: 'n',
    locationId: 'loc_1',
    legalEntityId: 'le_1',
    irsCategory: 'c',
    counterpartyName: 'Ann',
    counterpartyEmail: 'ann@example.org',
  },
  'calendar.rsvp': { eventId: 'evt_1', response: 'DECLINED', attendeeId: 'att_1', note: 'On leave', occurrenceStart: '2026-03-01T09:00:00Z' },
  'timeclock.clock_in': {},
  'deal.close': { dealId: 'deal_1', status: 'WON', reason: 'Signed' },
  'email.send': { from: 'a@example.org', to: 'b@example.org', subject: 'Hi', text: 'Hello', html: '<p>Hello</p>', cc: ['c@example.org'], bcc: ['d@example.org'] },
  'email_draft.update': { draftId: 'draft_1', from: 'a@example.org', to: ['b@example.org'], cc: ['c@example.org'], bcc: ['d@example.org'], subject: 'Menu', text: 'Friday' },
  'performance_review.create': { employeeId: 'emp_1', reviewDate: '2026-01-15', summary: 's', strengths: 'st', improvements: 'im', ratings: [{ criterion: 'Quality', score: 4 }] },
  'employee.benefits.set': { employeeId: 'emp_1', benefitIds: ['ben_1'] },
  'location.create': { reference: 'Harbor Kiosk', subdomain: 'harbor-kiosk', tagline: 'Fresh fish', code: 'HK' },
  'domain.purchase': { domain: 'harbor-kiosk.com', expectedPriceMax: 2000 },
};

/** Every string leaf of `value` with its field path (`ratings[0].criterion`). */
function textFields(value: unknown, path = ''): { path: string; set(root: Record<string, unknown>, text: string): Record<string, unknown> }[] {
  if (typeof value === 'string') return [{ path, set: (root, text) => setAt(root, path, text) }];
  if (Array.isArray(value)) return value.flatMap((item, index) => textFields(item, `${path}[${index}]`));
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([key, item]) => textFields(item, path ? `${path}.${key}` : key));
  return [];
}

function setAt(root: Record<string, unknown>, path: string, text: string): Record<string, unknown> {
  const copy = structuredClone(root);
  const parts = path.match(/[^.[\]]+/g)!.map((part) => (/^\d+$/.test(part) ? Number(part) : part));
  let node: Record<string | number, unknown> = copy;
  for (const part of parts.slice(0, -1)) node = node[part] as Record<string | number, unknown>;
  node[parts.at(-1)!] = text;
  return copy;
}

function refusal(kind: string, payload: unknown): WriteValidationError {
  try {
    validateWritePayload(kind, payload);
  } catch (error) {
    if (error instanceof WriteValidationError) return error;
    throw error;
  }
  throw new Error(`${kind}: ${JSON.stringify(payload)} was accepted`);
}

describe('intake refuses control characters in every text field of every write kind', () => {
  it('each full payload is valid as it is', () => {
    for (const kind of WRITE_KIND_NAMES) expect(() => validateWritePayload(kind, FULL_PAYLOADS[kind])).not.toThrow();
  });

  it('a NUL, an ESC or a BEL in any text field is refused naming the field and the rule; tab, CR and LF pass', () => {
    let fields = 0;
    for (const kind of WRITE_KIND_NAMES) {
      for (const field of textFields(FULL_PAYLOADS[kind])) {
        for (const bad of ['\u0000', '\u001b', '\u0007']) {
          const error = refusal(kind, field.set(FULL_PAYLOADS[kind], `x${bad}y`));
          expect(error.issues, `${kind} ${field.path}`).toContainEqual({ field: field.path, rule: expect.stringMatching(/^must not contain control characters \(U\+0000 to U\+001F other than tab, CR and LF; found U\+00(00|1B|07)\)$/) });
          expect(error.message).toContain(`${kind}: `);
        }
        fields++;
      }
    }
    expect(fields).toBeGreaterThan(40);
    expect(() => validateWritePayload('transaction.create', { type: 'INCOME', amount: 1, notes: 'line one\r\nline\ttwo' })).not.toThrow();
  });

  it('an unpaired surrogate (high or low) in any text field is refused naming the field and the rule', () => {
    let fields = 0;
    for (const kind of WRITE_KIND_NAMES) {
      for (const field of textFields(FULL_PAYLOADS[kind])) {
        for (const bad of ['\ud800', '\udfff']) {
          const error = refusal(kind, field.set(FULL_PAYLOADS[kind], `x${bad}y`));
          expect(error.issues, `${kind} ${field.path}`).toContainEqual({ field: field.path, rule: expect.stringMatching(/^must not contain an unpaired surrogate \(U\+D(800|FFF) at character 2: not Unicode text\): the mirror cannot store it$/) });
        }
        fields++;
      }
    }
    expect(fields).toBeGreaterThan(40);
    // A surrogate pair is one character (an emoji): fine.
    expect(() => validateWritePayload('transaction.create', { type: 'INCOME', amount: 1, description: 'Cake \ud83c\udf82' })).not.toThrow();
  });

  it(`a payload nested past ${MAX_JSON_DEPTH} levels is refused naming the depth limit, never with a stack overflow`, () => {
    const limit = new RegExp(`^must not nest objects and arrays more than ${MAX_JSON_DEPTH} levels deep`);
    // 3,000 levels anywhere: in a field, or the payload itself; 20,000: far past any recursive walk.
    expect(refusal('transaction.create', { type: 'INCOME', amount: 1, notes: nested(3000) }).issues).toEqual([{ field: 'notes', rule: expect.stringMatching(limit) }]);
    expect(refusal('transaction.create', nested(3000)).issues).toEqual([{ field: 'payload', rule: expect.stringMatching(limit) }]);
    expect(refusal('performance_review.create', { employeeId: 'emp_1', reviewDate: '2026-01-15', ratings: nested(20_000) }).issues).toEqual([{ field: 'ratings', rule: expect.stringMatching(limit) }]);
    // The kind itself may be hostile too: named by its type, never turned into text.
    expect(refusal(nested(20_000) as string, {}).message).toMatch(/^\(an array\): kind: must be one of /);
  });

  it(`text the spec leaves open is capped at ${MAX_TEXT_CHARACTERS} characters; a field with its own limit keeps it`, () => {
    expect(refusal('transaction.create', { type: 'INCOME', amount: 1, notes: 'n'.repeat(MAX_TEXT_CHARACTERS + 1) }).issues).toEqual([{ field: 'notes', rule: `must be at most ${MAX_TEXT_CHARACTERS} characters` }]);
    expect(() => validateWritePayload('transaction.create', { type: 'INCOME', amount: 1, notes: 'n'.repeat(MAX_TEXT_CHARACTERS) })).not.toThrow();
    expect(refusal('transaction.create', { type: 'INCOME', amount: 1, description: 'd'.repeat(1001) }).issues).toEqual([{ field: 'description', rule: 'must be at most 1000 characters' }]);
  });

  it('through the intake: a NUL in a transaction description is refused and nothing is stored', async () => {
    const bed = await writeTestBed();
    const intake = new WriteIntake({ connection: bed.connection, queue: { redis: REDIS_URL, prefix: bed.prefix, queueName: bed.queueName } });
    try {
      await expect(intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 1250, description: 'Cater\u0000ing' })).rejects.toThrow(
        'transaction.create: description: must not contain control characters (U+0000 to U+001F other than tab, CR and LF; found U+0000)',
      );
      expect(Number((await bed.connection.get<{ n: number }>('SELECT COUNT(*) AS n FROM writes'))!.n)).toBe(0);
    } finally {
      await intake.close();
      await bed.cleanup();
    }
  });
});

const fixtures = syncFixtures();

describe('a record from the API that the mirror cannot store', () => {
  it('a NUL, an unpaired surrogate (in a value or a key) or nesting too deep is quarantined like an invalid item; every run succeeds; cleaned upstream, it is mirrored', async () => {
    const { sim, context } = await fixtures.start({ size: { transactions: 12, deals: 2 } });
    sim.world.exposeUndeclaredFields('transactions.notes');
    const records = sim.world.transactions;
    const bad: [string, unknown, RegExp][] = [
      [records[1]!.id, { description: 'Cater\u0000ing' }, /field description: must not contain the NUL character \(U\+0000\)/],
      [records[3]!.id, { description: 'Lobby\ud800 refit' }, /field description: must not contain an unpaired surrogate \(U\+D800 at character 6/],
      [records[5]!.id, { notes: 'Tip \udc00' }, /field notes: must not contain an unpaired surrogate \(U\+DC00/],
      // Past SQLite's JSON depth (1000), within what the simulator's JSON.stringify writes.
      [records[7]!.id, { notes: nested(2000) }, new RegExp(`field notes: must not nest objects and arrays more than ${MAX_JSON_DEPTH} levels deep`)],
      [records[9]!.id, { notes: { 'tip\u0000': 1 } }, /field notes\.tip\\u0000: its name must not contain the NUL character/],
    ];
    for (const [id, patch] of bad) sim.world.updateTransaction(id, patch as never);

    expect(await context.engine.run('transactions', 'backfill')).toMatchObject({ status: 'succeeded', rejected: bad.length });
    const quarantined = await new RejectedRecords(context.store).list('transactions');
    expect(quarantined.map((row) => row.recordId).sort()).toEqual(bad.map(([id]) => id).sort());
    for (const [id, , error] of bad) {
      const row = quarantined.find((candidate) => candidate.recordId === id)!;
      expect(row.error).toMatch(error);
      // What the quarantine keeps is itself storable (U+FFFD for the bad characters, a marker past the depth).
      expect(isStorable(row.raw), JSON.stringify(row.raw).slice(0, 200)).toBe(true);
    }
    expect(Number((await context.connection.get<{ n: number }>('SELECT COUNT(*) AS n FROM transactions'))!.n)).toBe(12 - bad.length);
    // (An incremental run would list only the five: a page mostly invalid is refused whole, by design.)
    expect(await context.engine.run('transactions', 'reconcile')).toMatchObject({ status: 'succeeded', rejected: bad.length });

    for (const [id] of bad) sim.world.updateTransaction(id, { description: 'Cleaned', notes: 'cleaned' });
    expect(await context.engine.run('transactions', 'reconcile')).toMatchObject({ status: 'succeeded', rejected: 0 });
    expect(await new RejectedRecords(context.store).list('transactions')).toEqual([]);
    expect(Number((await context.connection.get<{ n: number }>('SELECT COUNT(*) AS n FROM transactions'))!.n)).toBe(12);
  });

  it('a deal closed through a write whose response holds an unpaired surrogate: the write succeeds, its record is left to the sync, and every deals sync succeeds (record clock included)', async () => {
    const id = randomUUID().slice(0, 8);
    const redisKeys = { queuePrefix: `test-writes-${id}`, queueName: 'writes', budgetPrefix: `test-rate-${id}` };
    try {
      const { sim, context } = await fixtures.start({ size: { transactions: 3, deals: 4 } }, {}, { rateBudget: 'shared', redisKeys });
      expect(await context.engine.run('deals', 'backfill')).toMatchObject({ status: 'succeeded', rejected: 0 });
      const deal = sim.world.deals.find((candidate) => candidate.status === 'OPEN')!;
      sim.world.updateDeal(deal.id, { title: 'Lobby\ud800 refit' });
      const queue = await context.writeQueue();
      await queue.startWorker({ concurrency: 1 });
      const { id: writeId } = await queue.enqueueWrite('deal.close', { dealId: deal.id, status: 'WON', reason: 'Signed' });
      const write = await waitFor(async () => {
        const current = await queue.getWrite(writeId);
        return current && !['queued', 'sending'].includes(current.status) ? current : undefined;
      }, `write ${writeId} to finish`);
      expect(write).toMatchObject({ status: 'succeeded', result: { deal: { id: deal.id, title: 'Lobby\ufffd refit' } } });
      // The stored response is storable text; the record itself did not reach the mirror.
      const stored = await context.connection.get<{ result: string }>('SELECT result FROM writes WHERE id = ?', [writeId]);
      expect(stored!.result).not.toMatch(/\\ud800/i);
      expect(await context.connection.get('SELECT status FROM deals WHERE id = ?', [deal.id])).toEqual({ status: 'OPEN' });

      expect(await context.engine.run('deals', 'sync')).toMatchObject({ status: 'succeeded', rejected: 1 });
      expect((await new RejectedRecords(context.store).list('deals')).map((row) => row.recordId)).toEqual([deal.id]);
      expect(await context.engine.run('deals', 'sync')).toMatchObject({ status: 'succeeded' });

      sim.world.updateDeal(deal.id, { title: 'Lobby refit' });
      expect(await context.engine.run('deals', 'sync')).toMatchObject({ status: 'succeeded', rejected: 0 });
      expect(await context.connection.get('SELECT status, title FROM deals WHERE id = ?', [deal.id])).toEqual({ status: 'WON', title: 'Lobby refit' });
      expect(await new RejectedRecords(context.store).list('deals')).toEqual([]);
    } finally {
      await deleteKeys(`${redisKeys.queuePrefix}:*`);
      await deleteKeys(`${redisKeys.budgetPrefix}:*`);
    }
  });

  it('a stored write response PostgreSQL cannot cast (a lone surrogate in its text) fails no run of its stream', async () => {
    const { context } = await fixtures.start({ size: { transactions: 5, deals: 2 } });
    expect(await context.engine.run('transactions', 'backfill')).toMatchObject({ status: 'succeeded' });
    // The API's answer kept as text: valid JSON, not valid jsonb.
    const finished = new Date(Date.now() + 1000).toISOString();
    await context.connection.run(
      `INSERT INTO writes (id, idempotency_key, kind, status, payload, payload_hash, acting_as, result, created_at, updated_at, finished_at)
       VALUES ('wr_bad', 'bad', 'transaction.create', 'succeeded', '{}', 'x', 'default', ?, ?, ?, ?)`,
      [String.raw`{"transaction":{"id":"txn_bad","description":"a\ud800","createdAt":"2020-01-01T00:00:00.000Z"}}`, finished, finished, finished],
    );
    expect(await context.engine.run('transactions', 'sync')).toMatchObject({ status: 'succeeded' });
    expect(await context.engine.run('transactions', 'sync')).toMatchObject({ status: 'succeeded' });
  });
});
