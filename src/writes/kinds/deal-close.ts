/**
 * `deal.close`: POST /deals/{dealId}/close (spec §4.6, §3 Deal status, scope `deals:write`).
 *
 * Rules: `status` WON, LOST, or OPEN to re-open; `markContactAsCustomer` only on WON (spec §4.6: "on
 * a WON deal ... opt-in"). Idempotent: closing with the status the deal already has changes nothing.
 * Written through into `deals`.
 */
import { z } from 'zod';
import { dealSchema, type Deal } from '../../client/schemas.ts';
import { defineWriteKind, pathId, segment, text, without } from './fields.ts';

/** The payload of `deal.close` (spec §4.6), with the rules in this module's header; every message names the rule. */
const dealClosePayload = z
  .strictObject({
    dealId: pathId,
    status: z.enum(['WON', 'LOST', 'OPEN'], { error: 'must be WON, LOST, or OPEN (to re-open)' }),
    reason: text.max(2000, { error: 'must be at most 2000 characters' }).optional(),
    markContactAsCustomer: z.boolean({ error: 'must be true or false' }).optional(),
  })
  .superRefine((payload, context) => {
    if (payload.markContactAsCustomer === true && payload.status !== 'WON') {
      context.addIssue({ code: 'custom', path: ['markContactAsCustomer'], message: 'is only valid with status WON' });
    }
  });

/** The `deal.close` write kind (spec §4.6): request, response, retry safety and ambiguity resolution. */
export const dealClose = defineWriteKind({
  name: 'deal.close',
  spec: 'spec §4.6',
  summary: 'Close a deal as WON or LOST, or re-open it',
  scope: 'deals:write',
  payloadSchema: dealClosePayload,
  method: 'POST',
  path: (payload) => `/deals/${segment(payload.dealId)}/close`,
  body: (payload) => without(payload, 'dealId'),
  responseSchema: z.looseObject({ deal: dealSchema }),
  retrySafety: 'idempotent',
  ambiguity: { resolve: 'resend' },
  remoteId: (content) => content.deal.id,
  writeThrough: { stream: 'deals', record: (content: { deal: Deal }) => content.deal },
});
