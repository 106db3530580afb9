import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../src/index.ts';
import { api } from './helpers.ts';

let simulator: RunningSimulator;
beforeAll(async () => {
  simulator = await startSimulator({ seed: 3, rateLimit: false });
});
afterAll(async () => {
  await simulator.close();
});

const post = (path: string, body: unknown, token?: string) => api(simulator, path, { method: 'POST', body, token });

describe('POST /transactions (spec §4.7)', () => {
  it('signs the amount by type, defaults to CONFIRMED and returns the create fields', async () => {
    const expense = await post('/transactions', { type: 'EXPENSE', amount: 1250, description: 'Napkins', counterpartyName: 'Acme Tools' });
    expect(expense.status).toBe(200);
    expect(expense.body.content.transaction).toMatchObject({ type: 'EXPENSE', amount: -1250, status: 'CONFIRMED', counterpartyName: 'Acme Tools' });
    expect(Object.keys(expense.body.content.transaction).sort()).toEqual(
      ['amount', 'counterpartyName', 'createdAt', 'date', 'description', 'dueDate', 'id', 'irsCategory', 'legalEntityId', 'status', 'type', 'updatedAt'].sort(),
    );
    const income = await post('/transactions', { type: 'INCOME', amount: 999 });
    expect(income.body.content.transaction.amount).toBe(999);
    expect(simulator.world.data.journalEntries.filter((entry) => entry.transactionId === income.body.content.transaction.id)).toHaveLength(2);
  });

  it('puts a PENDING transaction with a dueDate into payables', async () => {
    const pending = await post('/transactions', { type: 'INVOICE', amount: 5000, status: 'PENDING', dueDate: '2027-01-15' });
    expect(pending.body.content.transaction.status).toBe('PENDING');
    expect(simulator.world.payables.map((record) => record.id)).toContain(pending.body.content.transaction.id);
    const noDue = await post('/transactions', { type: 'INVOICE', amount: 5000, status: 'PENDING' });
    expect(simulator.world.payables.map((record) => record.id)).not.toContain(noDue.body.content.transaction.id);
  });

  it('refuses amount below 1, non-integer cents, an unknown type and taxQuarter 5 with 400 naming the field', async () => {
    for (const [body, field] of [
      [{ type: 'INCOME', amount: 0 }, 'amount'],
      [{ type: 'INCOME', amount: 1.5 }, 'amount'],
      [{ type: 'GIFT', amount: 10 }, 'type'],
      [{ type: 'INCOME', amount: 10, taxQuarter: 5 }, 'taxQuarter'],
      [{ type: 'INCOME', amount: 10, status: 'VOIDED' }, 'status'],
    ] as const) {
      const response = await post('/transactions', body);
      expect(response.status).toBe(400);
      expect(response.body.message).toContain(field);
    }
  });
});

describe('POST /deals/{dealId}/close (spec §3, §4.6)', () => {
  it('wins with reason and closedAt, promotes the contact on request, re-opens clearing both', async () => {
    const deal = simulator.world.createDeal({ customerId: simulator.world.createCustomer({ lifecycleStage: 'LEAD' }).id });
    const won = await post(`/deals/${deal.id}/close`, { status: 'WON', reason: 'Signed', markContactAsCustomer: true });
    expect(won.body.content.deal).toMatchObject({ status: 'WON', wonLostReason: 'Signed', closedAt: expect.any(String) });
    expect(simulator.world.customers.find((customer) => customer.id === deal.customerId)?.lifecycleStage).toBe('CUSTOMER');
    const directLost = await post(`/deals/${deal.id}/close`, { status: 'LOST' });
    expect(directLost.status).toBe(409);
    const reopened = await post(`/deals/${deal.id}/close`, { status: 'OPEN' });
    expect(reopened.body.content.deal).toMatchObject({ status: 'OPEN', wonLostReason: null, closedAt: null });
    const lost = await post(`/deals/${deal.id}/close`, { status: 'LOST', reason: 'Budget' });
    expect(lost.body.content.deal).toMatchObject({ status: 'LOST', wonLostReason: 'Budget' });
  });

  it('leaves the contact alone without markContactAsCustomer; 404 unknown deal; 400 bad status', async () => {
    const customer = simulator.world.createCustomer({ lifecycleStage: 'LEAD' });
    const deal = simulator.world.createDeal({ customerId: customer.id });
    await post(`/deals/${deal.id}/close`, { status: 'WON' });
    expect(customer.lifecycleStage).toBe('LEAD');
    expect((await post('/deals/deal_missing/close', { status: 'WON' })).status).toBe(404);
    expect((await post(`/deals/${deal.id}/close`, { status: 'DONE' })).status).toBe(400);
  });
});

