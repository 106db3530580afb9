/**
 * `email_draft.update`: PATCH /email-drafts/{draftId} (spec §4.9, scope `email:messages:write`).
 *
 * Rules (spec §4.9, §8): `to`, `cc`, `bcc` up to 20 addresses each; `subject` up to 500 characters;
 * fields omitted stay unchanged, so at least one field must be given. Idempotent (a PATCH of fixed
 * values).
 */
import { z } from 'zod';
import { addressList, defineWriteKind, emailAddress, pathId, segment, text, without } from './fields.ts';

const DRAFT_FIELDS = ['from', 'to', 'cc', 'bcc', 'subject', 'text'] as const;

/** The payload of `email_draft.update` (spec §4.9), with the rules in this module's header; every message names the rule. */
const emailDraftUpdatePayload = z
  .strictObject({
    draftId: pathId,
    from: emailAddress.optional(),
    to: addressList(20).optional(),
    cc: addressList(20).optional(),
    bcc: addressList(20).optional(),
    subject: text.max(500, { error: 'must be at most 500 characters' }).optional(),
    text: text.optional(),
  })
  .superRefine((payload, context) => {
    if (DRAFT_FIELDS.every((field) => payload[field] === undefined)) {
      context.addIssue({ code: 'custom', path: [], message: `nothing to update: give at least one of ${DRAFT_FIELDS.join(', ')}` });
    }
  });

/** The `email_draft.update` write kind (spec §4.9): request, response, retry safety and ambiguity resolution. */
export const emailDraftUpdate = defineWriteKind({
  name: 'email_draft.update',
  spec: 'spec §4.9',
  summary: 'Change fields of an email draft (omitted fields stay)',
  scope: 'email:messages:write',
  payloadSchema: emailDraftUpdatePayload,
  method: 'PATCH',
  path: (payload) => `/email-drafts/${segment(payload.draftId)}`,
  body: (payload) => without(payload, 'draftId'),
  responseSchema: z.looseObject({ draft: z.looseObject({ id: z.string() }) }),
  retrySafety: 'idempotent',
  ambiguity: { resolve: 'resend' },
  remoteId: (content) => content.draft.id,
});
