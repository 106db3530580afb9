/**
 * The simulator's internal record shapes (the world's ground truth). They carry every field of the
 * spec's resources (spec §2) plus bookkeeping the API does not expose (e.g. `createdAt`/`updatedAt` on
 * transactions and onboardings, whose list items do not show them, so `updatedAfter` still works).
 * Timestamps are ISO 8601 UTC strings with milliseconds (`2026-01-02T03:04:05.678Z`), which compare
 * correctly as strings. Money is integer cents.
 */

/** The seven transaction types (spec §2 Transaction, §4.7). */
export const TRANSACTION_TYPES = ['INCOME', 'EXPENSE', 'DEDUCTION', 'TAX_PAYMENT', 'REFUND', 'TRANSFER', 'INVOICE'] as const;
/** One of `TRANSACTION_TYPES`. */
export type TransactionType = (typeof TRANSACTION_TYPES)[number];
/** Types stored with a negative amount (spec §2 Transaction, §4.7). */
export const NEGATIVE_TRANSACTION_TYPES: ReadonlySet<string> = new Set(['EXPENSE', 'DEDUCTION', 'TAX_PAYMENT']);
/** Transaction statuses (spec §3 Transaction status). */
export const TRANSACTION_STATUSES = ['PENDING', 'CONFIRMED', 'VOIDED'] as const;
/** One of `TRANSACTION_STATUSES`. */
export type TransactionStatus = (typeof TRANSACTION_STATUSES)[number];
/** Deal statuses (spec §3 Deal status). */
export const DEAL_STATUSES = ['OPEN', 'WON', 'LOST'] as const;
/** One of `DEAL_STATUSES`. */
export type DealStatus = (typeof DEAL_STATUSES)[number];

/** Anything kept in a list sorted by (createdAt, id). */
export interface TimestampedRecord {
  id: string;
  createdAt: string;
  updatedAt: string;
}

/** A ledger transaction (spec §2 Transaction, §4.7, §4.13); `amount` is signed cents. */
export interface TransactionRecord extends TimestampedRecord {
  type: TransactionType;
  status: TransactionStatus;
  /** Signed cents: negative for EXPENSE, DEDUCTION, TAX_PAYMENT. */
  amount: number;
  description: string;
  date: string;
  dueDate: string | null;
  counterpartyName: string | null;
  counterpartyEmail: string | null;
  irsCategory: string | null;
  notes: string | null;
  locationId: string | null;
  legalEntityId: string | null;
  taxYear: number | null;
  taxQuarter: number | null;
}

/** A deal (spec §2 Deal, §3 Deal status, §4.6); `value` is cents. */
export interface DealRecord extends TimestampedRecord {
  referenceId: number;
  locationId: string;
  pipelineId: string;
  stageId: string;
  accountId: string;
  ownerId: string;
  title: string;
  /** Cents. */
  value: number;
  currency: string;
  status: DealStatus;
  probability: number;
  expectedCloseDate: string;
  sortOrder: number;
  wonLostReason: string | null;
  closedAt: string | null;
  stageMovedAt: string;
  /** Internal: the linked contact (a customer id) promoted by `markContactAsCustomer` (spec §4.6). */
  customerId: string | null;
}

/** An employee onboarding (spec §2 Employee onboarding, §4.1); listed while `completedAt` is null. */
export interface OnboardingRecord extends TimestampedRecord {
  employeeId: string;
  onboardingStep: number;
  fullname: string;
  /** The new hire's work email; listed as `user.email` only when the world exposes it (an undeclared field). */
  email?: string | null;
  /** Set when the onboarding completed (the record then lives in `completedOnboardings`). */
  completedAt: string | null;
}

/** A customer (spec §2 Customer; GET /customers, §4 general notes); also the contact a WON deal can promote (§4.6). */
export interface CustomerRecord extends TimestampedRecord {
  firstName: string;
  lastName: string;
  email: string;
  /** `LEAD`, `PROSPECT` or `CUSTOMER`. */
  lifecycleStage: string;
}

