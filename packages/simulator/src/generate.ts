/**
 * Deterministic seed data for one company (spec §2 shapes): the same seed, sizes and anchor give the
 * same world. Stream records come from each simulated stream's generator (streams/), in declaration
 * order, created over the year before the anchor with a few deliberate ties (records sharing a
 * createdAt or an updatedAt) so clients meet them; then the company's other records.
 * Generating 100,000 transactions takes well under a second.
 */
import type { CompanyData } from './company-data.ts';
import { SeededRandom } from './random.ts';
import type { EmployeeRecord, PipelineRecord, TimestampedRecord } from './records.ts';
import { compareCreated, DAY_MS, FIRST_NAMES, inBursts, iso, LAST_NAMES, SPAN_MS, timeline } from './seeding.ts';
import { SIMULATED_STREAMS, type StreamRecords, type StreamSizes } from './streams/index.ts';
import type { CompanyKey } from './tokens.ts';

export type { StreamSizes } from './streams/index.ts';

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

  const emailAddresses = [
    { address: `${admin.fullname.toLowerCase().replace(' ', '.')}@${domain}`, employeeId: admin.id, accountId: rng.id('acc') },
    { address: `sales@${domain}`, employeeId: admin.id, accountId: rng.id('acc') },
    { address: `${ordinary.fullname.toLowerCase().replace(' ', '.')}@${domain}`, employeeId: ordinary.id, accountId: rng.id('acc') },
    { address: `${hr.fullname.toLowerCase().replace(' ', '.')}@${domain}`, employeeId: hr.id, accountId: rng.id('acc') },
  ];

  // The streams, in declaration order, each from the company's generator; sorted once all are made
  // (a generator may pick records of an earlier stream in the order they were made).
  const pipelines: PipelineRecord[] = [];
  const made: Record<string, TimestampedRecord[]> = {};
  for (const stream of SIMULATED_STREAMS) {
    const count = sizes[stream.name];
    made[stream.name] = stream.generate({
      random: rng,
      count,
      times: (salt) => inBursts(timeline(rng, count, anchorMs), options.createdInBursts, options.seed * 104_729 + salt),
      company: { key, locations, legalEntities, employees, pipelines, streams: made },
    });
  }
  for (const records of Object.values(made)) records.sort(compareCreated);
  const streams = made as StreamRecords;
  const customers = streams.customers;

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
    streams,
    completedOnboardings: [],
    emailAddresses,
    emails,
    threadIndex,
    customerConversations,
    drafts,
    vaultFolders: folders,
    vaultCredentials,
    auditEvents: [],
    calendarEvents,
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
    versions: Object.fromEntries(SIMULATED_STREAMS.map((stream) => [stream.name, 0])) as Record<keyof StreamRecords, number>,
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
