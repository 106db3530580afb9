/**
 * Every write kind end to end: a valid payload goes intake -> SQLite -> BullMQ -> worker -> the
 * simulator over real HTTP, and lands in the simulator's world; invalid payloads are refused at
 * intake with a message naming the field and the rule, and nothing is stored or queued.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configSchema, type Config } from '../../src/config/schema.ts';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { openContext, type Context, type WriteQueue } from '../../jobs/context.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { WriteValidationError, type WriteRecord } from '../../src/writes/index.ts';
import { waitFor } from '../helpers.ts';
import { simulator, writeTestBed, REDIS_URL, type WriteTestBed } from './support.ts';

let sim: RunningSimulator;
let bed: WriteTestBed;
let config: Config;
let context: Context;
let runtime: WriteQueue;

beforeAll(async () => {
  sim = await simulator();
  bed = await writeTestBed();
  config = configSchema.parse({
    baseUrl: sim.url,
    tokens: { default: sim.tokens.admin, employee: sim.tokens.employee, hr: sim.tokens.hr },
    dbPath: bed.dbPath,
    redisUrl: REDIS_URL,
    rateLimit: { perMinute: 1000, windowMs: 1000 },
  });
  context = await openContext(config, { logger: silentLogger, redisKeys: { queuePrefix: bed.prefix, queueName: bed.queueName, budgetPrefix: bed.budgetPrefix } });
  runtime = await context.writeQueue();
  await runtime.startWorker({ concurrency: 4 });
});

afterAll(async () => {
  await context?.close();
  await sim?.close();
  await bed?.cleanup();
});

async function finished(id: string): Promise<WriteRecord> {
  let write: WriteRecord | undefined;
  await waitFor(async () => {
    write = await runtime.getWrite(id);
    return write !== undefined && !['queued', 'sending'].includes(write.status);
  }, `write ${id} to finish`);
  return write!;
}

async function jobCount(): Promise<number> {
  const counts = await runtime.intake.queue.getJobCounts();
  return Object.values(counts).reduce((sum, n) => sum + n, 0);
}

async function writeRows(): Promise<number> {
  return ((await bed.connection.get('SELECT COUNT(*) AS n FROM writes')) as { n: number }).n;
}

/** Enqueues `payload` and expects a WriteValidationError naming every `fields` entry; nothing stored or queued. */
async function expectRefused(kind: string, payload: unknown, fields: string[], rule?: RegExp): Promise<void> {
  const rowsBefore = await writeRows();
  const jobsBefore = await jobCount();
  const error = await runtime.enqueue(kind, payload).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error, `${kind} ${JSON.stringify(payload)} should be refused`).toBeInstanceOf(WriteValidationError);
  const message = (error as Error).message;
  expect(message.startsWith(`${kind}: `)).toBe(true);
  for (const field of fields) expect(message).toContain(`${field}: `);
  if (rule) expect(message).toMatch(rule);
  expect(await writeRows()).toBe(rowsBefore);
  expect(await jobCount()).toBe(jobsBefore);
}

