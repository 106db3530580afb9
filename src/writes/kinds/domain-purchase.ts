/**
 * `domain.purchase`: POST /domains (spec §4.14, scope `domains:write`). It SPENDS MONEY: the yearly
 * price is deducted from company credits.
 *
 * Rules: `domain` a fully qualified name; `expectedPriceMax` REQUIRED, integer cents, at most 50000
 * (the API purchase limit of 500 USD, spec §8): the server fails the purchase before any charge when
 * the price is higher.
 *
 * Never sent again once it may have reached the server: an ambiguous outcome is parked for review.
 */
import { z } from 'zod';
import { defineWriteKind } from './fields.ts';

/** The API purchase limit (spec §4.14 rule 3, §8): 500 USD, in cents. */
export const DOMAIN_PURCHASE_LIMIT_CENTS = 50_000;

/** The payload of `domain.purchase` (spec §4.14), with the rules in this module's header; every message names the rule. */
const domainPurchasePayload = z.strictObject({
  domain: z
    .string({ error: 'must be a fully qualified domain name' })
    .trim()
    .toLowerCase()
    .regex(/^(?=.{4,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/, {
      error: 'must be a fully qualified domain name, e.g. example-bistro.com',
    }),
  expectedPriceMax: z
    .number({ error: 'is required: the maximum yearly price you accept, in cents' })
    .int({ error: 'must be an integer number of cents' })
    .min(1, { error: 'must be at least 1 (cents)' })
    .max(DOMAIN_PURCHASE_LIMIT_CENTS, { error: `must be at most ${DOMAIN_PURCHASE_LIMIT_CENTS} (cents): the API purchase limit is 500 USD` }),
});

/** The `domain.purchase` write kind (spec §4.14): request, response, retry safety and ambiguity resolution. */
export const domainPurchase = defineWriteKind({
  name: 'domain.purchase',
  spec: 'spec §4.14',
  summary: 'Buy a custom domain (spends company credits; expectedPriceMax required)',
  scope: 'domains:write',
  payloadSchema: domainPurchasePayload,
  method: 'POST',
  path: () => '/domains',
  body: (payload) => ({ ...payload }),
  responseSchema: z.looseObject({ domain: z.looseObject({ id: z.string(), name: z.string() }), pricePaid: z.number() }),
  retrySafety: 'never-after-send',
  ambiguity: {
    resolve: 'park',
    reason: 'the response was lost after the purchase may have been charged; a purchase is never sent again: check the company domains and credits',
  },
  remoteId: (content) => content.domain.id,
});
