/**
 * Deterministic seed data for one company (spec §2 shapes): the same seed, sizes and anchor give the
 * same world. Stream records get createdAt spread over the year before the anchor, with a few
 * deliberate ties (records sharing a createdAt or an updatedAt) so clients meet them.
 * Generating 100,000 transactions takes well under a second.
 */
import type { CompanyData } from './company-data.ts';
import { SeededRandom } from './random.ts';
import type {
  CustomerRecord,
  DealRecord,
  DealStatus,
  EmployeeRecord,
  OnboardingRecord,
  TimestampedRecord,
  TransactionRecord,
  TransactionStatus,
  TransactionType,
} from './records.ts';
import { NEGATIVE_TRANSACTION_TYPES } from './records.ts';
import type { CompanyKey } from './tokens.ts';

/** How many records to generate per stream for one company. */
export interface StreamSizes {
  transactions: number;
  deals: number;
  onboardings: number;
  customers: number;
}

/** Options of `generateCompany`: which company, the seed, the stream sizes and the time anchors (ms epoch). */
export interface GenerateOptions {
  key: CompanyKey;
  seed: number;
  sizes: StreamSizes;
  /** ms epoch: seed records are created during the 365 days before it. */
  anchorMs: number;
  /** ms epoch of "now" at start: shifts are placed around it so clock-in finds one. */
  nowMs: number;
  /**
   * When set (> 1), stream records are created in bursts: runs of 1 to `2 * createdInBursts - 1`
   * consecutive records (mean `createdInBursts`) share one createdAt to the millisecond, so lists
   * sorted by createdAt hold many ties (the `unstable-order` fault reorders them per request).
   */
  createdInBursts?: number;
}

const DAY_MS = 86_400_000;
const SPAN_MS = 365 * DAY_MS;

/** First names the seed data and later-created records draw from. */
export const FIRST_NAMES = [
  'Alex', 'Sam', 'Jordan', 'Taylor', 'Morgan', 'Casey', 'Riley', 'Jamie', 'Avery', 'Quinn', 'Harper', 'Rowan',
  'Elena', 'Marco', 'Priya', 'Kenji', 'Amara', 'Lucas', 'Sofia', 'Omar', 'Ines', 'Noah', 'Mia', 'Liam',
  'Chloe', 'Mateo', 'Zara', 'Felix', 'Nadia', 'Hugo',
];
/** Last names the seed data and later-created records draw from. */
export const LAST_NAMES = [
  'Morgan', 'Lee', 'Patel', 'Garcia', 'Nguyen', 'Smith', 'Kowalski', 'Okafor', 'Rossi', 'Tanaka', 'Muller', 'Silva',
  'Dubois', 'Hansen', 'Novak', 'Cohen', 'Khan', 'Berg', 'Fischer', 'Lopez', 'Brown', 'Walsh', 'Ibrahim', 'Costa',
];
const COUNTERPARTIES = ['Northwind Supply', 'Blue Harbor Foods', 'Acme Tools', 'City Utilities', 'Greenleaf Farms', 'Pioneer Insurance', 'Metro Rentals', 'Summit Consulting', 'IRS', 'State Tax Board'];
const DESCRIPTIONS: Record<TransactionType, readonly string[]> = {
  INCOME: ['Catering order', 'Weekend sales', 'Event booking', 'Online orders', 'Gift card sales'],
  EXPENSE: ['Produce delivery', 'Kitchen equipment repair', 'Cleaning supplies', 'Electricity bill', 'Rent'],
  DEDUCTION: ['Equipment depreciation', 'Home office deduction', 'Vehicle mileage'],
  TAX_PAYMENT: ['Quarterly estimated tax', 'Sales tax remittance', 'Payroll tax deposit'],
  REFUND: ['Supplier refund', 'Overcharge refund', 'Returned goods'],
  TRANSFER: ['Transfer to savings', 'Transfer between accounts'],
  INVOICE: ['Invoice to corporate client', 'Invoice for private event', 'Monthly retainer invoice'],
};
const IRS_CATEGORIES = ['SUPPLIES', 'UTILITIES', 'RENT', 'REPAIRS', 'TAXES', 'SALES', 'OTHER'];
const DEAL_PRODUCTS = ['annual catering contract', 'office lunch plan', 'wedding package', 'franchise inquiry', 'bulk supply order', 'holiday party'];

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function dayIso(ms: number): string {
  return iso(ms - (((ms % DAY_MS) + DAY_MS) % DAY_MS));
}

