/**
 * The streams the worker mirrors, and their registry. Adding a stream is one definition (here, or a
 * file of its own) and one line in `STREAM_LIST`: the configuration's `sync.streams`, `--stream`,
 * `status`, the metric labels, the stream's mirror table (created at open), the event schemas, the
 * tests that cover every stream and the docs' stream tables (`npm run docs:streams`) all derive from
 * the registry (docs/adding-a-stream.md).
 */
import { dealSchema, onboardingSchema, transactionListItemSchema } from '../client/schemas.ts';
import { column, defineStream, listRequest, type ApiRecord, type StreamDefinition } from './define-stream.ts';
import { customersStream } from './customers-definition.ts';
import { qaCorrectiveActionsStream } from './qa-corrective-actions-definition.ts';

/** `GET /transactions` (spec §2 Transaction, §4.13): the company's ledger. */
export const transactionsStream = defineStream({
  name: 'transactions',
  specSection: '§4.13',
  request: listRequest('/transactions', 'transactions', { cursor: 'updatedAfter' }),
  itemSchema: transactionListItemSchema,
  key: 'id',
  columns: [
    column('id', 'TEXT', { primaryKey: true }),
    column('type', 'TEXT', { notNull: true }),
    column('status', 'TEXT', { notNull: true }),
    // Signed cents (spec §2 Transaction): EXPENSE, DEDUCTION and TAX_PAYMENT are negative.
    column('amount', 'INTEGER', { notNull: true, note: 'signed cents' }),
    column('description', 'TEXT'),
    column('date', 'TEXT'),
    // The create response (spec §4.7) adds these; list items (spec §2) do not carry them.
    column('counterpartyName', 'TEXT'),
    column('irsCategory', 'TEXT'),
    column('dueDate', 'TEXT'),
    column('legalEntityId', 'TEXT'),
    column('createdAt', 'TEXT'),
    column('updatedAt', 'TEXT'),
  ],
  listedFields: ['id', 'type', 'status', 'amount', 'description', 'date'],
  changes: {
    events: ['transaction.created', 'transaction.updated', 'transaction.voided', 'transaction.confirmed', 'transaction.deleted'],
    classify(previous, next, changed) {
      if (!previous) return 'transaction.created';
      if (changed.includes('status')) {
        if (next.status === 'VOIDED') return 'transaction.voided';
        if (next.status === 'CONFIRMED' && previous.status === 'PENDING') return 'transaction.confirmed';
      }
      return 'transaction.updated';
    },
    gone: 'transaction.deleted',
  },
});

const DEAL_FIELDS = [
  'id', 'referenceId', 'locationId', 'pipelineId', 'stageId', 'accountId', 'ownerId', 'title', 'value', 'currency', 'status',
  'probability', 'expectedCloseDate', 'sortOrder', 'wonLostReason', 'closedAt', 'stageMovedAt', 'createdAt', 'updatedAt',
];

/**
 * `GET /deals`: not shown in the spec; we assume the list conventions (`content.deals`). A 404 marks
 * the stream unsupported; deals then arrive from write responses only (spec §4.6).
 */
export const dealsStream = defineStream({
  name: 'deals',
  specSection: 'not shown',
  request: listRequest('/deals', 'deals', { cursor: 'updatedAfter', unsupportedOn404: true }),
  itemSchema: dealSchema,
  key: 'id',
  columns: [
    column('id', 'TEXT', { primaryKey: true }),
    column('referenceId', 'INTEGER'),
    column('locationId', 'TEXT'),
    column('pipelineId', 'TEXT'),
    column('stageId', 'TEXT'),
    column('accountId', 'TEXT'),
    column('ownerId', 'TEXT'),
    column('title', 'TEXT'),
    column('value', 'INTEGER', { note: 'cents' }),
    column('currency', 'TEXT'),
    column('status', 'TEXT', { notNull: true }),
    column('probability', 'REAL'),
    column('expectedCloseDate', 'TEXT'),
    column('sortOrder', 'REAL'),
    column('wonLostReason', 'TEXT'),
    column('closedAt', 'TEXT'),
    column('stageMovedAt', 'TEXT'),
    column('createdAt', 'TEXT'),
    column('updatedAt', 'TEXT'),
  ],
  listedFields: DEAL_FIELDS,
  changes: {
    events: ['deal.created', 'deal.updated', 'deal.stage_changed', 'deal.won', 'deal.lost', 'deal.reopened', 'deal.deleted'],
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
    gone: 'deal.deleted',
  },
});

