/**
 * How records look on the wire (spec §2). Internal bookkeeping (e.g. a transaction's createdAt in a
 * list item, a deal's linked customer) stays out.
 */
import type { CompanyData, UndeclaredField } from './company-data.ts';
import type {
  CalendarEventRecord,
  CampaignRecord,
  ConversationRecord,
  DealRecord,
  DomainRecord,
  EmailDraftRecord,
  EmailMessageRecord,
  OnboardingRecord,
  TimeClockEntryRecord,
  TransactionRecord,
  VaultCredentialRecord,
} from './records.ts';

/**
 * A transaction list item (spec §2 Transaction, "Fields in list items"); with `notes` too when the
 * world exposes that undeclared field.
 */
export function transactionListItem(record: TransactionRecord, undeclared: ReadonlySet<UndeclaredField> = NONE) {
  const item = {
    id: record.id,
    type: record.type,
    status: record.status,
    amount: record.amount,
    description: record.description,
    date: record.date,
  };
  return undeclared.has('transactions.notes') ? { ...item, notes: record.notes } : item;
}

const NONE: ReadonlySet<UndeclaredField> = new Set();

/** A transaction as the create response shows it (spec §2 Transaction, §4.7). */
export function transactionDetail(record: TransactionRecord) {
  return {
    id: record.id,
    type: record.type,
    status: record.status,
    amount: record.amount,
    description: record.description,
    counterpartyName: record.counterpartyName,
    irsCategory: record.irsCategory,
    date: record.date,
    dueDate: record.dueDate,
    legalEntityId: record.legalEntityId,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}

/** A deal (spec §2 Deal). */
export function dealView(record: DealRecord) {
  return {
    id: record.id,
    referenceId: record.referenceId,
    locationId: record.locationId,
    pipelineId: record.pipelineId,
    stageId: record.stageId,
    accountId: record.accountId,
    ownerId: record.ownerId,
    title: record.title,
    value: record.value,
    currency: record.currency,
    status: record.status,
    probability: record.probability,
    expectedCloseDate: record.expectedCloseDate,
    sortOrder: record.sortOrder,
    wonLostReason: record.wonLostReason,
    closedAt: record.closedAt,
    stageMovedAt: record.stageMovedAt,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}

/**
 * An employee onboarding (spec §2): only `id`, `onboardingStep`, `user.fullname`; `user.email` too
 * when the world exposes that undeclared field.
 */
export function onboardingView(record: OnboardingRecord, undeclared: ReadonlySet<UndeclaredField> = NONE) {
  const user = undeclared.has('onboardings.user.email') ? { fullname: record.fullname, email: record.email ?? null } : { fullname: record.fullname };
  return { id: record.id, onboardingStep: record.onboardingStep, user };
}

/** A vault credential without its secret (spec §2 Vault credential). */
export function credentialView(record: VaultCredentialRecord) {
  const { sensitiveData: _secret, ...rest } = record;
  return rest;
}

/** A calendar event with attendees (spec §2 Calendar event). Guests carry guestEmail/guestName. */
export function calendarEventView(record: CalendarEventRecord) {
  return structuredClone(record);
}

/** An email message (spec §2). cc/bcc are kept internally but not part of the message shape. */
export function emailView(record: EmailMessageRecord) {
  return {
    id: record.id,
    from: record.from,
    to: record.to,
    subject: record.subject,
    text: record.text,
    html: record.html,
    direction: record.direction,
    threadId: record.threadId,
    unread: record.unread,
    starred: record.starred,
    folder: record.folder,
    accountId: record.accountId,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}

/** An email draft (spec §2). */
export function draftView(record: EmailDraftRecord) {
  const { ownerEmployeeId: _owner, ...rest } = record;
  return structuredClone(rest);
}

/** A campaign without its recipient counts (they are a sibling in `content`, spec §4.10). */
export function campaignView(record: CampaignRecord) {
  const { recipientCounts: _counts, ...rest } = record;
  return structuredClone(rest);
}

/** A domain detail (spec §4.20). */
export function domainDetailView(record: DomainRecord) {
  return {
    id: record.id,
    name: record.name,
    emailEnabled: record.emailEnabled,
    emailStatus: record.emailStatus,
    emailAddresses: [...record.emailAddresses],
    assignedLocations: record.assignedLocations.map((location) => ({ ...location })),
  };
}

/** A time clock entry (spec §2). `shiftId` is null when the clock-in was outside any shift. */
export function timeClockEntryView(record: TimeClockEntryRecord) {
  return { ...record };
}

function employeeName(company: CompanyData, employeeId: string): string {
  return company.employees.find((employee) => employee.id === employeeId)?.fullname ?? 'Former employee';
}

/** A Support conversation with all its messages, oldest first (spec §2 Support conversation, §4.8). */
export function supportConversationView(company: CompanyData, record: ConversationRecord) {
  const messages = [...record.messages].sort((left, right) => (left.createdAt < right.createdAt ? -1 : left.createdAt > right.createdAt ? 1 : 0));
  const last = messages[messages.length - 1];
  return {
    id: record.id,
    referenceId: record.referenceId,
    channel: 'threads',
    status: record.supportStatus,
    waitingOnUs: record.waitingOnUs,
    company: record.supportCompany ?? { id: company.id, name: company.name },
    topic: record.topic,
    lastMessage: last
      ? {
          id: last.id,
          preview: last.content.slice(0, 140),
          author: { employeeId: last.authorEmployeeId, name: last.authorName, internal: last.internal },
          createdAt: last.createdAt,
        }
      : null,
    lastMessageAt: last?.createdAt ?? record.createdAt,
    messageCount: messages.length,
    memberCount: record.members.length,
    isArchived: record.isArchived,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
    messages: messages.map((message) => ({
      id: message.id,
      conversationId: message.conversationId,
      parentMessageId: message.parentMessageId,
      author: { employeeId: message.authorEmployeeId, name: message.authorName, internal: message.internal, companyName: message.authorCompanyName },
      internal: message.internal,
      content: message.content,
      type: message.type,
      replyCount: message.replyCount,
      attachments: [],
      mentionedEmployeeIds: [...message.mentionedEmployeeIds],
      editedAt: message.editedAt,
      deletedAt: message.deletedAt,
      createdAt: message.createdAt,
    })),
  };
}

/**
 * A conversation as seen by one employee (spec §2 Conversation, §4.12 rules 2 and 5): without
 * membership the per-member fields are null; `members` carries names and roles only.
 */
export function conversationView(company: CompanyData, record: ConversationRecord, viewerEmployeeId: string) {
  const membership = record.members.find((member) => member.employeeId === viewerEmployeeId);
  const latest = [...record.messages].sort((left, right) => (left.createdAt < right.createdAt ? 1 : -1))[0];
  return {
    id: record.id,
    referenceId: record.referenceId,
    type: record.type,
    title: record.title,
    name: record.name,
    topic: record.topic,
    description: record.description,
    visibility: record.visibility,
    isArchived: record.isArchived,
    lastMessageAt: latest?.createdAt ?? record.createdAt,
    isSupport: record.isSupport,
    isCrossCompany: record.isCrossCompany,
    memberEmployeeIds: record.members.map((member) => member.employeeId),
    createdAt: record.createdAt,
    isMember: membership !== undefined,
    unreadCount: membership ? membership.unreadCount : null,
    unreadThreadCount: membership ? membership.unreadThreadCount : null,
    lastReadAt: membership ? membership.lastReadAt : null,
    markedUnread: membership ? membership.markedUnread : null,
    isMuted: membership ? membership.isMuted : null,
    isFavorite: membership ? membership.isFavorite : null,
    members: record.members.map((member) => {
      const employee = company.employees.find((candidate) => candidate.id === member.employeeId);
      return {
        employeeId: member.employeeId,
        name: employeeName(company, member.employeeId),
        role: member.role,
        isExternal: member.isExternal,
        isDeactivated: employee?.isDeactivated ?? false,
      };
    }),
    latestMessage: latest
      ? {
          id: latest.id,
          conversationId: latest.conversationId,
          authorEmployeeId: latest.authorEmployeeId,
          parentMessageId: latest.parentMessageId,
          content: latest.content,
          type: latest.type,
          replyCount: latest.replyCount,
          lastReplyAt: latest.lastReplyAt,
          unreadReplyCount: 0,
          editedAt: latest.editedAt,
          deletedAt: latest.deletedAt,
          pinnedAt: latest.pinnedAt,
          attachments: [],
          reactions: [],
          mentions: latest.mentionedEmployeeIds.map((employeeId) => ({ employeeId })),
          createdAt: latest.createdAt,
          preview: latest.content.slice(0, 140),
        }
      : null,
  };
}