describe('GET /vault-credentials/{id} (spec §4.2)', () => {
  it('reveals the secret, updates lastAccessedAt and writes a VIEW audit event; 403 outside the folder', async () => {
    const [inFolder, , outside] = simulator.world.data.vaultCredentials;
    const before = inFolder?.lastAccessedAt;
    const response = await api(simulator, `/vault-credentials/${inFolder?.id}`);
    expect(response.status).toBe(200);
    expect(response.body.content.sensitiveData.apiKey).toEqual(expect.any(String));
    expect(response.body.content.credential.sensitiveData).toBeUndefined();
    expect(response.body.content.credential.lastAccessedAt).not.toBe(before);
    expect(simulator.world.data.auditEvents.at(-1)).toMatchObject({ action: 'VIEW', credentialId: inFolder?.id, employeeId: simulator.world.employeeForRole('admin').id });
    const denied = await api(simulator, `/vault-credentials/${outside?.id}`);
    expect(denied.status).toBe(403);
    expect(denied.body.message).toMatch(/access/);
  });
});

describe('POST /calendar-events/{eventId}/rsvp (spec §4.3)', () => {
  it('records the reply; 404 for a non-attendee; occurrenceStart only with DECLINED', async () => {
    const [planning, weekly, hrOnly] = simulator.world.data.calendarEvents;
    const accepted = await post(`/calendar-events/${planning?.id}/rsvp`, { response: 'DECLINED', note: 'Away' });
    const admin = simulator.world.employeeForRole('admin').id;
    const mine = accepted.body.content.event.attendees.find((attendee: { employeeId: string }) => attendee.employeeId === admin);
    expect(mine).toMatchObject({ status: 'DECLINED', note: 'Away' });
    expect((await post(`/calendar-events/${hrOnly?.id}/rsvp`, { response: 'ACCEPTED' })).status).toBe(404);
    expect((await post(`/calendar-events/${weekly?.id}/rsvp`, { response: 'ACCEPTED', occurrenceStart: '2026-12-07T09:00:00Z' })).status).toBe(400);
    await post(`/calendar-events/${weekly?.id}/rsvp`, { response: 'ACCEPTED' });
    const declinedOne = await post(`/calendar-events/${weekly?.id}/rsvp`, { response: 'DECLINED', occurrenceStart: '2026-12-07T09:00:00Z' });
    const attendee = declinedOne.body.content.event.attendees.find((candidate: { employeeId: string }) => candidate.employeeId === admin);
    expect(attendee.status).toBe('ACCEPTED');
    expect(attendee.declinedOccurrences).toEqual(['2026-12-07T09:00:00.000Z']);
  });
});

