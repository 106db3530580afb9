/**
 * The streams, described as data (in the manner of Airbyte's declarative streams): where the list
 * lives, how a record maps to mirror columns, how its cursor works, and how a change is named.
 * One engine (src/sync/engine.ts); the mirror (src/mirror/store.ts) stores them runs them all; add a stream by describing it here.
 */
import type { z } from 'zod';
import { dealSchema, onboardingSchema, transactionListItemSchema } from '../client/schemas.ts';

export type StreamName = 'transactions' | 'deals' | 'onboardings';
export const STREAM_NAMES: readonly StreamName[] = ['transactions', 'deals', 'onboardings'];

/** A record as the API returned it (already validated). */
export type ApiRecord = Record<string, unknown>;

/** A mirror column and the record field (dot path) it holds. */
export interface ColumnMapping {
  column: string;
  /** Dot path into the record, e.g. `user.fullname`. */
  field: string;
}

/**
 * How incremental runs find what changed:
 * - `updatedAfter`: ask for records updated after the cursor minus the overlap (spec §1 Pagination).
 * - `complete-scan`: every run lists the whole stream. Used where leaving the list IS the change
 *   (an onboarding that completes disappears, spec §4.1), so each run feeds the two-scan rule.
 */
export type IncrementalStrategy = 'updatedAfter' | 'complete-scan';

export interface StreamDefinition {
  name: StreamName;
  /** List endpoint path under /api/public/v1. */
  path: string;
  /** Member of `content` holding the item array. */
  itemsKey: string;
  /** Validates one list item; lenient to unknown fields, strict on stored ones. */
  itemSchema: z.ZodType<ApiRecord>;
  /** Mirror table (DESIGN.md mirror contract). */
  table: StreamName;
  /** Typed columns and the fields they come from. `id` is the record key. */
  columns: readonly ColumnMapping[];
  /**
   * Fields that define the record's content for change detection: the ones the list endpoint
   * returns. A write response may carry more (a transaction's `counterpartyName`); those are stored
   * but do not make a later list page look like a change.
   */
  listedFields: readonly string[];
  incremental: IncrementalStrategy;
  /** When the list endpoint answers 404, the stream is reported unsupported instead of failing (DESIGN.md Deals). */
  unsupportedOn404: boolean;
  /**
   * Names the change from the stored record (undefined when new) to the listed one.
   * @param changed the listed fields whose value differs
   */
  classify(previous: ApiRecord | undefined, next: ApiRecord, changed: readonly string[]): string;
  /** Event type when a record is gone from two consecutive complete scans. */
  goneEventType: string;
}

const TRANSACTION_FIELDS = ['id', 'type', 'status', 'amount', 'description', 'date'] as const;
const DEAL_FIELDS = [
  'id', 'referenceId', 'locationId', 'pipelineId', 'stageId', 'accountId', 'ownerId', 'title', 'value', 'currency', 'status',
  'probability', 'expectedCloseDate', 'sortOrder', 'wonLostReason', 'closedAt', 'stageMovedAt', 'createdAt', 'updatedAt',
] as const;

/** `referenceId` -> `reference_id`. */
function snakeCase(field: string): string {
  return field.replace(/\./g, '_').replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

function columnsFor(fields: readonly string[]): ColumnMapping[] {
  return fields.map((field) => ({ column: snakeCase(field), field }));
}

export const transactionsStream: StreamDefinition = {
  name: 'transactions',
  path: '/transactions',
  itemsKey: 'transactions',
  itemSchema: transactionListItemSchema as z.ZodType<ApiRecord>,
  table: 'transactions',
  // The create response (spec §4.7) adds these; list items (spec §2) do not carry them.
  columns: columnsFor([...TRANSACTION_FIELDS, 'counterpartyName', 'irsCategory', 'dueDate', 'legalEntityId', 'createdAt', 'updatedAt']),
  listedFields: TRANSACTION_FIELDS,
  incremental: 'updatedAfter',
  unsupportedOn404: false,
  classify(previous, next, changed) {
    if (!previous) return 'transaction.created';
    if (changed.includes('status')) {
      if (next.status === 'VOIDED') return 'transaction.voided';
      if (next.status === 'CONFIRMED' && previous.status === 'PENDING') return 'transaction.confirmed';
    }
    return 'transaction.updated';
  },
  goneEventType: 'transaction.deleted',
};

export const dealsStream: StreamDefinition = {
  name: 'deals',
  path: '/deals',
  itemsKey: 'deals',
  itemSchema: dealSchema as z.ZodType<ApiRecord>,
  table: 'deals',
  columns: columnsFor(DEAL_FIELDS),
  listedFields: DEAL_FIELDS,
  incremental: 'updatedAfter',
  unsupportedOn404: true,
  classify(previous, next, changed) {
    if (!previous) return 'deal.created';
    if (changed.includes('status')) {
      if (next.status === 'WON') return 'deal.won';
      if (next.status === 'LOST') return 'deal.lost';
      if (next.status === 'OPEN') return 'deal.reopened';
    }
    if (changed.includes('stageId')) return 'deal.stage_changed';
    return 'deal.updated';
  },
  goneEventType: 'deal.deleted',
};

export const onboardingsStream: StreamDefinition = {
  name: 'onboardings',
  path: '/employee-onboardings',
  itemsKey: 'onboardings',
  itemSchema: onboardingSchema as z.ZodType<ApiRecord>,
  table: 'onboardings',
  columns: [
    { column: 'id', field: 'id' },
    { column: 'onboarding_step', field: 'onboardingStep' },
    { column: 'user_fullname', field: 'user.fullname' },
  ],
  listedFields: ['id', 'onboardingStep', 'user.fullname'],
  incremental: 'complete-scan',
  unsupportedOn404: false,
  classify(previous, _next, changed) {
    if (!previous) return 'onboarding.started';
    if (changed.includes('onboardingStep')) return 'onboarding.step_changed';
    return 'onboarding.updated';
  },
  // Only employees who have not completed onboarding are listed (spec §4.1): leaving the list is completion.
  goneEventType: 'onboarding.completed',
};

export const STREAMS: Readonly<Record<StreamName, StreamDefinition>> = {
  transactions: transactionsStream,
  deals: dealsStream,
  onboardings: onboardingsStream,
};

/**
 * Looks a stream up by name.
 * @throws Error naming the valid streams when `name` is not one.
 */
export function streamByName(name: string): StreamDefinition {
  const stream = (STREAMS as Record<string, StreamDefinition | undefined>)[name];
  if (!stream) throw new Error(`unknown stream "${name}": expected one of ${STREAM_NAMES.join(', ')}`);
  return stream;
}

/** Reads a dot path (`user.fullname`) from a record; undefined when any step is missing. */
export function readField(record: ApiRecord, path: string): unknown {
  if (!path.includes('.')) return record[path];
  let node: unknown = record;
  for (const part of path.split('.')) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}
