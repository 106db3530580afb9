/**
 * Writes of every kind (docs/writes.md "Write kinds"), each marked so its effect can be found in the
 * simulator's world afterwards, and the oracle's rule for them: an acknowledged write had exactly
 * one effect, or none when it failed, or is `needs_review` with a reason that is true.
 */
import type { RunningSimulator } from '@bizops-sync/simulator';

/** Every write kind the project sends. */
export const WRITE_KINDS = [
  'transaction.create',
  'calendar.rsvp',
  'timeclock.clock_in',
  'deal.close',
  'email.send',
  'email_draft.update',
  'performance_review.create',
  'employee.benefits.set',
  'location.create',
  'domain.purchase',
] as const;
export type WriteKind = (typeof WRITE_KINDS)[number];

/** The request each kind sends, as a simulator fault's match (method and path). */
export function writeRequestMatch(kind: WriteKind): { method: string; pathPattern: RegExp } {
  const table: Record<WriteKind, [string, RegExp]> = {
    'transaction.create': ['POST', /^\/transactions$/],
    'calendar.rsvp': ['POST', /^\/calendar-events\/[^/]+\/rsvp$/],
    'timeclock.clock_in': ['POST', /^\/time-clock-entries$/],
    'deal.close': ['POST', /^\/deals\/[^/]+\/close$/],
    'email.send': ['POST', /^\/emails$/],
    'email_draft.update': ['PATCH', /^\/email-drafts\/[^/]+$/],
    'performance_review.create': ['POST', /^\/performance-reviews$/],
    'employee.benefits.set': ['PUT', /^\/employees\/[^/]+\/benefits$/],
    'location.create': ['POST', /^\/locations$/],
    'domain.purchase': ['POST', /^\/domains$/],
  };
  const [method, pathPattern] = table[kind];
  return { method, pathPattern };
}

/** A write the soak enqueued and the mark that finds its effect. */
export interface SoakWrite {
  kind: WriteKind;
  /** The idempotency key (`soak-<n>`), also the mark in the payload. */
  key: string;
  payload: Record<string, unknown>;
  actAs?: string;
  /** The write id once the intake answered (acknowledged). */
  id?: string;
}

/**
 * A payload of `kind` marked with `key`, on records of company A drawn by `pick`. Idempotent kinds
 * get a target of their own per write (an event, a draft, an employee), so the final state of the
 * target says whether the write took effect.
 */
export function writePayload(kind: WriteKind, key: string, pick: number, simulator: RunningSimulator, index: number): { payload: Record<string, unknown>; actAs?: string } {
  const world = simulator.world;
  const data = world.data;
  const admin = world.employeeForRole('admin');
  switch (kind) {
    case 'transaction.create':
      return { payload: { type: 'INCOME', amount: 100 + (pick % 90_000), description: `soak ${key}` } };
    case 'calendar.rsvp': {
      const events = data.calendarEvents.filter((event) => event.attendees.some((attendee) => attendee.employeeId === admin.id) && !event.recurrenceRule);
      const event = events[index % Math.max(1, events.length)] ?? data.calendarEvents[0]!;
      return { payload: { eventId: event.id, response: pick % 2 === 0 ? 'DECLINED' : 'TENTATIVE', note: `soak ${key}` } };
    }
    case 'timeclock.clock_in':
      return { payload: {}, actAs: 'employee' };
    case 'deal.close': {
      const open = world.deals.filter((deal) => deal.status === 'OPEN');
      const deal = open[pick % Math.max(1, open.length)] ?? world.deals[0]!;
      return { payload: { dealId: deal.id, status: pick % 3 === 0 ? 'LOST' : 'WON', reason: `soak ${key}` } };
    }
    case 'email.send': {
      const from = data.emailAddresses.find((address) => address.employeeId === admin.id)!.address;
      return { payload: { from, to: 'buyer@example.org', subject: `soak ${key}`, text: 'sent by the soak' } };
    }
    case 'email_draft.update': {
      const drafts = data.drafts.filter((draft) => draft.ownerEmployeeId === admin.id);
      const draft = drafts[index % Math.max(1, drafts.length)] ?? drafts[0]!;
      return { payload: { draftId: draft.id, subject: `soak ${key}` } };
    }
    case 'performance_review.create': {
      const report = world.employees.find((employee) => employee.managerId === admin.id && employee.tokenRole === null)!;
      return { payload: { employeeId: report.id, reviewDate: '2026-11-01', status: 'DRAFT', ratings: [{ criterion: `soak ${key}`, score: 1 + (pick % 5) }] } };
    }
    case 'employee.benefits.set': {
      const employee = world.employees[5 + (index % Math.max(1, world.employees.length - 5))] ?? world.employees[0]!;
      const benefit = data.benefits[pick % data.benefits.length]!;
      return { payload: { employeeId: employee.id, benefitIds: [benefit.id] } };
    }
    case 'location.create':
      return { payload: { reference: `Soak ${key}`, subdomain: `soak-${key}`.toLowerCase() } };
    case 'domain.purchase':
      return { payload: { domain: `soak-${key}.com`.toLowerCase(), expectedPriceMax: 5000 } };
  }
}

