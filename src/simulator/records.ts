/**
 * The simulator's internal record shapes (the world's ground truth). They carry every field of the
 * spec's resources (spec §2) plus bookkeeping the API does not expose (e.g. `createdAt`/`updatedAt` on
 * transactions and onboardings, whose list items do not show them, so `updatedAfter` still works).
 * Timestamps are ISO 8601 UTC strings with milliseconds (`2026-01-02T03:04:05.678Z`), which compare
 * correctly as strings. Money is integer cents.
 */

export const TRANSACTION_TYPES = ['INCOME', 'EXPENSE', 'DEDUCTION', 'TAX_PAYMENT', 'REFUND', 'TRANSFER', 'INVOICE'] as const;
export type TransactionType = (typeof TRANSACTION_TYPES)[number];
/** Types stored with a negative amount (spec §2 Transaction, §4.7). */
export const NEGATIVE_TRANSACTION_TYPES: ReadonlySet<string> = new Set(['EXPENSE', 'DEDUCTION', 'TAX_PAYMENT']);
export const TRANSACTION_STATUSES = ['PENDING', 'CONFIRMED', 'VOIDED'] as const;
export type TransactionStatus = (typeof TRANSACTION_STATUSES)[number];
export const DEAL_STATUSES = ['OPEN', 'WON', 'LOST'] as const;
export type DealStatus = (typeof DEAL_STATUSES)[number];

/** The mirrored streams plus customers: the record kinds with list endpoints and ground truth. */
export type StreamName = 'transactions' | 'deals' | 'onboardings' | 'customers';
export const STREAM_NAMES: readonly StreamName[] = ['transactions', 'deals', 'onboardings', 'customers'];

/** Anything kept in a list sorted by (createdAt, id). */
export interface TimestampedRecord {
  id: string;
  createdAt: string;
  updatedAt: string;
}

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

export interface OnboardingRecord extends TimestampedRecord {
  employeeId: string;
  onboardingStep: number;
  fullname: string;
  /** Set when the onboarding completed (the record then lives in `completedOnboardings`). */
  completedAt: string | null;
}

export interface CustomerRecord extends TimestampedRecord {
  firstName: string;
  lastName: string;
  email: string;
  /** `LEAD`, `PROSPECT` or `CUSTOMER`. */
  lifecycleStage: string;
}

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

export interface LocationRecord {
  id: string;
  reference: string;
  subdomain: string;
  tagline: string | null;
  code: string | null;
  createdAt: string;
}

export interface LegalEntityRecord {
  id: string;
  name: string;
}

export interface PipelineRecord {
  id: string;
  name: string;
  /** Stage ids in order; the probability of stage i is stageProbabilities[i]. */
  stageIds: string[];
  stageProbabilities: number[];
}

export interface EmailAddressRecord {
  address: string;
  employeeId: string;
  accountId: string;
}

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

export interface VaultFolderRecord {
  id: string;
  name: string;
  memberEmployeeIds: string[];
}

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

export interface AuditEventRecord {
  id: string;
  action: 'VIEW';
  credentialId: string;
  employeeId: string;
  via: 'API';
  at: string;
}

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

export interface NotificationRecord {
  id: string;
  employeeId: string;
  kind: string;
  subjectId: string;
  at: string;
}

export interface BenefitRecord {
  id: string;
  name: string;
}

export interface ShiftRecord {
  id: string;
  employeeId: string;
  locationId: string;
  startAt: string;
  endAt: string;
}

export interface TimeClockEntryRecord extends TimestampedRecord {
  employeeId: string;
  locationId: string;
  shiftId: string | null;
  clockInAt: string;
  clockOutAt: string | null;
}

export interface JournalEntryRecord {
  id: string;
  transactionId: string;
  account: string;
  /** Cents; debits positive, credits negative, each transaction's entries sum to zero. */
  amount: number;
  at: string;
}