describe('POST /emails (spec §4.5)', () => {
  it('sends from an owned address, threads replies, files into the customer conversation; 403 for foreign from', async () => {
    const world = simulator.world;
    const customer = world.customers.find((candidate) => world.data.customerConversations.has(candidate.id));
    const inbound = world.data.emails[0];
    if (!customer || !inbound) throw new Error('seed email missing');
    const reply = await post('/emails', { from: inbound.to, to: customer.email, subject: 'Re: Quote request', text: 'Here is your quote' });
    expect(reply.status).toBe(200);
    expect(reply.body.content.email).toMatchObject({ direction: 'OUTBOUND', threadId: inbound.threadId, from: inbound.to });
    expect(world.data.customerConversations.get(customer.id)).toContain(reply.body.content.email.id);
    const fresh = await post('/emails', { from: inbound.to, to: 'someone@else.example', subject: 'New topic', html: '<p>Hi</p>' });
    expect(fresh.body.content.email.threadId).toBe(fresh.body.content.email.id);
    const employeeAddress = world.data.emailAddresses.find((address) => address.employeeId === world.employeeForRole('employee').id)?.address;
    const foreign = await post('/emails', { from: employeeAddress, to: 'x@y.example', subject: 'Hi', text: 'x' });
    expect(foreign.status).toBe(403);
    const tooMany = await post('/emails', { from: inbound.to, to: 'x@y.example', subject: 'Hi', text: 'x', cc: Array.from({ length: 21 }, (_, i) => `p${i}@y.example`) });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.message).toContain('cc');
    expect((await post('/emails', { from: inbound.to, to: 'x@y.example', subject: 'Hi' })).status).toBe(400);
  });
});

describe('PATCH /email-drafts/{draftId} (spec §4.9)', () => {
  it('changes only the given fields and enforces the limits', async () => {
    const draft = simulator.world.data.drafts.find((candidate) => candidate.ownerEmployeeId === simulator.world.employeeForRole('admin').id);
    const patched = await api(simulator, `/email-drafts/${draft?.id}`, { method: 'PATCH', body: { subject: 'New subject' } });
    expect(patched.body.content.draft).toMatchObject({ subject: 'New subject', text: 'Draft text', to: draft?.to });
    const long = await api(simulator, `/email-drafts/${draft?.id}`, { method: 'PATCH', body: { subject: 'x'.repeat(501) } });
    expect(long.status).toBe(400);
    expect(long.body.message).toContain('subject');
    const many = await api(simulator, `/email-drafts/${draft?.id}`, { method: 'PATCH', body: { to: Array.from({ length: 21 }, (_, i) => `p${i}@y.example`) } });
    expect(many.status).toBe(400);
  });
});

describe('POST /domains (spec §4.14)', () => {
  it('buys at the registrar price and deducts credits', async () => {
    const credits = simulator.world.data.creditsCents;
    const bought = await post('/domains', { domain: 'fresh-bistro.com', expectedPriceMax: 2000 });
    expect(bought.body.content).toEqual({ domain: { id: expect.stringMatching(/^dom_/), name: 'fresh-bistro.com' }, pricePaid: 1200 });
    expect(simulator.world.data.creditsCents).toBe(credits - 1200);
    const detail = await api(simulator, `/domains/${bought.body.content.domain.id}`);
    expect(detail.body.content.domain).toMatchObject({ name: 'fresh-bistro.com', emailEnabled: false, assignedLocations: [] });
  });

  it('refuses above 500 USD (403 with err), unavailable (409 with err), above expectedPriceMax (422) without charging', async () => {
    const credits = simulator.world.data.creditsCents;
    const expensive = await post('/domains', { domain: 'premium.com', expectedPriceMax: 1_000_000 });
    expect(expensive.status).toBe(403);
    expect(expensive.body.err).toEqual(expect.stringContaining('support'));
    const taken = await post('/domains', { domain: 'taken.com', expectedPriceMax: 5000 });
    expect(taken.status).toBe(409);
    expect(taken.body.err).toEqual(expect.any(String));
    const again = await post('/domains', { domain: 'fresh-bistro.com', expectedPriceMax: 5000 });
    expect(again.status).toBe(409);
    const overMax = await post('/domains', { domain: 'another-place.io', expectedPriceMax: 100 });
    expect(overMax.status).toBe(422);
    expect(simulator.world.data.creditsCents).toBe(credits);
  });
});