/** An employee of the company; a token acts as one (spec §5), and manager/HR/rota flags decide access (§4.12, §4.15). */
export interface EmployeeRecord {
  id: string;
  fullname: string;
  /** Which token acts as this employee, if any. */
  tokenRole: string | null;
  managerId: string | null;
  isHr: boolean;
  inSupportRota: boolean;
  homeLocationId: string;
  benefitIds: string[];
  isDeactivated: boolean;
}

/** A location of the company (spec §4.18). */
export interface LocationRecord {
  id: string;
  reference: string;
  subdomain: string;
  tagline: string | null;
  code: string | null;
  createdAt: string;
}

/** A legal entity transactions can be attributed to (spec §4.7 `legalEntityId`, §4.13). */
export interface LegalEntityRecord {
  id: string;
  name: string;
}

/** A deal pipeline and its stages (spec §2 Deal `pipelineId`, `stageId`, `probability`). */
export interface PipelineRecord {
  id: string;
  name: string;
  /** Stage ids in order; the probability of stage i is stageProbabilities[i]. */
  stageIds: string[];
  stageProbabilities: number[];
}

/** A sending address and the employee who owns it (spec §4.5: `from` must be owned). */
export interface EmailAddressRecord {
  address: string;
  employeeId: string;
  accountId: string;
}

/** An email message (spec §2 Email message, §4.5). */
export interface EmailMessageRecord extends TimestampedRecord {
  from: string;
  to: string;
  cc: string[];
  bcc: string[];
  subject: string;
  text: string;
  html: string | null;
  direction: string;
  threadId: string;
  unread: boolean;
  starred: boolean;
  folder: string | null;
  accountId: string;
}

/** An email draft (spec §2 Email draft, §4.9); `ownerEmployeeId` is internal. */
export interface EmailDraftRecord extends TimestampedRecord {
  ownerEmployeeId: string;
  from: string;
  to: string[];
  cc: string[];
  bcc: string[];
  subject: string;
  text: string;
  scheduledAt: string | null;
}

/** A vault folder and its members: membership gates credential reveals (spec §4.2 rule 1). */
export interface VaultFolderRecord {
  id: string;
  name: string;
  memberEmployeeIds: string[];
}

/** A vault credential (spec §2 Vault credential, §4.2); `sensitiveData` is the decrypted secret. */
export interface VaultCredentialRecord extends TimestampedRecord {
  referenceId: number;
  name: string;
  type: string;
  username: string | null;
  email: string | null;
  website: string | null;
  notes: string | null;
  tags: string[];
  parentId: string;
  lastAccessedAt: string;
  sensitiveData: Record<string, string>;
}

/** The VIEW audit event a vault reveal writes (spec §4.2 rule 3, §6). */
export interface AuditEventRecord {
  id: string;
  action: 'VIEW';
  credentialId: string;
  employeeId: string;
  via: 'API';
  at: string;
}

/** An attendee of a calendar event (spec §2 Calendar event, §4.3); `employeeId` is null for a guest. */
export interface AttendeeRecord {
  id: string;
  employeeId: string | null;
  guestEmail?: string;
  guestName?: string;
  status: string;
  optional: boolean;
  note: string | null;
  declinedOccurrences: string[];
}

/** A calendar event (spec §2 Calendar event, §4.3). */
export interface CalendarEventRecord extends TimestampedRecord {
  title: string;
  description: string;
  location: string;
  startTime: string;
  endTime: string;
  timezone: string;
  allDay: boolean;
  showAs: string;
  includeVirtualMeeting: boolean;
  meetingRoomId: string | null;
  recurrenceRule: string | null;
  recurrenceEndDate: string | null;
  recurrenceExclusions: string[];
  createdByEmployeeId: string;
  attendees: AttendeeRecord[];
}

/** A QA corrective action (spec §2 QA corrective action, §4.4). */
export interface CorrectiveActionRecord extends TimestampedRecord {
  locationId: string;
  shiftSessionId: string;
  checkId: string;
  issue: string;
  suspectedCause: string;
  actionTaken: string;
  ownerEmployeeId: string;
  category: string;
  status: 'OPEN' | 'CLOSED';
  openedAt: string;
  resolvedAt: string | null;
  resolutionNotes: string | null;
}

