/**
 * Bad characters (docs/writes.md "Intake", docs/sync.md "Invalid records"): intake refuses control
 * characters in every text field of every write kind, naming the field and the rule, and caps text
 * the spec leaves open; a record from the API that the mirror cannot store (a NUL character, which a
 * PostgreSQL mirror refuses) is quarantined like an invalid item and never fails its stream. Runs on
 * both back ends.
 */
import { describe, expect, it } from 'vitest';
import { RejectedRecords } from '../../src/mirror/rejected-records.ts';
import { WriteValidationError, type WriteKindName } from '../../src/writes/index.ts';
import { WRITE_KIND_NAMES } from '../../src/writes/kinds/index.ts';
import { WriteIntake } from '../../src/writes/queue/index.ts';
import { MAX_TEXT_CHARACTERS, validateWritePayload } from '../../src/writes/validation.ts';
import { syncFixtures } from '../helpers.ts';
import { REDIS_URL, writeTestBed } from './support.ts';

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
  it('a NUL in a transaction is quarantined like an invalid item; the backfill and later syncs of the stream succeed', async () => {
    const { sim, context } = await fixtures.start({ size: { transactions: 12, deals: 2 } });
    const bad = sim.world.transactions[3]!;
    bad.description = 'Cater\u0000ing';
    const backfill = await context.engine.run('transactions', 'backfill');
    expect(backfill).toMatchObject({ status: 'succeeded', rejected: 1 });
    const [row] = await new RejectedRecords(context.store).list('transactions');
    expect(row).toMatchObject({ recordId: bad.id, error: expect.stringMatching(/field description: must not contain the NUL character \(U\+0000\)/) });
    expect(Number((await context.connection.get<{ n: number }>('SELECT COUNT(*) AS n FROM transactions'))!.n)).toBe(11);
    expect(await context.engine.run('transactions', 'sync')).toMatchObject({ status: 'succeeded' });
    expect(await context.engine.run('transactions', 'reconcile')).toMatchObject({ status: 'succeeded', rejected: 1 });
  });
});
