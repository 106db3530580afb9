/**
 * `transaction.create`: POST /transactions (spec §4.7, scope `transactions:write`).
 *
 * Rules (spec §4.7, §8): `type` one of the seven transaction types; `amount` integer cents >= 1 (the
 * type decides the stored sign: EXPENSE, DEDUCTION, TAX_PAYMENT are stored negative); `taxQuarter`
 * 1 to 4; `status` only `PENDING` (omit it for a confirmed transaction); dates ISO 8601.
 *
 * Not idempotent: sent again only when it provably never reached the server. An ambiguous outcome
 * is reconciled by finding the transaction in the ledger (GET /transactions filtered by type and
 * createdAfter, matching amount, description, date and status). Written through into `transactions`.
 */
import { z } from 'zod';
import { TRANSACTION_TYPES, transactionSchema, type Transaction } from '../../client/schemas.ts';
import { cents, defineWriteKind, emailAddress, isoDateOrTimestamp, nonEmptyText, text } from './fields.ts';

/** Types stored with a negative amount (spec §2 Transaction). */
const NEGATIVE_TYPES: ReadonlySet<string> = new Set(['EXPENSE', 'DEDUCTION', 'TAX_PAYMENT']);

/** The payload of `transaction.create` (spec §4.7), with the rules in this module's header; every message names the rule. */
const transactionCreatePayload = z.strictObject({
  type: z.enum(TRANSACTION_TYPES, { error: `must be one of ${TRANSACTION_TYPES.join(', ')}` }),
  amount: cents(1),
  description: text.max(1000, { error: 'must be at most 1000 characters' }).optional(),
  date: isoDateOrTimestamp.optional(),
  status: z.literal('PENDING', { error: 'must be PENDING (omit it for a confirmed transaction)' }).optional(),
  dueDate: isoDateOrTimestamp.optional(),
  notes: text.optional(),
  locationId: nonEmptyText.optional(),
  legalEntityId: nonEmptyText.optional(),
  irsCategory: nonEmptyText.optional(),
  taxYear: z
    .number({ error: 'must be a year number' })
    .int({ error: 'must be an integer year' })
    .min(1900, { error: 'must be a year from 1900 to 2200' })
    .max(2200, { error: 'must be a year from 1900 to 2200' })
    .optional(),
  taxQuarter: z
    .number({ error: 'must be a number 1 to 4' })
    .int({ error: 'must be an integer 1 to 4' })
    .min(1, { error: 'must be 1 to 4' })
    .max(4, { error: 'must be 1 to 4' })
    .optional(),
  counterpartyName: text.optional(),
  counterpartyEmail: emailAddress.optional(),
});

/** A validated `transaction.create` payload (`amount` in positive cents; the type decides the sign). */
export type TransactionCreatePayload = z.output<typeof transactionCreatePayload>;

/** Same instant (timestamps) or same day (a date-only payload against the server's normalized value). */
function sameDate(listed: unknown, given: string): boolean {
  if (typeof listed !== 'string') return false;
  if (listed === given) return true;
  const a = Date.parse(listed);
  const b = Date.parse(given);
  return Number.isFinite(a) && Number.isFinite(b) && a === b;
}

/** True when a ledger item carries every field this payload would have given it. */
export function transactionMatches(item: Record<string, unknown>, payload: TransactionCreatePayload): boolean {
  if (item.type !== payload.type) return false;
  if (typeof item.amount !== 'number' || Math.abs(item.amount) !== payload.amount) return false;
  const expectedSign = NEGATIVE_TYPES.has(payload.type) ? -1 : 1;
  if (Math.sign(item.amount) !== expectedSign) return false;
  if ((item.description ?? '') !== (payload.description ?? '')) return false;
  if (payload.date !== undefined && !sameDate(item.date, payload.date)) return false;
  const pending = item.status === 'PENDING';
  if ((payload.status === 'PENDING') !== pending) return false;
  return true;
}

/** The `transaction.create` write kind (spec §4.7): request, response, retry safety and ambiguity resolution. */
export const transactionCreate = defineWriteKind({
  name: 'transaction.create',
  spec: 'spec §4.7',
  summary: 'Write a ledger transaction (amount in cents; the type decides the sign)',
  scope: 'transactions:write',
  payloadSchema: transactionCreatePayload,
  method: 'POST',
  path: () => '/transactions',
  body: (payload) => ({ ...payload }),
  responseSchema: z.looseObject({ transaction: transactionSchema }),
  retrySafety: 'unsent-only',
  ambiguity: {
    resolve: 'ledger-lookup',
    lookup: {
      path: '/transactions',
      itemsKey: 'transactions',
      recordKey: 'transaction',
      query: (payload, createdAfterIso) => ({ type: payload.type, createdAfter: createdAfterIso, sortBy: 'createdAt', sortOrder: 'asc' }),
      matches: (item, payload) => transactionMatches(item, payload),
      stream: 'transactions',
    },
  },
  remoteId: (content) => content.transaction.id,
  writeThrough: { stream: 'transactions', record: (content: { transaction: Transaction }) => content.transaction },
});