/** A conversation member with their own read state (the fields null for non-members, spec §4.12 rule 2). */
export interface ConversationMemberRecord {
  employeeId: string;
  role: 'ADMIN' | 'MEMBER';
  isExternal: boolean;
  lastReadAt: string | null;
  unreadCount: number;
  unreadThreadCount: number;
  markedUnread: boolean;
  isMuted: boolean;
  isFavorite: boolean;
}

/** A message of a conversation or Support channel (spec §2 Conversation, Support conversation). */
export interface ConversationMessageRecord {
  id: string;
  conversationId: string;
  authorEmployeeId: string;
  /** For Support channels: the author's display name and company, and whether they are staff. */
  authorName: string;
  authorCompanyName: string;
  internal: boolean;
  parentMessageId: string | null;
  content: string;
  type: string;
  replyCount: number;
  lastReplyAt: string | null;
  editedAt: string | null;
  deletedAt: string | null;
  pinnedAt: string | null;
  mentionedEmployeeIds: string[];
  createdAt: string;
}

/** A conversation or Support channel (spec §2, §4.8, §4.12). */
export interface ConversationRecord {
  id: string;
  referenceId: number;
  type: string;
  title: string;
  name: string;
  topic: string;
  description: string | null;
  visibility: 'PUBLIC' | 'PRIVATE';
  isArchived: boolean;
  isSupport: boolean;
  isCrossCompany: boolean;
  /** For Support channels: the customer company on the other side and the channel status. */
  supportCompany: { id: string; name: string } | null;
  supportStatus: string;
  waitingOnUs: boolean;
  members: ConversationMemberRecord[];
  messages: ConversationMessageRecord[];
  createdAt: string;
  updatedAt: string;
}

/** A marketing campaign with its recipient counts (spec §2 Campaign, §4.10). */
export interface CampaignRecord extends TimestampedRecord {
  locationId: string;
  name: string;
  channel: string;
  status: string;
  subject: string;
  body: string;
  audience: { lifecycleStages: string[]; inactiveDays: number | null; createdWithinDays: number | null; neverContacted: boolean };
  scheduledAt: string | null;
  startedAt: string | null;
  sentAt: string | null;
  recipientCounts: { SENT: number; DELIVERED: number; SKIPPED: number; FAILED: number };
}

/** A purchased custom domain (spec §2 Domain, §4.14, §4.20); `pricePaid` is cents. */
export interface DomainRecord {
  id: string;
  name: string;
  emailEnabled: boolean;
  emailStatus: string;
  emailAddresses: string[];
  assignedLocations: { id: string; reference: string }[];
  pricePaid: number;
  createdAt: string;
}

/** A performance review (spec §4.15). */
export interface PerformanceReviewRecord {
  id: string;
  employeeId: string;
  reviewerEmployeeId: string;
  reviewDate: string;
  summary: string | null;
  strengths: string | null;
  improvements: string | null;
  status: 'DRAFT' | 'SHARED';
  ratings: { criterion: string; score: number }[];
  /** Mean of the rating scores to one decimal (spec §4.15). */
  overallScore: number;
  createdAt: string;
}

/** A notification side effect, e.g. a review shared with the employee (spec §6). */
export interface NotificationRecord {
  id: string;
  employeeId: string;
  kind: string;
  subjectId: string;
  at: string;
}

/** A benefit employees can be enrolled in (spec §4.16). */
export interface BenefitRecord {
  id: string;
  name: string;
}

/** A scheduled shift; clocking in inside one links the entry to it (spec §4.19). */
export interface ShiftRecord {
  id: string;
  employeeId: string;
  locationId: string;
  startAt: string;
  endAt: string;
}

/** A time clock entry (spec §2 Time clock entry, §4.19); open while `clockOutAt` is null. */
export interface TimeClockEntryRecord extends TimestampedRecord {
  employeeId: string;
  locationId: string;
  shiftId: string | null;
  clockInAt: string;
  clockOutAt: string | null;
}

/** One double-entry journal line posted by a transaction write (spec §4.7, §6). */
export interface JournalEntryRecord {
  id: string;
  transactionId: string;
  account: string;
  /** Cents; debits positive, credits negative, each transaction's entries sum to zero. */
  amount: number;
  at: string;
}
