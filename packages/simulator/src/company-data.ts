/**
 * Everything the simulator knows about one company: the ground truth the endpoints read and write.
 * Plain objects and arrays, mutable by tests. The records of each simulated list endpoint
 * (`streams`, one array per declaration of streams/) are kept sorted by (createdAt, id) ascending so
 * list pages sorted by `createdAt` need no sorting per request.
 */
import type {
  AuditEventRecord,
  BenefitRecord,
  CalendarEventRecord,
  CampaignRecord,
  ConversationRecord,
  DomainRecord,
  EmailAddressRecord,
  EmailDraftRecord,
  EmailMessageRecord,
  EmployeeRecord,
  JournalEntryRecord,
  LegalEntityRecord,
  LocationRecord,
  NotificationRecord,
  PerformanceReviewRecord,
  PipelineRecord,
  ShiftRecord,
  TimeClockEntryRecord,
  VaultCredentialRecord,
  VaultFolderRecord,
} from './records.ts';
import type { StreamName, StreamRecords } from './streams/index.ts';
import type { CompanyKey } from './tokens.ts';

/** All records of one simulated company (see this module's header); money fields are cents. */
export interface CompanyData {
  key: CompanyKey;
  id: string;
  name: string;
  locations: LocationRecord[];
  legalEntities: LegalEntityRecord[];
  employees: EmployeeRecord[];
  benefits: BenefitRecord[];
  pipelines: PipelineRecord[];
  /**
   * Each list endpoint's records by stream name (`transactions`, `deals`, `onboardings`: employees
   * who have not completed onboarding, spec §4.1; `customers`, `qa_corrective_actions`, ...).
   */
  streams: StreamRecords;
  /** Onboardings that completed and left the list, in completion order. */
  completedOnboardings: StreamRecords['onboardings'];
  emailAddresses: EmailAddressRecord[];
  emails: EmailMessageRecord[];
  /** Thread resolution (spec §4.5): `normalized subject | address pair` -> threadId. */
  threadIndex: Map<string, string>;
  /** Customer id -> ids of email messages filed in that customer's conversation (spec §4.5). */
  customerConversations: Map<string, string[]>;
  drafts: EmailDraftRecord[];
  vaultFolders: VaultFolderRecord[];
  vaultCredentials: VaultCredentialRecord[];
  /** VIEW audit events written by vault reveals (spec §4.2 rule 3). */
  auditEvents: AuditEventRecord[];
  calendarEvents: CalendarEventRecord[];
  conversations: ConversationRecord[];
  campaigns: CampaignRecord[];
  domains: DomainRecord[];
  performanceReviews: PerformanceReviewRecord[];
  /** Side effects such as "review shared" (spec §6). */
  notifications: NotificationRecord[];
  shifts: ShiftRecord[];
  timeClockEntries: TimeClockEntryRecord[];
  /** Double-entry journal posted by transaction writes (spec §4.7). */
  journalEntries: JournalEntryRecord[];
  /** Company credits in cents; domain purchases deduct from them (spec §4.14). */
  creditsCents: number;
  /** Recomputed on every transaction write (spec §4.7): see World.recomputeTaxLiability. */
  taxLiabilityCents: number;
  /** Next referenceId per resource kind. */
  nextReferenceId: number;
  /** Change counters per stream: bumped by every World method that changes that stream (list views cache on them). */
  versions: Record<StreamName, number>;
  /**
   * Fields the list endpoints return although the spec does not show them (`World.exposeUndeclaredFields`):
   * none by default, as in the spec.
   */
  undeclaredFields: Set<UndeclaredField>;
}

/**
 * A field a list endpoint can return beyond what the spec shows (tests of change detection on every
 * returned field): a transaction's `notes`, an onboarding's `user.email`.
 */
export type UndeclaredField = 'transactions.notes' | 'onboardings.user.email';