describe('transaction.create (spec §4.7)', () => {
  it('lands in the ledger signed by type, is written through into the mirror, and emits write.succeeded', async () => {
    const { id, status } = await runtime.enqueueWrite('transaction.create', { type: 'EXPENSE', amount: 4200, description: 'Walk-in freezer repair', date: '2026-03-02', taxQuarter: 1 });
    expect(status).toBe('queued');
    const write = await finished(id);
    expect(write).toMatchObject({ status: 'succeeded', outcome: 'Transaction created', httpStatus: 200, attempts: 1 });
    const inWorld = sim.world.transactions.find((transaction) => transaction.id === write.remoteId);
    expect(inWorld).toMatchObject({ type: 'EXPENSE', amount: -4200, description: 'Walk-in freezer repair', taxQuarter: 1 });
    const mirrored = (await bed.connection.get('SELECT amount, description, counterparty_name FROM transactions WHERE id = ?', [write.remoteId])) as Record<string, unknown>;
    expect(mirrored).toMatchObject({ amount: -4200, description: 'Walk-in freezer repair' });
    const change = (await bed.connection.get("SELECT event_id, type, data FROM changes WHERE stream = 'writes' AND record_id = ?", [id])) as { event_id: string; type: string; data: string };
    expect(change.type).toBe('write.succeeded');
    expect(change.event_id).toMatch(/^evt_/);
    expect(JSON.parse(change.data)).toMatchObject({ record: { id, status: 'succeeded', kind: 'transaction.create' }, changes: { status: { new: 'succeeded' } } });
    expect((await bed.connection.get("SELECT COUNT(*) AS n FROM changes WHERE stream = 'transactions' AND record_id = ?", [write.remoteId]))).toEqual({ n: 1 });
  });

  it('refuses amount below 1, non-integer cents, taxQuarter 5, a bad date, an unknown field', async () => {
    await expectRefused('transaction.create', { type: 'INCOME', amount: 0 }, ['amount'], /must be at least 1 \(cents\)/);
    await expectRefused('transaction.create', { type: 'INCOME', amount: 12.5 }, ['amount'], /integer/);
    await expectRefused('transaction.create', { type: 'INCOME', amount: 100, taxQuarter: 5 }, ['taxQuarter'], /1 to 4/);
    await expectRefused('transaction.create', { type: 'INCOME', amount: 100, date: '2026-02-30' }, ['date']);
    await expectRefused('transaction.create', { type: 'GIFT', amount: 100 }, ['type']);
    await expectRefused('transaction.create', { amount: 100 }, ['type'], /is required/);
    await expectRefused('transaction.create', { type: 'INCOME', amount: 100, amuont: 1 }, ['amuont'], /not a field/);
  });
});

describe('calendar.rsvp (spec §4.3)', () => {
  it("records the acting employee's reply", async () => {
    const event = sim.world.data.calendarEvents[0]!;
    const { id } = await runtime.enqueueWrite('calendar.rsvp', { eventId: event.id, response: 'DECLINED', note: 'On leave' });
    expect((await finished(id)).status).toBe('succeeded');
    const admin = sim.world.employeeForRole('admin').id;
    expect(event.attendees.find((attendee) => attendee.employeeId === admin)).toMatchObject({ status: 'DECLINED', note: 'On leave' });
  });

  it('refuses occurrenceStart without DECLINED, an empty eventId, a non-ISO occurrence', async () => {
    await expectRefused('calendar.rsvp', { eventId: 'evt_1', response: 'ACCEPTED', occurrenceStart: '2026-12-07T09:00:00Z' }, ['occurrenceStart'], /only valid with response DECLINED/);
    await expectRefused('calendar.rsvp', { eventId: '', response: 'ACCEPTED' }, ['eventId']);
    await expectRefused('calendar.rsvp', { eventId: 'evt_1', response: 'DECLINED', occurrenceStart: 'next monday' }, ['occurrenceStart'], /ISO 8601/);
  });
});

describe('timeclock.clock_in (spec §4.19)', () => {
  it('opens an entry for the employee the acting token acts as', async () => {
    const { id } = await runtime.enqueueWrite('timeclock.clock_in', {}, { actAs: 'employee' });
    const write = await finished(id);
    expect(write).toMatchObject({ status: 'succeeded', actAs: 'employee' });
    const employee = sim.world.employeeForRole('employee').id;
    expect(sim.world.data.timeClockEntries.filter((entry) => entry.employeeId === employee && entry.clockOutAt === null)).toHaveLength(1);
  });

  it('refuses a body and an unknown acting token', async () => {
    await expectRefused('timeclock.clock_in', { at: '2026-01-01T09:00:00Z' }, ['at'], /not a field/);
    const rows = await writeRows();
    await expect(runtime.enqueueWrite('timeclock.clock_in', {}, { actAs: 'nobody' })).rejects.toThrow('actAs: no token named "nobody" is configured');
    expect(await writeRows()).toBe(rows);
  });
});

describe('deal.close (spec §4.6)', () => {
  it('closes the deal and writes it through into the mirror', async () => {
    const deal = sim.world.createDeal({ status: 'OPEN' });
    const { id } = await runtime.enqueueWrite('deal.close', { dealId: deal.id, status: 'WON', reason: 'Signed' });
    const write = await finished(id);
    expect(write).toMatchObject({ status: 'succeeded', remoteId: deal.id });
    expect(sim.world.deals.find((candidate) => candidate.id === deal.id)).toMatchObject({ status: 'WON', wonLostReason: 'Signed' });
    expect((await bed.connection.get('SELECT status, won_lost_reason FROM deals WHERE id = ?', [deal.id]))).toEqual({ status: 'WON', won_lost_reason: 'Signed' });
  });

  it('refuses an unknown status and markContactAsCustomer on LOST', async () => {
    await expectRefused('deal.close', { dealId: 'deal_1', status: 'DONE' }, ['status'], /WON, LOST, or OPEN/);
    await expectRefused('deal.close', { dealId: 'deal_1', status: 'LOST', markContactAsCustomer: true }, ['markContactAsCustomer'], /only valid with status WON/);
    await expectRefused('deal.close', { status: 'WON' }, ['dealId'], /is required/);
  });
});