/** Sorts records by (createdAt, id) ascending, the order every stream array keeps. */
export function compareCreated(left: TimestampedRecord, right: TimestampedRecord): number {
  if (left.createdAt < right.createdAt) return -1;
  if (left.createdAt > right.createdAt) return 1;
  return left.id < right.id ? -1 : left.id > right.id ? 1 : 0;
}

/**
 * createdAt/updatedAt pairs for `count` stream records, increasing createdAt, spread over the year
 * before `anchorMs`. About 2% share the previous record's createdAt and 2% its updatedAt (ties).
 */
function timeline(rng: SeededRandom, count: number, anchorMs: number): { createdMs: number; updatedMs: number }[] {
  const out: { createdMs: number; updatedMs: number }[] = new Array(count);
  const start = anchorMs - SPAN_MS;
  const step = SPAN_MS / Math.max(count, 1);
  let previous = { createdMs: start, updatedMs: start };
  for (let index = 0; index < count; index += 1) {
    let createdMs = Math.floor(start + index * step + rng.next() * step);
    if (index > 0 && rng.chance(0.02)) createdMs = previous.createdMs;
    let updatedMs = createdMs;
    if (rng.chance(0.4)) updatedMs = createdMs + Math.floor(rng.next() * (anchorMs - createdMs));
    if (index > 0 && rng.chance(0.02) && previous.updatedMs >= createdMs) updatedMs = previous.updatedMs;
    previous = { createdMs, updatedMs };
    out[index] = previous;
  }
  return out;
}

/**
 * Groups `times` into bursts sharing one createdAt (GenerateOptions.createdInBursts). Draws from its
 * own generator, so the rest of the seeded data stays the same with or without bursts.
 */
function inBursts(times: { createdMs: number; updatedMs: number }[], meanBurst: number | undefined, seed: number): { createdMs: number; updatedMs: number }[] {
  if (meanBurst === undefined || meanBurst <= 1) return times;
  const rng = new SeededRandom(seed);
  let index = 0;
  while (index < times.length) {
    const size = rng.int(1, 2 * Math.floor(meanBurst) - 1);
    const createdMs = (times[index] as { createdMs: number }).createdMs;
    for (let member = index; member < Math.min(times.length, index + size); member += 1) {
      const time = times[member] as { createdMs: number; updatedMs: number };
      time.createdMs = createdMs;
      time.updatedMs = Math.max(time.updatedMs, createdMs);
    }
    index += size;
  }
  return times;
}

function pickType(rng: SeededRandom): TransactionType {
  const roll = rng.next();
  if (roll < 0.35) return 'INCOME';
  if (roll < 0.65) return 'EXPENSE';
  if (roll < 0.75) return 'INVOICE';
  if (roll < 0.8) return 'REFUND';
  if (roll < 0.85) return 'DEDUCTION';
  if (roll < 0.9) return 'TAX_PAYMENT';
  return 'TRANSFER';
}

/** Signs an amount of cents by transaction type (spec §4.7): EXPENSE, DEDUCTION, TAX_PAYMENT negative. */
export function signedAmount(type: string, amount: number): number {
  const magnitude = Math.abs(amount);
  return NEGATIVE_TRANSACTION_TYPES.has(type) ? -magnitude : magnitude;
}