describe('POST /performance-reviews (spec §4.15)', () => {
  it('lets the manager or HR review, refuses overallScore and bad scores, 403 for others', async () => {
    const world = simulator.world;
    const report = world.employees.find((employee) => employee.managerId === world.employeeForRole('admin').id && employee.tokenRole === null);
    const body = { employeeId: report?.id, reviewDate: '2026-11-01', status: 'SHARED', ratings: [{ criterion: 'Craft', score: 4 }, { criterion: 'Team', score: 5 }] };
    const created = await post('/performance-reviews', body);
    expect(created.body.content).toEqual({ reviewId: expect.stringMatching(/^rev_/), shared: true });
    expect(world.data.performanceReviews.at(-1)?.overallScore).toBe(4.5);
    expect(world.data.notifications.at(-1)).toMatchObject({ employeeId: report?.id });
    expect((await post('/performance-reviews', { ...body, status: 'DRAFT' }, simulator.tokens.hr)).body.content.shared).toBe(false);
    expect((await post('/performance-reviews', body, simulator.tokens.employee)).status).toBe(403);
    expect((await post('/performance-reviews', { ...body, overallScore: 5 })).status).toBe(400);
    expect((await post('/performance-reviews', { ...body, ratings: [] })).status).toBe(400);
    expect((await post('/performance-reviews', { ...body, ratings: [{ criterion: 'x', score: 6 }] })).status).toBe(400);
    expect((await post('/performance-reviews', { ...body, ratings: [{ criterion: 'x', score: 2.5 }] })).status).toBe(400);
  });
});

describe('PUT /employees/{employeeId}/benefits (spec §4.16)', () => {
  it('replaces the list, drops foreign ids, empties with []', async () => {
    const world = simulator.world;
    const employee = world.employees[8];
    const [first, second] = world.data.benefits;
    const foreign = world.companies.B.data.benefits[0]?.id;
    const put = (benefitIds: unknown) => api(simulator, `/employees/${employee?.id}/benefits`, { method: 'PUT', body: { benefitIds } });
    expect((await put([first?.id, foreign, 'ben_unknown'])).body.content).toEqual({ employeeId: employee?.id, benefitIds: [first?.id] });
    expect((await put([second?.id])).body.content.benefitIds).toEqual([second?.id]);
    expect((await put([])).body.content.benefitIds).toEqual([]);
    expect(employee?.benefitIds).toEqual([]);
    expect((await put('nope')).status).toBe(400);
  });
});

describe('POST /time-clock-entries (spec §4.19)', () => {
  it('opens an entry linked to the current shift, 409 while open; outside a shift shiftId is null', async () => {
    const first = await post('/time-clock-entries', undefined);
    const shift = simulator.world.data.shifts.find((candidate) => candidate.employeeId === simulator.world.employeeForRole('admin').id);
    expect(first.body.content.entry).toMatchObject({ shiftId: shift?.id, locationId: shift?.locationId, clockOutAt: null });
    const second = await post('/time-clock-entries', undefined);
    expect(second.status).toBe(409);
    expect(simulator.world.data.timeClockEntries.filter((entry) => entry.clockOutAt === null)).toHaveLength(1);
    const employee = await post('/time-clock-entries', undefined, simulator.tokens.employee);
    expect(employee.body.content.entry).toMatchObject({ shiftId: null, employeeId: simulator.world.employeeForRole('employee').id });
    simulator.world.clockOut(simulator.world.employeeForRole('admin').id);
    expect((await post('/time-clock-entries', undefined)).status).toBe(200);
  });
});

describe('POST /locations (spec §4.18)', () => {
  it('returns location.id only; 409 for a taken subdomain; 400 without a reference', async () => {
    const created = await post('/locations', { reference: 'Pier Kiosk', subdomain: 'pier-kiosk', tagline: 'Fresh', code: 'PK1' });
    expect(created.body.content).toEqual({ location: { id: expect.stringMatching(/^loc_/) } });
    expect((await post('/locations', { reference: 'Again', subdomain: 'pier-kiosk' })).status).toBe(409);
    expect((await post('/locations', { subdomain: 'other' })).status).toBe(400);
  });
});