describe('email.send (spec §4.5)', () => {
  it('sends from an owned address', async () => {
    const from = sim.world.data.emailAddresses.find((address) => address.employeeId === sim.world.employeeForRole('admin').id)!.address;
    const { id } = await runtime.enqueueWrite('email.send', { from, to: 'buyer@example.org', subject: 'Your order', text: 'Ready for pickup' });
    const write = await finished(id);
    expect(write.status).toBe('succeeded');
    expect(sim.world.data.emails.find((email) => email.id === write.remoteId)).toMatchObject({ to: 'buyer@example.org', subject: 'Your order' });
  });

  it('ends with the API message on a 403 (an address not owned), without retrying', async () => {
    const foreign = sim.world.data.emailAddresses.find((address) => address.employeeId === sim.world.employeeForRole('employee').id)!.address;
    const { id } = await runtime.enqueueWrite('email.send', { from: foreign, to: 'x@example.org', subject: 'Hi', text: 'x' });
    const write = await finished(id);
    expect(write).toMatchObject({ status: 'failed', httpStatus: 403, attempts: 1 });
    expect(write.error).toMatch(/not an address you own/);
    const change = (await bed.connection.get("SELECT type FROM changes WHERE stream = 'writes' AND record_id = ?", [id]));
    expect(change).toEqual({ type: 'write.failed' });
  });

  it('refuses 21 cc addresses, a missing body, a bad address', async () => {
    const many = Array.from({ length: 21 }, (_, i) => `p${i}@example.org`);
    await expectRefused('email.send', { from: 'a@example.org', to: 'b@example.org', text: 'x', cc: many }, ['cc'], /at most 20/);
    await expectRefused('email.send', { from: 'a@example.org', to: 'b@example.org', text: 'x', bcc: many }, ['bcc'], /at most 20/);
    await expectRefused('email.send', { from: 'a@example.org', to: 'b@example.org' }, ['text'], /text or html/);
    await expectRefused('email.send', { from: 'a@example.org', to: 'not an address', text: 'x' }, ['to'], /email address/);
  });
});

describe('email_draft.update (spec §4.9)', () => {
  it('changes the given fields of the draft', async () => {
    const draft = sim.world.data.drafts.find((candidate) => candidate.ownerEmployeeId === sim.world.employeeForRole('admin').id)!;
    const { id } = await runtime.enqueueWrite('email_draft.update', { draftId: draft.id, subject: 'Menu for Friday', cc: ['chef@example.org'] });
    expect((await finished(id)).status).toBe('succeeded');
    expect(draft).toMatchObject({ subject: 'Menu for Friday', cc: ['chef@example.org'] });
  });

  it('refuses a 501-character subject, 21 recipients, and an empty patch', async () => {
    await expectRefused('email_draft.update', { draftId: 'drf_1', subject: 'x'.repeat(501) }, ['subject'], /at most 500 characters/);
    await expectRefused('email_draft.update', { draftId: 'drf_1', to: Array.from({ length: 21 }, (_, i) => `p${i}@example.org`) }, ['to'], /at most 20/);
    await expectRefused('email_draft.update', { draftId: 'drf_1' }, [], /nothing to update/);
  });
});