/** A write as `GET /writes/{id}` (or the mirror's row) shows it at the end. */
export interface WriteOutcome {
  status: string;
  outcome: string | null;
  error: string | null;
}

/**
 * How many effects of `write` the world holds: records carrying its mark for the kinds that create
 * one (the non-idempotent kinds); for idempotent kinds 1 when the target is in the written state, else 0.
 */
export function effectsOf(write: SoakWrite, simulator: RunningSimulator): number {
  const data = simulator.world.data;
  const mark = `soak ${write.key}`;
  switch (write.kind) {
    case 'transaction.create':
      return simulator.world.transactions.filter((record) => record.description === mark).length;
    case 'email.send':
      return data.emails.filter((email) => email.subject === mark).length;
    case 'performance_review.create':
      return data.performanceReviews.filter((review) => JSON.stringify(review).includes(mark)).length;
    case 'location.create':
      return data.locations.filter((location) => location.reference === `Soak ${write.key}`).length;
    case 'domain.purchase':
      return data.domains.filter((domain) => domain.name === String(write.payload.domain)).length;
    case 'calendar.rsvp':
      return data.calendarEvents.some((event) => event.attendees.some((attendee) => attendee.note === mark)) ? 1 : 0;
    case 'email_draft.update':
      return data.drafts.some((draft) => draft.subject === mark) ? 1 : 0;
    case 'deal.close':
      return simulator.world.deals.some((deal) => deal.wonLostReason === mark) ? 1 : 0;
    case 'employee.benefits.set':
    case 'timeclock.clock_in':
      return 1;
  }
}

/** Kinds whose every send creates a record: two sends are two effects. */
const CREATING: ReadonlySet<WriteKind> = new Set(['transaction.create', 'email.send', 'performance_review.create', 'location.create', 'domain.purchase']);

/**
 * The oracle's verdict on one acknowledged write at the end, or undefined when it holds.
 * `overwritten`: a later change of the world may have replaced an idempotent write's state
 * (another write or churn on the same target), so its state is not checked.
 */
export function writeProblem(write: SoakWrite, outcome: WriteOutcome | undefined, effects: number, overwritten: boolean): string | undefined {
  const name = `write ${write.id} (${write.kind}, key ${write.key})`;
  if (!outcome) return `${name}: acknowledged but not in the mirror's writes table`;
  if (outcome.status === 'queued' || outcome.status === 'sending') return `${name}: still ${outcome.status} at the end (stuck)`;
  if (CREATING.has(write.kind)) {
    if (effects > 1 && outcome.status !== 'needs_review') return `${name}: ${effects} effects in the world, status ${outcome.status}`;
    if (outcome.status === 'succeeded' && effects !== 1) return `${name}: succeeded with ${effects} effects in the world`;
    if (outcome.status === 'failed' && effects !== 0) return `${name}: failed but ${effects} effect(s) in the world (${outcome.outcome})`;
    if (outcome.status === 'needs_review') {
      const claimsDuplicates = /(\d+) ledger records match|record .* is also claimed|late commit|duplicat/i.exec(outcome.outcome ?? '');
      if (effects > 1 && !claimsDuplicates) return `${name}: needs_review with ${effects} effects, but its reason does not say so: ${outcome.outcome}`;
      if (claimsDuplicates && /(\d+) ledger records match/.exec(outcome.outcome ?? '') && effects < 2) return `${name}: needs_review says several ledger records match, the world holds ${effects}: ${outcome.outcome}`;
    }
    return undefined;
  }
  if (outcome.status === 'needs_review') return `${name}: an idempotent kind parked as needs_review: ${outcome.outcome}`;
  if (outcome.status === 'succeeded' && !overwritten && effects === 0) return `${name}: succeeded but the world does not show it`;
  return undefined;
}
