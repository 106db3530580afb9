/**
 * GET /support-conversations/{conversationId} (spec §4.8, scope internal:support:read) and
 * GET /conversations/{conversationId} (spec §4.12, scope threads:read).
 *
 * Support: an id naming anything but a Support channel of the caller's company is 404, so this scope
 * never exposes other channels. Messages oldest first.
 *
 * Conversations, rule by rule:
 *  (1) members read; a PUBLIC channel of the caller's own company is readable without membership; the
 *      support rota (employee.inSupportRota) reads Support channels.
 *  (2) without membership: isMember false and the per-member fields null.
 *  (3) another company's conversation, an unknown id, or a Support channel outside the rota is 404;
 *      a PRIVATE channel of the caller's own company that the caller is not in is 403 "not a member"
 *      (which of the two the real service picks when is not shown; this split keeps other companies'
 *      ids indistinguishable from missing ones).
 *  (4) an archived channel needs scope threads:admin (403 otherwise), checked after reach.
 *  (5) members carry names and roles only.
 */
import { HttpError, notFound } from '../http-error.ts';
import { conversationView, supportConversationView } from '../serialize.ts';
import type { RequestContext, Route } from './types.ts';

function getSupportConversation(context: RequestContext) {
  const conversation = context.company.data.conversations.find((candidate) => candidate.id === context.params.conversationId);
  if (!conversation || !conversation.isSupport) throw notFound(`Support conversation ${context.params.conversationId} not found`);
  return { message: 'Support conversation retrieved', content: { supportConversation: supportConversationView(context.company.data, conversation) } };
}

function getConversation(context: RequestContext) {
  const id = context.params.conversationId;
  const conversation = context.company.data.conversations.find((candidate) => candidate.id === id);
  if (!conversation) throw notFound(`Conversation ${id} not found`);
  const isMember = conversation.members.some((member) => member.employeeId === context.employee.id);
  if (!isMember) {
    if (conversation.isSupport) {
      if (!context.employee.inSupportRota) throw notFound(`Conversation ${id} not found`);
    } else if (conversation.visibility !== 'PUBLIC') {
      throw new HttpError(403, `You are not a member of conversation ${id}`);
    }
  }
  if (conversation.isArchived && !context.scopes.has('threads:admin')) {
    throw new HttpError(403, `Conversation ${id} is archived: reading it requires the threads:admin scope`);
  }
  return { message: 'Conversation retrieved', content: { conversation: conversationView(context.company.data, conversation, context.employee.id) } };
}

/** GET /support-conversations/{conversationId} (spec §4.8) and GET /conversations/{conversationId} (spec §4.12). */
export const conversationRoutes: Route[] = [
  { method: 'GET', path: '/support-conversations/{conversationId}', scope: 'internal:support:read', handler: getSupportConversation },
  { method: 'GET', path: '/conversations/{conversationId}', scope: 'threads:read', handler: getConversation },
];
