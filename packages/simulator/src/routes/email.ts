/**
 * POST /emails (spec §4.5) and PATCH /email-drafts/{draftId} (spec §4.9), scope email:messages:write.
 *
 * POST /emails: `from` must be an address the token's employee owns (else 403); `to` one recipient;
 * `text` or `html` required; `cc`/`bcc` up to 20 each; attachments are refused (400). The thread is
 * resolved from the subject (ignoring `Re:`/`Fwd:`) and the unordered address pair, so a reply joins
 * the existing thread; a new thread's id is the message id. When `to` is a customer's address the
 * message is also filed in that customer's conversation (`company.data.customerConversations`).
 *
 * PATCH /email-drafts/{draftId}: only the caller's own drafts (others 404); omitted fields stay;
 * to/cc/bcc up to 20, subject up to 500 characters; `from` is not checked until sending.
 */
import { z } from 'zod';
import { badRequest, HttpError, notFound } from '../http-error.ts';
import { threadKey } from '../generate.ts';
import type { EmailMessageRecord } from '../records.ts';
import { draftView, emailView } from '../serialize.ts';
import type { RequestContext, Route } from './types.ts';
import { emailAddress, parseBody } from './validation.ts';

const addressList = z.array(emailAddress).max(20, { message: 'at most 20 addresses' });

const sendBody = z
  .object({
    from: emailAddress,
    to: emailAddress,
    subject: z.string().max(998).default(''),
    text: z.string().optional(),
    html: z.string().optional(),
    cc: addressList.optional(),
    bcc: addressList.optional(),
  })
  .refine((body) => body.text !== undefined || body.html !== undefined, { message: 'send text or html', path: ['text'] });

function sendEmail(context: RequestContext) {
  if (typeof context.body === 'object' && context.body !== null && 'attachments' in context.body) {
    throw badRequest('attachments are not accepted: JSON only');
  }
  const body = parseBody(sendBody, context.body);
  const data = context.company.data;
  const owned = data.emailAddresses.find((address) => address.address.toLowerCase() === body.from.toLowerCase() && address.employeeId === context.employee.id);
  if (!owned) throw new HttpError(403, `You cannot send from ${body.from}: it is not an address you own`);
  const now = context.company.now();
  const id = context.company.newId('eml');
  const key = threadKey(body.subject, body.from, body.to);
  let threadId = data.threadIndex.get(key);
  if (threadId === undefined) {
    threadId = id;
    data.threadIndex.set(key, id);
  }
  const message: EmailMessageRecord = {
    id,
    from: owned.address,
    to: body.to,
    cc: body.cc ?? [],
    bcc: body.bcc ?? [],
    subject: body.subject,
    text: body.text ?? '',
    html: body.html ?? null,
    direction: 'OUTBOUND',
    threadId,
    unread: false,
    starred: false,
    folder: 'SENT',
    accountId: owned.accountId,
    createdAt: now,
    updatedAt: now,
  };
  data.emails.push(message);
  const customer = data.streams.customers.find((candidate) => candidate.email.toLowerCase() === body.to.toLowerCase());
  if (customer) {
    const filed = data.customerConversations.get(customer.id) ?? [];
    filed.push(id);
    data.customerConversations.set(customer.id, filed);
  }
  return { message: 'Email sent', content: { email: emailView(message) } };
}

const patchDraftBody = z.object({
  from: z.string().min(1).optional(),
  to: addressList.optional(),
  cc: addressList.optional(),
  bcc: addressList.optional(),
  subject: z.string().max(500, { message: 'at most 500 characters' }).optional(),
  text: z.string().optional(),
});

function patchDraft(context: RequestContext) {
  const draft = context.company.data.drafts.find((candidate) => candidate.id === context.params.draftId && candidate.ownerEmployeeId === context.employee.id);
  if (!draft) throw notFound(`Draft ${context.params.draftId} not found`);
  const body = parseBody(patchDraftBody, context.body);
  for (const field of ['from', 'to', 'cc', 'bcc', 'subject', 'text'] as const) {
    if (body[field] !== undefined) (draft as unknown as Record<string, unknown>)[field] = body[field];
  }
  draft.updatedAt = context.company.now();
  return { message: 'Draft updated', content: { draft: draftView(draft) } };
}

/** POST /emails (spec §4.5) and PATCH /email-drafts/{draftId} (spec §4.9). */
export const emailRoutes: Route[] = [
  { method: 'POST', path: '/emails', scope: 'email:messages:write', handler: sendEmail },
  { method: 'PATCH', path: '/email-drafts/{draftId}', scope: 'email:messages:write', handler: patchDraft },
];
