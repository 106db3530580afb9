/**
 * POST /domains (spec §4.14, scope domains:write) and GET /domains/{domainId} (spec §4.20, scope
 * domains:read).
 *
 * Purchase order of checks, all before any charge:
 *   400 the name is not a fully qualified domain name, or expectedPriceMax is not a non-negative integer
 *   409 `{ message, err }` the domain is not available (registered already, reserved, or an unsold TLD)
 *   403 `{ message, err }` the yearly price is above the API purchase limit of 500 USD (50,000 cents)
 *   422 `{ message, err }` the price exceeds `expectedPriceMax` (the spec says only "fails before any
 *       charge"; 422 tells the caller the request was understood but its price condition failed)
 *   402 `{ message, err }` company credits do not cover the price (not shown in the spec)
 * Then the price is deducted from `company.data.creditsCents` and the domain registered.
 */
import { z } from 'zod';
import { HttpError, notFound } from '../http-error.ts';
import { domainDetailView } from '../serialize.ts';
import type { RequestContext, Route } from './types.ts';
import { parseBody } from './validation.ts';

/** The API purchase limit (spec §4.14 rule 3, §8): 500 USD in cents. */
export const DOMAIN_PURCHASE_LIMIT_CENTS = 50_000;

/** Yearly registrar prices in cents by top-level domain (a deterministic stand-in for the registrar). */
export const TLD_PRICES_CENTS: Readonly<Record<string, number>> = {
  com: 1_200,
  net: 1_400,
  org: 1_300,
  co: 2_900,
  io: 4_500,
  app: 1_800,
  dev: 1_500,
  ai: 9_000,
  shop: 3_500,
  luxury: 65_000,
};

/** Names the registrar reports as taken, besides every domain already registered in the world. */
export const UNAVAILABLE_DOMAINS: ReadonlySet<string> = new Set(['taken.com', 'google.com', 'example.com', 'bistro.com']);

/** Premium names priced individually (cents). */
export const PREMIUM_DOMAINS: Readonly<Record<string, number>> = { 'premium.com': 250_000, 'pizza.io': 48_000 };

/** The registrar's answer for a name: available or not, and the yearly price in cents. */
export function domainQuote(name: string): { available: boolean; priceCents: number | null } {
  const normalized = name.toLowerCase();
  const tld = normalized.slice(normalized.lastIndexOf('.') + 1);
  if (UNAVAILABLE_DOMAINS.has(normalized) || normalized.startsWith('taken-')) return { available: false, priceCents: null };
  const premium = PREMIUM_DOMAINS[normalized];
  if (premium !== undefined) return { available: true, priceCents: premium };
  const price = TLD_PRICES_CENTS[tld];
  return price === undefined ? { available: false, priceCents: null } : { available: true, priceCents: price };
}

const purchaseBody = z.object({
  domain: z
    .string()
    .transform((value) => value.trim().toLowerCase())
    .refine((value) => /^(?=.{4,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/.test(value), { message: 'must be a fully qualified domain name' }),
  expectedPriceMax: z.number().int({ message: 'must be an integer number of cents' }).min(0).optional(),
});

function purchaseDomain(context: RequestContext) {
  const body = parseBody(purchaseBody, context.body);
  const data = context.company.data;
  const registered = Object.values(context.world.companies).some((company) => company.data.domains.some((domain) => domain.name === body.domain));
  const quote = domainQuote(body.domain);
  if (registered || !quote.available || quote.priceCents === null) {
    throw new HttpError(409, `Domain ${body.domain} is not available for purchase`, 'domain_unavailable: the registrar reports it as taken');
  }
  const price = quote.priceCents;
  if (price > DOMAIN_PURCHASE_LIMIT_CENTS) {
    throw new HttpError(403, `Domain ${body.domain} costs more than the API purchase limit of 500 USD`, `price ${price} cents per year is above the API purchase limit; contact support to buy this domain`);
  }
  if (body.expectedPriceMax !== undefined && price > body.expectedPriceMax) {
    throw new HttpError(422, `Domain ${body.domain} costs ${price} cents per year, above expectedPriceMax ${body.expectedPriceMax}; nothing was charged`, 'price_above_expected_max');
  }
  if (data.creditsCents < price) {
    throw new HttpError(402, `Company credits (${data.creditsCents} cents) do not cover ${price} cents; nothing was charged`, 'insufficient_credits');
  }
  data.creditsCents -= price;
  const domain = {
    id: context.company.newId('dom'),
    name: body.domain,
    emailEnabled: false,
    emailStatus: 'pending',
    emailAddresses: [],
    assignedLocations: [],
    pricePaid: price,
    createdAt: context.company.now(),
  };
  data.domains.push(domain);
  return { message: 'Domain purchased', content: { domain: { id: domain.id, name: domain.name }, pricePaid: price } };
}

function getDomain(context: RequestContext) {
  const domain = context.company.data.domains.find((candidate) => candidate.id === context.params.domainId);
  if (!domain) throw notFound(`Domain ${context.params.domainId} not found`);
  return { message: 'Domain retrieved', content: { domain: domainDetailView(domain) } };
}

/** POST /domains (spec §4.14) and GET /domains/{domainId} (spec §4.20). */
export const domainRoutes: Route[] = [
  { method: 'POST', path: '/domains', scope: 'domains:write', handler: purchaseDomain },
  { method: 'GET', path: '/domains/{domainId}', scope: 'domains:read', handler: getDomain },
];