/**
 * `GET /employee-onboardings` (spec §4.1): only employees who have not completed onboarding are
 * listed, so leaving the list is completion, and every sync is a complete scan.
 */
export const onboardingsStream = defineStream({
  name: 'onboardings',
  specSection: '§4.1',
  request: listRequest('/employee-onboardings', 'onboardings', { cursor: 'complete-scan' }),
  itemSchema: onboardingSchema,
  key: 'id',
  columns: [column('id', 'TEXT', { primaryKey: true }), column('onboardingStep', 'INTEGER', { notNull: true }), column('user.fullname', 'TEXT')],
  // Other fields (spec §2 "other fields") stay in `raw`.
  listedFields: ['id', 'onboardingStep', 'user.fullname'],
  changes: {
    events: ['onboarding.started', 'onboarding.step_changed', 'onboarding.updated', 'onboarding.completed'],
    classify(previous, _next, changed) {
      if (!previous) return 'onboarding.started';
      if (changed.includes('onboardingStep')) return 'onboarding.step_changed';
      return 'onboarding.updated';
    },
    gone: 'onboarding.completed',
  },
});

/** The registry: every stream, in the order `status` lists them and a plain `sync` runs them. */
export const STREAM_LIST = [transactionsStream, dealsStream, onboardingsStream, customersStream, qaCorrectiveActionsStream] as const;

/** A registered stream's name: `transactions`, `deals`, `onboardings`, `customers`, `qa_corrective_actions`. */
export type StreamName = (typeof STREAM_LIST)[number]['name'];

/** Every registered stream name, in registry order. */
export const STREAM_NAMES: readonly StreamName[] = STREAM_LIST.map((stream) => stream.name);

/** The registered streams by name, each with its own record type. */
export const STREAMS = Object.fromEntries(STREAM_LIST.map((stream) => [stream.name, stream])) as {
  readonly [Name in StreamName]: Extract<(typeof STREAM_LIST)[number], { name: Name }>;
};

/** A registered stream, its record type erased (what the engine and the mirror handle alike). */
export type RegisteredStream = StreamDefinition<ApiRecord, StreamName>;

/**
 * Looks a stream up by name.
 * @throws Error naming the valid streams when `name` is not one.
 */
export function streamByName(name: string): RegisteredStream {
  const stream = STREAM_LIST.find((candidate) => candidate.name === name);
  if (!stream) throw new Error(`unknown stream "${name}": expected one of ${STREAM_NAMES.join(', ')}`);
  return stream;
}

/** True when `name` is a registered stream. */
export function isStreamName(name: string): name is StreamName {
  return (STREAM_NAMES as readonly string[]).includes(name);
}

/**
 * Adds a stream to the registry at run time, after the built-in ones: `STREAM_LIST`, `STREAM_NAMES`,
 * `STREAMS` and `streamByName` see it at once. For tests that prove a new stream needs nothing but
 * its definition (test/streams/throwaway-setup.ts): call it before any module that derives from the
 * registry when it loads (the configuration schema's stream names, the event schemas, the metrics)
 * is imported, as a vitest setup file does. A shipped stream is a line in `STREAM_LIST` instead.
 * @throws Error naming the stream when a stream of that name (or table) is registered already
 */
export function registerStream(definition: StreamDefinition): void {
  if (STREAM_LIST.some((stream) => stream.name === definition.name)) throw new Error(`stream ${definition.name}: a stream of that name is registered already`);
  (STREAM_LIST as unknown as StreamDefinition[]).push(definition);
  (STREAM_NAMES as string[]).push(definition.name);
  (STREAMS as Record<string, StreamDefinition>)[definition.name] = definition;
}
