/**
 * `performance_review.create`: POST /performance-reviews (spec §4.15, scope `hr:write`).
 *
 * Rules: `employeeId` non-empty; `reviewDate` `YYYY-MM-DD`; `ratings` at least one
 * `{ criterion, score }` with an integer score 1 to 5 (spec §8); `status` DRAFT or SHARED (SHARED
 * notifies the employee); `overallScore` is refused: the API computes it as the mean of the scores.
 *
 * Not idempotent (a second review would be created, and SHARED notifies again): an ambiguous outcome
 * is parked for review.
 */
import { z } from 'zod';
import { defineWriteKind, isoDate, nonEmptyText, pathId, text } from './fields.ts';

const score = z
  .number({ error: 'must be an integer 1 to 5' })
  .int({ error: 'must be an integer 1 to 5' })
  .min(1, { error: 'must be an integer 1 to 5' })
  .max(5, { error: 'must be an integer 1 to 5' });

/** The payload of `performance_review.create` (spec §4.15), with the rules in this module's header; every message names the rule. */
const performanceReviewCreatePayload = z.strictObject({
  employeeId: pathId,
  reviewDate: isoDate,
  summary: text.optional(),
  strengths: text.optional(),
  improvements: text.optional(),
  status: z.enum(['DRAFT', 'SHARED'], { error: 'must be DRAFT or SHARED' }).optional(),
  ratings: z
    .array(z.strictObject({ criterion: nonEmptyText, score }), { error: 'must be an array of { criterion, score }' })
    .min(1, { error: 'must hold at least one rating' }),
  overallScore: z
    .never({ error: 'is not accepted: the API computes it as the mean of the rating scores (spec §4.15)' })
    .optional(),
});

/** The `performance_review.create` write kind (spec §4.15): request, response, retry safety and ambiguity resolution. */
export const performanceReviewCreate = defineWriteKind({
  name: 'performance_review.create',
  spec: 'spec §4.15',
  summary: 'Create a performance review (SHARED notifies the employee)',
  scope: 'hr:write',
  payloadSchema: performanceReviewCreatePayload,
  method: 'POST',
  path: () => '/performance-reviews',
  body: (payload) => ({ ...payload }),
  responseSchema: z.looseObject({ reviewId: z.string(), shared: z.boolean() }),
  retrySafety: 'unsent-only',
  ambiguity: {
    resolve: 'park',
    reason: 'the response was lost after the review may have been created; not sent again (it would create a second review): check the employee\'s reviews',
  },
  remoteId: (content) => content.reviewId,
});
