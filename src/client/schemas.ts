/**
 * zod schemas for the API's responses that the mirror stores (spec §2) and for the response envelope
 * (spec §1 conventions 3 and "Pagination").
 *
 * Lenient to fields we do not know (`z.looseObject`: extra members pass through untouched, so the
 * mirror's `raw` column keeps them), strict on the fields we store: a wrong type or an unknown enum
 * value is an `InvalidResponseError` naming the field, never a silently wrong row.
 */
import { z } from 'zod';
import { asListedCheck } from './items-as-listed.ts';
import { storabilityIssue } from './storable-json.ts';

/** Describes a value's type the way the error messages do: `string`, `null`, `array`, `undefined`. */
function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** A whole number (cents, steps, ids); the message reads `expected integer, received string`. */
function integer() {
  return z.int({ error: (issue) => `expected integer, received ${typeName(issue.input)}` });
}

/** An ISO 8601 timestamp or `YYYY-MM-DD` date, kept as the server's string (spec §1 convention 4). */
const timestamp = z.string();

/** Transaction types (spec §2 Transaction). EXPENSE, DEDUCTION and TAX_PAYMENT are stored negative. */
export const TRANSACTION_TYPES = ['INCOME', 'EXPENSE', 'DEDUCTION', 'TAX_PAYMENT', 'REFUND', 'TRANSFER', 'INVOICE'] as const;
/** Transaction statuses (spec §2 Transaction, §3). */
const TRANSACTION_STATUSES = ['PENDING', 'CONFIRMED', 'VOIDED'] as const;
/** Deal statuses (spec §2 Deal, §3). */
const DEAL_STATUSES = ['OPEN', 'WON', 'LOST'] as const;

/** One of `TRANSACTION_TYPES`. */
const transactionTypeSchema = z.enum(TRANSACTION_TYPES);
/** One of `TRANSACTION_STATUSES`. */
const transactionStatusSchema = z.enum(TRANSACTION_STATUSES);
/** One of `DEAL_STATUSES`. */
const dealStatusSchema = z.enum(DEAL_STATUSES);

/**
 * One item of `GET /transactions` (spec §2 Transaction "Fields in list items", §4.13):
 * `{ id, type, status, amount (signed integer cents), description, date }`.
 */
export const transactionListItemSchema = z.looseObject({
  id: z.string().min(1),
  type: transactionTypeSchema,
  status: transactionStatusSchema,
  amount: integer(),
  description: z.string(),
  date: timestamp,
});

/**
 * The `content.transaction` of `POST /transactions` (spec §2 Transaction "Fields in the create
 * response", §4.7). `counterpartyName`, `irsCategory`, `dueDate` and `legalEntityId` come from
 * optional request properties, so they may be null or absent when the write did not set them (the
 * spec does not show their nullability).
 */
export const transactionSchema = z.looseObject({
  id: z.string().min(1),
  type: transactionTypeSchema,
  status: transactionStatusSchema,
  amount: integer(),
  description: z.string().nullish(),
  counterpartyName: z.string().nullish(),
  irsCategory: z.string().nullish(),
  date: timestamp,
  dueDate: timestamp.nullish(),
  legalEntityId: z.string().nullish(),
  createdAt: timestamp,
  updatedAt: timestamp,
});
/** A validated `content.transaction` (spec §4.7); `amount` is signed cents. */
export type Transaction = z.infer<typeof transactionSchema>;

/** A deal (spec §2 Deal): list items of `GET /deals` and `content.deal` of `POST /deals/{dealId}/close` (§4.6). */
export const dealSchema = z.looseObject({
  id: z.string().min(1),
  referenceId: z.number(),
  locationId: z.string(),
  pipelineId: z.string(),
  stageId: z.string(),
  accountId: z.string(),
  ownerId: z.string(),
  title: z.string(),
  /** Cents. */
  value: integer(),
  currency: z.string(),
  status: dealStatusSchema,
  probability: z.number(),
  expectedCloseDate: timestamp,
  sortOrder: z.number(),
  wonLostReason: z.string().nullable(),
  closedAt: timestamp.nullable(),
  stageMovedAt: timestamp,
  createdAt: timestamp,
  updatedAt: timestamp,
});
/** A validated deal (spec §2 Deal); `value` is cents. */
export type Deal = z.infer<typeof dealSchema>;

/** An employee onboarding (spec §2, §4.1): `{ id, onboardingStep, user: { fullname } }`. */
export const onboardingSchema = z.looseObject({
  id: z.string().min(1),
  onboardingStep: integer(),
  user: z.looseObject({ fullname: z.string() }),
});

/**
 * What validates one list item: a zod schema, seen only through `safeParse`, so that a schema of a
 * specific record type can stand where a schema of any record is expected (a list of streams).
 */
export interface ItemSchema<T> {
  safeParse(input: unknown): { success: true; data: T } | { success: false; error: z.ZodError };
}

/**
 * `schema`, first refusing an item that either mirror cannot store (src/client/storable-json.ts: a
 * NUL character or an unpaired surrogate in any string or key, nesting deeper than
 * `MAX_JSON_DEPTH`): such a record is an invalid item, quarantined like any other (docs/sync.md
 * "Invalid records") instead of failing its page and every later run at a SQL cast. Refused on
 * SQLite too, so that both back ends hold the same records. The storability check comes first and
 * is iterative, so nothing recursive (the schema, the quarantine) ever walks an item nested too deep.
 * An item that `schema` accepts as it is (src/client/items-as-listed.ts: its keys in the shape's order,
 * every value passing unchanged) is returned itself, not zod's equal copy; any other goes through zod.
 */
export function storableItems<T>(schema: ItemSchema<T>): ItemSchema<T> {
  const asListed = asListedCheck(schema);
  return {
    safeParse(input) {
      const unstorable = storabilityIssue(input);
      if (unstorable) return { success: false, error: new z.ZodError([{ code: 'custom', path: unstorable.path, message: unstorable.rule, input: undefined }]) };
      if (asListed?.(input)) return { success: true, data: input as T };
      return schema.safeParse(input);
    },
  };
}

/** `content.pagination` of every list response (spec §1 Pagination). */
export const paginationSchema = z.looseObject({
  /** Items across all pages. */
  total: integer().min(0),
  /** The limit used for this request. */
  limit: integer().min(0),
  /** The offset used for this request. */
  offset: integer().min(0),
  /** True when more items exist beyond this page. */
  hasMore: z.boolean(),
});
/** A validated `content.pagination` (spec §1 Pagination). */
export type Pagination = z.infer<typeof paginationSchema>;

/**
 * The body of every successful response (spec §1 convention 3): `{ message, content }`. `content`
 * must be present; its shape is checked by the caller's schema.
 */
export const envelopeSchema = z.looseObject({
  message: z.string(),
  content: z.custom<unknown>((value) => value !== undefined, { error: 'expected the payload, received undefined' }),
});

/** An error response body (spec §7): `{ message, err?, retryAfter? }`; anything else passes through. */
export const errorBodySchema = z.looseObject({
  message: z.unknown().optional(),
  err: z.unknown().optional(),
  retryAfter: z.unknown().optional(),
});
