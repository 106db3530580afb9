/**
 * The write kinds (docs/writes.md, spec §4): one declarative description per mutation of the API,
 * all run by one engine (src/writes/write-engine.ts). Add a kind by describing it in its own file and
 * listing it here.
 *
 * | kind                      | request                                   | retry safety        | ambiguous outcome | mirror       |
 * |---------------------------|-------------------------------------------|---------------------|-------------------|--------------|
 * | transaction.create        | POST /transactions (§4.7)                 | unsent-only         | ledger lookup     | transactions |
 * | calendar.rsvp             | POST /calendar-events/{id}/rsvp (§4.3)    | idempotent          | resend            |              |
 * | timeclock.clock_in        | POST /time-clock-entries (§4.19)          | conflict-means-done | resend            |              |
 * | deal.close                | POST /deals/{id}/close (§4.6)             | idempotent          | resend            | deals        |
 * | email.send                | POST /emails (§4.5)                       | unsent-only         | park              |              |
 * | email_draft.update        | PATCH /email-drafts/{id} (§4.9)           | idempotent          | resend            |              |
 * | performance_review.create | POST /performance-reviews (§4.15)         | unsent-only         | park              |              |
 * | employee.benefits.set     | PUT /employees/{id}/benefits (§4.16)      | idempotent          | resend            |              |
 * | location.create           | POST /locations (§4.18)                   | unsent-only         | park              |              |
 * | domain.purchase           | POST /domains (§4.14)                     | never-after-send    | park              |              |
 */
import type { z } from 'zod';
import { calendarRsvp } from './calendar-rsvp.ts';
import { dealClose } from './deal-close.ts';
import { domainPurchase } from './domain-purchase.ts';
import { emailDraftUpdate } from './email-draft-update.ts';
import { emailSend } from './email-send.ts';
import { employeeBenefitsSet } from './employee-benefits-set.ts';
import { locationCreate } from './location-create.ts';
import { performanceReviewCreate } from './performance-review-create.ts';
import { timeclockClockIn } from './timeclock-clock-in.ts';
import { transactionCreate } from './transaction-create.ts';
import type { WriteKind } from './types.ts';

/** The registry of write kinds by name (the table in this module's header); the engine looks kinds up here. */
export const WRITE_KINDS = {
  [transactionCreate.name]: transactionCreate,
  [calendarRsvp.name]: calendarRsvp,
  [timeclockClockIn.name]: timeclockClockIn,
  [dealClose.name]: dealClose,
  [emailSend.name]: emailSend,
  [emailDraftUpdate.name]: emailDraftUpdate,
  [performanceReviewCreate.name]: performanceReviewCreate,
  [employeeBenefitsSet.name]: employeeBenefitsSet,
  [locationCreate.name]: locationCreate,
  [domainPurchase.name]: domainPurchase,
} as const;

/** `transaction.create`, `calendar.rsvp`, ... */
export type WriteKindName = keyof typeof WRITE_KINDS;

/** Every write kind name, in registry order (for `--help`, validation messages). */
export const WRITE_KIND_NAMES = Object.keys(WRITE_KINDS) as WriteKindName[];

/** What `enqueueWrite(kind, payload)` accepts for `kind` (before defaults and normalization). */
export type WritePayload<K extends WriteKindName> = z.input<(typeof WRITE_KINDS)[K]['payloadSchema']>;

/** True when `name` is a known write kind. */
export function isWriteKindName(name: unknown): name is WriteKindName {
  return typeof name === 'string' && Object.hasOwn(WRITE_KINDS, name);
}

/** The kind named `name`, typed loosely for the engine (which handles every kind alike). */
export function writeKind(name: WriteKindName): WriteKind {
  return WRITE_KINDS[name] as unknown as WriteKind;
}

export { ENTRY_ALREADY_OPEN } from './timeclock-clock-in.ts';
export { DOMAIN_PURCHASE_LIMIT_CENTS } from './domain-purchase.ts';
export { transactionMatches } from './transaction-create.ts';
export type { AmbiguityResolution, LedgerLookup, PayloadInput, PayloadOutput, RetrySafety, WriteKind, WriteThrough } from './types.ts';
