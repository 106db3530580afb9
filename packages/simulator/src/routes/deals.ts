/**
 * POST /deals/{dealId}/close (spec §4.6, scope deals:write) with the transitions of spec §3: see
 * CompanyWorld.closeDeal. Unknown deal 404; `status` other than WON/LOST/OPEN 400; WON <-> LOST
 * directly 409 (not shown in the spec; re-open first).
 */
import { z } from 'zod';
import { HttpError, notFound } from '../http-error.ts';
import { dealView } from '../serialize.ts';
import { TransitionError } from '../world.ts';
import type { RequestContext, Route } from './types.ts';
import { parseBody } from './validation.ts';

const closeBody = z.object({
  status: z.enum(['WON', 'LOST', 'OPEN'], { message: 'must be WON, LOST or OPEN' }),
  reason: z.string().max(2000).optional(),
  markContactAsCustomer: z.boolean().optional(),
});

function closeDeal(context: RequestContext) {
  const deal = context.company.deals.find((candidate) => candidate.id === context.params.dealId);
  if (!deal) throw notFound(`Deal ${context.params.dealId} not found`);
  const body = parseBody(closeBody, context.body);
  try {
    const updated = context.company.closeDeal(deal.id, body);
    return { message: `Deal ${body.status === 'OPEN' ? 're-opened' : `marked ${body.status}`}`, content: { deal: dealView(updated) } };
  } catch (error) {
    if (error instanceof TransitionError) throw new HttpError(409, error.message);
    throw error;
  }
}

/** POST /deals/{dealId}/close (spec §4.6). */
export const dealRoutes: Route[] = [{ method: 'POST', path: '/deals/{dealId}/close', scope: 'deals:write', handler: closeDeal }];