/** Builds the company's whole world from the seed. */
export function generateCompany(options: GenerateOptions): CompanyData {
  const { key, anchorMs, nowMs, sizes } = options;
  // Extra companies C1..CN: seeded apart from A (1), B (2) and each other; B's staff names, their own company name and domain.
  const extra = key === 'A' || key === 'B' ? 0 : Number(key.slice(1));
  if (key !== 'A' && key !== 'B' && !(Number.isInteger(extra) && extra >= 1)) throw new Error(`company key must be A, B or C<k> with k >= 1, got "${key}"`);
  const rng = new SeededRandom(options.seed * 7919 + (key === 'A' ? 1 : 2 + extra));
  const companyName = key === 'A' ? 'Acme Bistro Group' : key === 'B' ? 'Blue Harbor Foods' : `Company ${extra} Kitchens`;
  const domain = key === 'A' ? 'acme.example' : key === 'B' ? 'blueharbor.example' : `company-${extra}.example`;
  const createdAtBase = iso(anchorMs - SPAN_MS - 30 * DAY_MS);

  const locations = Array.from({ length: key === 'A' ? 3 : 2 }, (_, index) => ({
    id: rng.id('loc'),
    reference: `${companyName} ${['Downtown', 'Harbor', 'Uptown'][index]}`,
    subdomain: `${key.toLowerCase()}-${['downtown', 'harbor', 'uptown'][index]}`,
    tagline: null,
    code: `L${index + 1}`,
    createdAt: createdAtBase,
  }));
  const locationIds = locations.map((location) => location.id);
  const legalEntities = [
    { id: rng.id('le'), name: `${companyName} LLC` },
    { id: rng.id('le'), name: `${companyName} Holdings Inc` },
  ];
  const benefits = ['Health insurance', 'Dental plan', 'Commuter pass', 'Retirement match'].map((name) => ({ id: rng.id('ben'), name }));

  // Employees: the token employees first, then staff. The admin manages staff 0..7.
  const employees: EmployeeRecord[] = [];
  const makeEmployee = (fullname: string, tokenRole: string | null, managerId: string | null, isHr = false): EmployeeRecord => {
    const employee: EmployeeRecord = {
      id: rng.id('emp'),
      fullname,
      tokenRole,
      managerId,
      isHr,
      inSupportRota: tokenRole === 'admin',
      homeLocationId: rng.pick(locationIds),
      benefitIds: [],
      isDeactivated: false,
    };
    employees.push(employee);
    return employee;
  };
  const admin = makeEmployee(key === 'A' ? 'Alex Morgan' : 'Bea Hansen', 'admin', null);
  const hr = makeEmployee(key === 'A' ? 'Harper Quinn' : 'Hugo Berg', 'hr', admin.id, true);
  const ordinary = makeEmployee(key === 'A' ? 'Sam Lee' : 'Sofia Costa', 'employee', admin.id);
  makeEmployee(key === 'A' ? 'Riley Novak' : 'Rowan Silva', 'readOnly', admin.id);
  makeEmployee(key === 'A' ? 'Nadia Khan' : 'Noah Walsh', 'noScopes', admin.id);
  for (let index = 0; index < 15; index += 1) {
    const staff = makeEmployee(`${rng.pick(FIRST_NAMES)} ${rng.pick(LAST_NAMES)}`, null, index < 8 ? admin.id : hr.id);
    staff.benefitIds = benefits.filter(() => rng.chance(0.5)).map((benefit) => benefit.id);
  }
  const deactivated = employees[employees.length - 1];
  if (deactivated) deactivated.isDeactivated = true;
  const staffIds = employees.filter((employee) => employee.tokenRole === null).map((employee) => employee.id);

  const emailAddresses = [
    { address: `${admin.fullname.toLowerCase().replace(' ', '.')}@${domain}`, employeeId: admin.id, accountId: rng.id('acc') },
    { address: `sales@${domain}`, employeeId: admin.id, accountId: rng.id('acc') },
    { address: `${ordinary.fullname.toLowerCase().replace(' ', '.')}@${domain}`, employeeId: ordinary.id, accountId: rng.id('acc') },
    { address: `${hr.fullname.toLowerCase().replace(' ', '.')}@${domain}`, employeeId: hr.id, accountId: rng.id('acc') },
  ];

  // Customers.
  const customerTimes = inBursts(timeline(rng, sizes.customers, anchorMs), options.createdInBursts, options.seed * 104_729 + 9);
  const customers: CustomerRecord[] = customerTimes.map((time, index) => {
    const firstName = rng.pick(FIRST_NAMES);
    const lastName = rng.pick(LAST_NAMES);
    return {
      id: rng.id('cus'),
      firstName,
      lastName,
      email: `${firstName.toLowerCase()}.${lastName.toLowerCase()}${index}@mail.example`,
      lifecycleStage: rng.pick(['LEAD', 'LEAD', 'PROSPECT', 'CUSTOMER']),
      createdAt: iso(time.createdMs),
      updatedAt: iso(time.updatedMs),
    };
  });

  // Pipelines and deals.
  const pipelines = ['Sales', 'Events'].map((name) => ({
    id: rng.id('pip'),
    name,
    stageIds: Array.from({ length: 5 }, () => rng.id('stg')),
    stageProbabilities: [10, 25, 50, 75, 90],
  }));
  const dealTimes = inBursts(timeline(rng, sizes.deals, anchorMs), options.createdInBursts, options.seed * 104_729 + 5);
  const deals: DealRecord[] = dealTimes.map((time, index) => {
    const pipeline = rng.pick(pipelines);
    const stageIndex = rng.int(0, pipeline.stageIds.length - 1);
    const roll = rng.next();
    const status: DealStatus = roll < 0.7 ? 'OPEN' : roll < 0.85 ? 'WON' : 'LOST';
    const customer = customers.length > 0 ? rng.pick(customers) : null;
    const createdAt = iso(time.createdMs);
    const updatedAt = iso(time.updatedMs);
    return {
      id: rng.id('deal'),
      referenceId: 1000 + index,
      locationId: rng.pick(locationIds),
      pipelineId: pipeline.id,
      stageId: pipeline.stageIds[stageIndex] as string,
      accountId: rng.id('acct'),
      ownerId: rng.pick([admin.id, ordinary.id, ...staffIds.slice(0, 4)]),
      title: `${customer ? `${customer.firstName} ${customer.lastName}` : 'Walk-in'}: ${rng.pick(DEAL_PRODUCTS)}`,
      value: rng.int(50, 50_000) * 100,
      currency: 'USD',
      status,
      probability: status === 'WON' ? 100 : status === 'LOST' ? 0 : (pipeline.stageProbabilities[stageIndex] ?? 10),
      expectedCloseDate: dayIso(time.createdMs + rng.int(30, 120) * DAY_MS),
      sortOrder: index,
      wonLostReason: status === 'OPEN' ? null : status === 'WON' ? 'Signed the proposal' : 'Chose a competitor',
      closedAt: status === 'OPEN' ? null : updatedAt,
      stageMovedAt: updatedAt,
      createdAt,
      updatedAt,
      customerId: customer ? customer.id : null,
    };
  });

  // Onboardings: new hires who have not completed onboarding.
  const onboardingTimes = inBursts(timeline(rng, sizes.onboardings, anchorMs), options.createdInBursts, options.seed * 104_729 + 11);
  const onboardings: OnboardingRecord[] = onboardingTimes.map((time) => ({
    id: rng.id('onb'),
    employeeId: rng.id('emp'),
    onboardingStep: rng.int(1, 4),
    fullname: `${rng.pick(FIRST_NAMES)} ${rng.pick(LAST_NAMES)}`,
    createdAt: iso(time.createdMs),
    updatedAt: iso(time.updatedMs),
    completedAt: null,
  }));

  // Transactions.
  const transactionTimes = inBursts(timeline(rng, sizes.transactions, anchorMs), options.createdInBursts, options.seed * 104_729 + 12);
  const transactions: TransactionRecord[] = new Array(sizes.transactions);
  for (let index = 0; index < sizes.transactions; index += 1) {
    const time = transactionTimes[index] as { createdMs: number; updatedMs: number };
    const type = pickType(rng);
    const roll = rng.next();
    const status: TransactionStatus = roll < 0.8 ? 'CONFIRMED' : roll < 0.95 ? 'PENDING' : 'VOIDED';
    const dateMs = time.createdMs;
    const hasLocation = rng.chance(0.85);
    // One toISOString per timestamp: the day, tax year and quarter are read off createdAt's text
    // (same values as from a Date, for years 0000-9999; this loop dominates generating many companies).
    const createdAt = iso(time.createdMs);
    const plainYear = createdAt.length === 24;
    transactions[index] = {
      id: rng.id('txn'),
      type,
      status,
      amount: signedAmount(type, rng.int(1, 5000) * 100 + rng.int(0, 99)),
      description: rng.pick(DESCRIPTIONS[type]),
      date: plainYear ? `${createdAt.slice(0, 10)}T00:00:00.000Z` : dayIso(dateMs),
      dueDate: status === 'PENDING' && rng.chance(0.8) ? dayIso(dateMs + 30 * DAY_MS) : null,
      counterpartyName: rng.pick(COUNTERPARTIES),
      counterpartyEmail: null,
      irsCategory: rng.pick(IRS_CATEGORIES),
      notes: null,
      locationId: hasLocation ? rng.pick(locationIds) : null,
      legalEntityId: rng.pick(legalEntities).id,
      taxYear: plainYear ? Number(createdAt.slice(0, 4)) : new Date(dateMs).getUTCFullYear(),
      taxQuarter: plainYear ? Math.floor((Number(createdAt.slice(5, 7)) - 1) / 3) + 1 : Math.floor(new Date(dateMs).getUTCMonth() / 3) + 1,
      createdAt,
      updatedAt: time.updatedMs === time.createdMs ? createdAt : iso(time.updatedMs),
    };
  }

  customers.sort(compareCreated);
  deals.sort(compareCreated);
  onboardings.sort(compareCreated);
  transactions.sort(compareCreated);

  // Vault: the admin is in folder 1 but not folder 2 (spec §4.2 rule 1).
  const folders = [
    { id: rng.id('vfd'), name: 'Operations', memberEmployeeIds: [admin.id, hr.id] },
    { id: rng.id('vfd'), name: 'Finance', memberEmployeeIds: [hr.id] },
  ];
  const [operations, finance] = folders as [(typeof folders)[number], (typeof folders)[number]];
  const vaultCredentials = [
    { name: 'Payment gateway', parentId: operations.id, apiKey: 'sk_sim_payment_gateway_key' },
    { name: 'Delivery partner', parentId: operations.id, apiKey: 'sk_sim_delivery_partner_key' },
    { name: 'Bank feed', parentId: finance.id, apiKey: 'sk_sim_bank_feed_key' },
  ].map((entry, index) => ({
    id: rng.id('vcr'),
    referenceId: 100 + index,
    name: entry.name,
    type: 'API_KEY',
    username: null,
    email: emailAddresses[0]?.address ?? null,
    website: `https://${entry.name.toLowerCase().replace(' ', '-')}.example`,
    notes: null,
    tags: ['integration'],
    parentId: entry.parentId,
    lastAccessedAt: createdAtBase,
    sensitiveData: { apiKey: `${entry.apiKey}_${key.toLowerCase()}` },
    createdAt: createdAtBase,
    updatedAt: createdAtBase,
  }));

  // Calendar: the admin and the employee attend the first two events; the second one recurs weekly.
  const eventStart = Math.floor(anchorMs / DAY_MS) * DAY_MS + 9 * 3_600_000;
  const attendee = (employeeId: string, status = 'PENDING') => ({
    id: rng.id('att'),
    employeeId,
    status,
    optional: false,
    note: null,
    declinedOccurrences: [] as string[],
  });
  const calendarEvents = [
    { title: 'Quarterly planning', recurrenceRule: null as string | null, attendees: [attendee(admin.id, 'ACCEPTED'), attendee(ordinary.id), attendee(hr.id)] },
    { title: 'Weekly kitchen sync', recurrenceRule: 'FREQ=WEEKLY;BYDAY=MO', attendees: [attendee(admin.id), attendee(ordinary.id, 'ACCEPTED')] },
    { title: 'HR policy review', recurrenceRule: null, attendees: [attendee(hr.id, 'ACCEPTED')] },
  ].map((entry, index) => ({
    id: rng.id('evt'),
    title: entry.title,
    description: `${entry.title} for ${companyName}`,
    location: locations[0]?.reference ?? 'Head office',
    startTime: iso(eventStart + index * DAY_MS),
    endTime: iso(eventStart + index * DAY_MS + 3_600_000),
    timezone: 'America/New_York',
    allDay: false,
    showAs: 'DEFAULT',
    includeVirtualMeeting: index === 1,
    meetingRoomId: null,
    recurrenceRule: entry.recurrenceRule,
    recurrenceEndDate: entry.recurrenceRule ? iso(eventStart + 180 * DAY_MS) : null,
    recurrenceExclusions: [],
    createdByEmployeeId: admin.id,
    attendees: [
      ...entry.attendees,
      ...(index === 0
        ? [{ id: rng.id('att'), employeeId: null, guestEmail: 'guest@partner.example', guestName: 'Pat Guest', status: 'PENDING', optional: true, note: null, declinedOccurrences: [] }]
        : []),
    ],
    createdAt: createdAtBase,
    updatedAt: createdAtBase,
  }));

  // QA corrective actions: per location, a few checks.
  const checkIds = Array.from({ length: 4 }, () => rng.id('chk'));
  const categories = ['EQUIPMENT', 'PROCESS', 'TRAINING', 'OTHER'];
  const qaTimes = timeline(rng, 36, anchorMs);
  const correctiveActions = qaTimes.map((time, index) => {
    const closed = rng.chance(0.4);
    const openedAt = iso(time.createdMs);
    return {
      id: rng.id('qca'),
      locationId: locationIds[index % locationIds.length] as string,
      shiftSessionId: rng.id('ss'),
      checkId: rng.pick(checkIds),
      issue: rng.pick(['Fridge above 5°C', 'Allergen label missing', 'Floor wet near fryer', 'Expired stock found']),
      suspectedCause: rng.pick(['Door seal worn', 'New starter not trained', 'Supplier label change', 'Rota gap']),
      actionTaken: rng.pick(['Replaced seal', 'Retrained staff', 'Relabelled stock', 'Discarded stock']),
      ownerEmployeeId: rng.pick([admin.id, ...staffIds.slice(0, 3)]),
      category: rng.pick(categories),
      status: closed ? ('CLOSED' as const) : ('OPEN' as const),
      openedAt,
      resolvedAt: closed ? iso(time.updatedMs) : null,
      resolutionNotes: closed ? 'Verified at next check' : null,
      createdAt: openedAt,
      updatedAt: iso(time.updatedMs),
    };
  });

  // Email: a customer wrote to the admin; a reply with "Re: Quote request" joins that thread.
  const firstCustomer = customers[0];
  const inboundId = rng.id('eml');
  const adminAddress = emailAddresses[0] as (typeof emailAddresses)[number];
  const emails = firstCustomer
    ? [
        {
          id: inboundId,
          from: firstCustomer.email,
          to: adminAddress.address,
          cc: [],
          bcc: [],
          subject: 'Quote request',
          text: 'Could you send a quote for 40 guests?',
          html: null,
          direction: 'INBOUND',
          threadId: inboundId,
          unread: true,
          starred: false,
          folder: 'INBOX',
          accountId: adminAddress.accountId,
          createdAt: createdAtBase,
          updatedAt: createdAtBase,
        },
      ]
    : [];
  const threadIndex = new Map<string, string>();
  const customerConversations = new Map<string, string[]>();
  if (firstCustomer) {
    threadIndex.set(threadKey('Quote request', firstCustomer.email, adminAddress.address), inboundId);
    customerConversations.set(firstCustomer.id, [inboundId]);
  }
  const drafts = [
    { owner: admin.id, from: adminAddress.address, subject: 'Menu update' },
    { owner: ordinary.id, from: emailAddresses[2]?.address ?? adminAddress.address, subject: 'Shift swap' },
  ].map((entry) => ({
    id: rng.id('drf'),
    ownerEmployeeId: entry.owner,
    from: entry.from,
    to: ['team@' + domain],
    cc: [],
    bcc: [],
    subject: entry.subject,
    text: 'Draft text',
    scheduledAt: null,
    createdAt: createdAtBase,
    updatedAt: createdAtBase,
  }));

  // Conversations: see World for which token reaches which (spec §4.12).
  const member = (employeeId: string, role: 'ADMIN' | 'MEMBER' = 'MEMBER') => ({
    employeeId,
    role,
    isExternal: false,
    lastReadAt: createdAtBase,
    unreadCount: rng.int(0, 5),
    unreadThreadCount: rng.int(0, 2),
    markedUnread: false,
    isMuted: false,
    isFavorite: role === 'ADMIN',
  });
  const conversationSpecs = [
    { name: 'general', visibility: 'PUBLIC' as const, isArchived: false, isSupport: false, members: [member(admin.id, 'ADMIN'), member(hr.id), member(ordinary.id)] },
    { name: 'kitchen', visibility: 'PUBLIC' as const, isArchived: false, isSupport: false, members: [member(hr.id, 'ADMIN')] },
    { name: 'leadership', visibility: 'PRIVATE' as const, isArchived: false, isSupport: false, members: [member(admin.id, 'ADMIN'), member(hr.id)] },
    { name: 'hr-private', visibility: 'PRIVATE' as const, isArchived: false, isSupport: false, members: [member(hr.id, 'ADMIN')] },
    { name: 'old-announcements', visibility: 'PUBLIC' as const, isArchived: true, isSupport: false, members: [member(admin.id, 'ADMIN'), member(ordinary.id)] },
    { name: 'support', visibility: 'PRIVATE' as const, isArchived: false, isSupport: true, members: [member(hr.id, 'ADMIN')] },
  ];
  const conversations = conversationSpecs.map((spec, index) => {
    const id = rng.id('cnv');
    const authorId = spec.members[0]?.employeeId ?? admin.id;
    const author = employees.find((employee) => employee.id === authorId);
    const messages = Array.from({ length: 3 }, (_, messageIndex) => {
      const external = spec.isSupport && messageIndex % 2 === 0;
      return {
        id: rng.id('msg'),
        conversationId: id,
        authorEmployeeId: external ? rng.id('emp') : authorId,
        authorName: external ? 'Chris Client' : (author?.fullname ?? 'Staff'),
        authorCompanyName: external ? 'Client Co' : companyName,
        internal: !external,
        parentMessageId: null,
        content: messageIndex === 1 ? `Thanks <@${admin.id}>, noted.` : `Message ${messageIndex + 1} in #${spec.name}`,
        type: 'TEXT',
        replyCount: 0,
        lastReplyAt: null,
        editedAt: null,
        deletedAt: null,
        pinnedAt: null,
        mentionedEmployeeIds: messageIndex === 1 ? [admin.id] : [],
        createdAt: iso(anchorMs - (10 - messageIndex) * 3_600_000 - index * 60_000),
      };
    });
    return {
      id,
      referenceId: 500 + index,
      type: 'CHANNEL',
      title: spec.name,
      name: spec.name,
      topic: spec.isSupport ? 'Help with our catering order' : `All about ${spec.name}`,
      description: spec.isSupport ? null : `The #${spec.name} channel`,
      visibility: spec.visibility,
      isArchived: spec.isArchived,
      isSupport: spec.isSupport,
      isCrossCompany: spec.isSupport,
      supportCompany: spec.isSupport ? { id: rng.id('com'), name: 'Client Co' } : null,
      supportStatus: 'awaiting-reply',
      waitingOnUs: spec.isSupport,
      members: spec.members,
      messages,
      createdAt: createdAtBase,
      updatedAt: messages[messages.length - 1]?.createdAt ?? createdAtBase,
    };
  });

  const campaigns = [
    { name: 'Spring menu launch', status: 'DRAFT', counts: { SENT: 0, DELIVERED: 0, SKIPPED: 0, FAILED: 0 } },
    { name: 'Loyalty win-back', status: 'SENT', counts: { SENT: 180, DELIVERED: 171, SKIPPED: 24, FAILED: 9 } },
  ].map((entry) => ({
    id: rng.id('cam'),
    locationId: locationIds[0] as string,
    name: entry.name,
    channel: 'EMAIL',
    status: entry.status,
    subject: entry.name,
    body: 'Hello {{firstName}}, we have news for you.',
    audience: { lifecycleStages: ['CUSTOMER'], inactiveDays: entry.status === 'SENT' ? 90 : null, createdWithinDays: null, neverContacted: false },
    scheduledAt: null,
    startedAt: entry.status === 'SENT' ? createdAtBase : null,
    sentAt: entry.status === 'SENT' ? createdAtBase : null,
    recipientCounts: entry.counts,
    createdAt: createdAtBase,
    updatedAt: createdAtBase,
  }));

  const domains = [
    {
      id: rng.id('dom'),
      name: domain.replace('.example', '-bistro.com'),
      emailEnabled: true,
      emailStatus: 'verified',
      emailAddresses: [`hello@${domain.replace('.example', '-bistro.com')}`],
      assignedLocations: locations[0] ? [{ id: locations[0].id, reference: locations[0].reference }] : [],
      pricePaid: 1200,
      createdAt: createdAtBase,
    },
  ];

  // The admin is inside a shift now (so clock-in links to it); the ordinary employee is not.
  const shifts = [
    { id: rng.id('shf'), employeeId: admin.id, locationId: locationIds[1] ?? (locationIds[0] as string), startAt: iso(nowMs - 4 * 3_600_000), endAt: iso(nowMs + 8 * 3_600_000) },
    { id: rng.id('shf'), employeeId: ordinary.id, locationId: locationIds[0] as string, startAt: iso(nowMs + 2 * DAY_MS), endAt: iso(nowMs + 2 * DAY_MS + 8 * 3_600_000) },
  ];

  return {
    key,
    id: rng.id('com'),
    name: companyName,
    locations,
    legalEntities,
    employees,
    benefits,
    pipelines,
    transactions,
    deals,
    onboardings,
    completedOnboardings: [],
    customers,
    emailAddresses,
    emails,
    threadIndex,
    customerConversations,
    drafts,
    vaultFolders: folders,
    vaultCredentials,
    auditEvents: [],
    calendarEvents,
    correctiveActions,
    conversations,
    campaigns,
    domains,
    performanceReviews: [],
    notifications: [],
    shifts,
    timeClockEntries: [],
    journalEntries: [],
    creditsCents: 100_000,
    taxLiabilityCents: 0,
    nextReferenceId: 10_000,
    versions: { transactions: 0, deals: 0, onboardings: 0, customers: 0 },
    undeclaredFields: new Set(),
  };
}

/**
 * The thread key of spec §4.5: the subject without leading `Re:`/`Fwd:` prefixes, case-insensitive,
 * and the unordered pair of addresses.
 */
export function threadKey(subject: string, addressOne: string, addressTwo: string): string {
  const normalized = subject
    .trim()
    .replace(/^((re|fw|fwd)\s*:\s*)+/i, '')
    .trim()
    .toLowerCase();
  const pair = [addressOne.trim().toLowerCase(), addressTwo.trim().toLowerCase()].sort();
  return `${normalized}|${pair.join('|')}`;
}
