/**
 * `location.create`: POST /locations (spec §4.18, scope `locations:write`).
 *
 * Rules: `reference` (display name) and `subdomain` (a free subdomain label: lower-case letters,
 * digits, inner hyphens, at most 63) required; `tagline` and `code` optional. Not idempotent: an
 * ambiguous outcome is parked for review.
 */
import { z } from 'zod';
import { defineWriteKind, nonEmptyText, text } from './fields.ts';

/** The payload of `location.create` (spec §4.18), with the rules in this module's header; every message names the rule. */
const locationCreatePayload = z.strictObject({
  reference: nonEmptyText.max(200, { error: 'must be at most 200 characters' }),
  subdomain: z
    .string({ error: 'must be a subdomain label' })
    .regex(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/, { error: 'must be 1 to 63 lower-case letters, digits or inner hyphens' }),
  tagline: text.max(500, { error: 'must be at most 500 characters' }).optional(),
  code: text.max(100, { error: 'must be at most 100 characters' }).optional(),
});

/** The `location.create` write kind (spec §4.18): request, response, retry safety and ambiguity resolution. */
export const locationCreate = defineWriteKind({
  name: 'location.create',
  spec: 'spec §4.18',
  summary: 'Create a location with a free subdomain',
  scope: 'locations:write',
  payloadSchema: locationCreatePayload,
  method: 'POST',
  path: () => '/locations',
  body: (payload) => ({ ...payload }),
  responseSchema: z.looseObject({ location: z.looseObject({ id: z.string() }) }),
  retrySafety: 'unsent-only',
  ambiguity: {
    resolve: 'park',
    reason: 'the response was lost after the location may have been created; not sent again: check the locations for this subdomain',
  },
  remoteId: (content) => content.location.id,
});
