/**
 * POST /transactions (spec §4.7, scope transactions:write). `amount` is positive cents (integer >= 1)
 * and the type decides the stored sign; `status` PENDING or CONFIRMED (default CONFIRMED); a PENDING
 * transaction with a dueDate shows in payables. The write posts journal entries and recomputes the tax
 * liability (CompanyWorld.createTransaction). `locationId`/`legalEntityId` must name the company's
 * own (else 400); `taxQuarter` 1..4.
 */
import { z } from 'zod';
import { badRequest } from '../http-error.ts';
import { TRANSACTION_TYPES } from '../records.ts';
import { transactionDetail } from '../serialize.ts';
import type { RequestContext, Route } from './types.ts';
import { isoTimestamp, parseBody } from './validation.ts';

const createBody = z.object({
  type: z.enum(TRANSACTION_TYPES, { message: `must be one of ${TRANSACTION_TYPES.join(', ')}` }),
  amount: z.number({ message: 'must be a number of cents' }).int({ message: 'must be an integer number of cents' }).min(1, { message: 'must be at least 1' }),
  description: z.string().max(1000).optional(),
  date: isoTimestamp.optional(),
  status: z.enum(['PENDING', 'CONFIRMED'], { message: 'must be PENDING or CONFIRMED' }).optional(),
  dueDate: isoTimestamp.optional(),
  notes: z.string().optional(),
  locationId: z.string().optional(),
  legalEntityId: z.string().optional(),
  irsCategory: z.string().optional(),
  taxYear: z.number().int().min(1900).max(2200).optional(),
  taxQuarter: z.number().int().min(1, { message: 'must be 1 to 4' }).max(4, { message: 'must be 1 to 4' }).optional(),
  counterpartyName: z.string().optional(),
  counterpartyEmail: z.string().optional(),
});

function createTransaction(context: RequestContext) {
  const body = parseBody(createBody, context.body);
  const data = context.company.data;
  if (body.locationId !== undefined && !data.locations.some((location) => location.id === body.locationId)) {
    throw badRequest(`locationId: ${body.locationId} is not a location of your company`);
  }
  if (body.legalEntityId !== undefined && !data.legalEntities.some((entity) => entity.id === body.legalEntityId)) {
    throw badRequest(`legalEntityId: ${body.legalEntityId} is not a legal entity of your company`);
  }
  const now = context.company.now();
  const record = context.company.createTransaction({
    type: body.type,
    amount: body.amount,
    status: body.status ?? 'CONFIRMED',
    description: body.description ?? '',
    date: body.date ?? `${now.slice(0, 10)}T00:00:00.000Z`,
    dueDate: body.dueDate ?? null,
    notes: body.notes ?? null,
    locationId: body.locationId ?? null,
    legalEntityId: body.legalEntityId ?? null,
    irsCategory: body.irsCategory ?? null,
    taxYear: body.taxYear ?? null,
    taxQuarter: body.taxQuarter ?? null,
    counterpartyName: body.counterpartyName ?? null,
    counterpartyEmail: body.counterpartyEmail ?? null,
    createdAt: now,
    updatedAt: now,
  });
  return { message: 'Transaction created', content: { transaction: transactionDetail(record) } };
}

/** POST /transactions (spec §4.7). */
export const transactionRoutes: Route[] = [{ method: 'POST', path: '/transactions', scope: 'transactions:write', handler: createTransaction }];
