/**
 * `email.send`: POST /emails (spec §4.5, scope `email:messages:write`).
 *
 * Rules: `from` (an address the acting employee owns; the server checks, 403 otherwise) and `to` (one
 * recipient) are email addresses; `text` or `html` is required; `cc` and `bcc` up to 20 addresses each
 * (spec §8); no attachments (JSON only).
 *
 * Not idempotent: a message sent twice is delivered twice. An ambiguous outcome is parked for review,
 * never re-sent.
 */
import { z } from 'zod';
import { addressList, defineWriteKind, emailAddress, text } from './fields.ts';

/** The payload of `email.send` (spec §4.5), with the rules in this module's header; every message names the rule. */
const emailSendPayload = z
  .strictObject({
    from: emailAddress,
    to: emailAddress,
    subject: text.max(998, { error: 'must be at most 998 characters' }).optional(),
    text: text.optional(),
    html: text.optional(),
    cc: addressList(20).optional(),
    bcc: addressList(20).optional(),
  })
  .superRefine((payload, context) => {
    if (payload.text === undefined && payload.html === undefined) {
      context.addIssue({ code: 'custom', path: ['text'], message: 'is required when html is absent (send text or html)' });
    }
  });

/** The `email.send` write kind (spec §4.5): request, response, retry safety and ambiguity resolution. */
export const emailSend = defineWriteKind({
  name: 'email.send',
  spec: 'spec §4.5',
  summary: 'Send an email from an address the acting employee owns',
  scope: 'email:messages:write',
  payloadSchema: emailSendPayload,
  method: 'POST',
  path: () => '/emails',
  body: (payload) => ({ ...payload }),
  responseSchema: z.looseObject({ email: z.looseObject({ id: z.string(), threadId: z.string().optional() }) }),
  retrySafety: 'unsent-only',
  ambiguity: {
    resolve: 'park',
    reason: 'the response was lost after the email may have been sent; not sent again (an email cannot be unsent): check the Sent folder',
  },
  remoteId: (content) => content.email.id,
});