describe('performance_review.create (spec §4.15)', () => {
  it('creates the review for a direct report', async () => {
    const report = sim.world.employees.find((employee) => employee.managerId === sim.world.employeeForRole('admin').id && employee.tokenRole === null)!;
    const { id } = await runtime.enqueueWrite('performance_review.create', {
      employeeId: report.id,
      reviewDate: '2026-11-01',
      status: 'DRAFT',
      ratings: [{ criterion: 'Craft', score: 4 }, { criterion: 'Team', score: 5 }],
    });
    const write = await finished(id);
    expect(write.status).toBe('succeeded');
    expect(sim.world.data.performanceReviews.find((review) => review.id === write.remoteId)).toMatchObject({ employeeId: report.id, overallScore: 4.5 });
  });

  it('refuses overallScore, no ratings, a score of 6 or 2.5, a bad reviewDate', async () => {
    const base = { employeeId: 'emp_1', reviewDate: '2026-11-01', ratings: [{ criterion: 'Craft', score: 4 }] };
    await expectRefused('performance_review.create', { ...base, overallScore: 4 }, ['overallScore'], /not accepted/);
    await expectRefused('performance_review.create', { ...base, ratings: [] }, ['ratings'], /at least one rating/);
    await expectRefused('performance_review.create', { ...base, ratings: [{ criterion: 'Craft', score: 6 }] }, ['ratings[0].score'], /integer 1 to 5/);
    await expectRefused('performance_review.create', { ...base, ratings: [{ criterion: 'Craft', score: 2.5 }] }, ['ratings[0].score'], /integer 1 to 5/);
    await expectRefused('performance_review.create', { ...base, reviewDate: '01/11/2026' }, ['reviewDate'], /YYYY-MM-DD/);
  });
});

describe('employee.benefits.set (spec §4.16)', () => {
  it('replaces the enrollment list', async () => {
    const employee = sim.world.employees[8]!;
    const benefit = sim.world.data.benefits[1]!;
    const { id } = await runtime.enqueueWrite('employee.benefits.set', { employeeId: employee.id, benefitIds: [benefit.id] });
    expect((await finished(id)).status).toBe('succeeded');
    expect(employee.benefitIds).toEqual([benefit.id]);
  });

  it('refuses a missing list, an empty employeeId, an empty benefit id', async () => {
    await expectRefused('employee.benefits.set', { employeeId: 'emp_1' }, ['benefitIds'], /is required/);
    await expectRefused('employee.benefits.set', { employeeId: '', benefitIds: [] }, ['employeeId']);
    await expectRefused('employee.benefits.set', { employeeId: 'emp_1', benefitIds: [''] }, ['benefitIds[0]']);
  });
});

describe('location.create (spec §4.18)', () => {
  it('creates the location', async () => {
    const { id } = await runtime.enqueueWrite('location.create', { reference: 'Harbor Kiosk', subdomain: 'harbor-kiosk', tagline: 'Fresh fish' });
    const write = await finished(id);
    expect(write.status).toBe('succeeded');
    expect(sim.world.data.locations.find((location) => location.id === write.remoteId)).toMatchObject({ reference: 'Harbor Kiosk', subdomain: 'harbor-kiosk' });
  });

  it('refuses a missing reference and a subdomain with spaces', async () => {
    await expectRefused('location.create', { subdomain: 'x' }, ['reference'], /is required/);
    await expectRefused('location.create', { reference: 'X', subdomain: 'Harbor Kiosk' }, ['subdomain'], /lower-case/);
  });
});

describe('domain.purchase (spec §4.14)', () => {
  it('buys the domain within expectedPriceMax', async () => {
    const credits = sim.world.data.creditsCents;
    const { id } = await runtime.enqueueWrite('domain.purchase', { domain: 'harbor-kiosk.com', expectedPriceMax: 2000 });
    const write = await finished(id);
    expect(write).toMatchObject({ status: 'succeeded', result: { pricePaid: 1200 } });
    expect(sim.world.data.domains.some((domain) => domain.name === 'harbor-kiosk.com')).toBe(true);
    expect(sim.world.data.creditsCents).toBe(credits - 1200);
  });

  it('requires expectedPriceMax, at most 50000 cents; refuses a name that is not a domain', async () => {
    await expectRefused('domain.purchase', { domain: 'harbor.com' }, ['expectedPriceMax'], /is required/);
    await expectRefused('domain.purchase', { domain: 'harbor.com', expectedPriceMax: 50_001 }, ['expectedPriceMax'], /at most 50000 \(cents\)/);
    await expectRefused('domain.purchase', { domain: 'harbor', expectedPriceMax: 2000 }, ['domain'], /fully qualified/);
  });
});

describe('intake', () => {
  it('refuses an unknown kind and a non-object payload', async () => {
    await expectRefused('transaction.delete', {}, ['kind'], /must be one of transaction.create/);
    await expectRefused('transaction.create', [1, 2], ['payload'], /JSON object/);
  });
});
