/**
 * The simulator's ground truth: plain objects that endpoints read and write and tests mutate.
 *
 * `World` is company A (the company of every token except `otherCompany` and the extra companies'
 * tokens) and holds company B under `world.companies.B` and extra companies under `world.companies.C1`..;
 * all are `CompanyWorld`s with the same methods. Every change sets the record's
 * `updatedAt` to the clock, so `updatedAfter` sees it (spec §1 pagination).
 */
import type { CompanyData, UndeclaredField } from './company-data.ts';
import { generateCompany } from './generate.ts';
import { SeededRandom } from './random.ts';
import type {
  CustomerRecord,
  DealRecord,
  EmployeeRecord,
  OnboardingRecord,
  TimestampedRecord,
  TimeClockEntryRecord,
  TransactionRecord,
  TransactionType,
} from './records.ts';
import { TRANSACTION_TYPES } from './records.ts';
import { compareCreated, FIRST_NAMES, LAST_NAMES, signedAmount } from './seeding.ts';
import { SIMULATED_STREAMS, simulatedStream, STREAM_NAMES, type RecordOf, type StreamName, type StreamSizes } from './streams/index.ts';
import { extraCompanyKey, type CompanyKey } from './tokens.ts';

export { LAST_ONBOARDING_STEP } from './streams/onboardings-stream.ts';

/**
 * One change made by churn: the stream, the record, and what happened to it (the stream's churn rule
 * names it: `created`, `voided`, `confirmed`, `stage-moved`, `won`, `lost`, `reopened`, `advanced`,
 * `completed`, `started`, ...).
 */
export interface ChurnChange {
  stream: StreamName;
  id: string;
  kind: string;
}

/** Counts of the world, as `GET /__admin/state` shows them: each stream's records, and the company's other records. */
export type WorldSnapshot = {
  /** Records per simulated stream, by the stream's name (each declaration's own key: no other count can take it). */
  streams: Record<StreamName, number>;
  completedOnboardings: number;
  payables: number;
  emails: number;
  auditEvents: number;
  performanceReviews: number;
  timeClockEntries: number;
  domains: number;
  locations: number;
  creditsCents: number;
};

/** A state transition the rules refuse (e.g. WON -> LOST directly); handlers answer 409. */
export class TransitionError extends Error {}

const DEAL_CLOSE_STATUSES = new Set(['WON', 'LOST', 'OPEN']);

/** The streams churn changes (read at each change: a stream registered at run time churns too). */
function churningStreams() {
  return SIMULATED_STREAMS.flatMap((stream) => (stream.churn ? [stream as typeof stream & { churn: NonNullable<typeof stream.churn> }] : []));
}

/** Position where `record` belongs in an array sorted by (createdAt, id). */
function insertionIndex(records: readonly TimestampedRecord[], record: TimestampedRecord): number {
  let low = 0;
  let high = records.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (compareCreated(records[middle] as TimestampedRecord, record) <= 0) low = middle + 1;
    else high = middle;
  }
  return low;
}

/**
 * One simulated company's ground truth (`data`) and the operations endpoints, churn and tests apply
 * to it, keeping stream arrays sorted by (createdAt, id) and bumping their change counters.
 */
export class CompanyWorld {
  readonly data: CompanyData;
  protected readonly clock: () => number;
  protected readonly random: SeededRandom;

  /**
   * @param data the company's records (from generateCompany)
   * @param clock ms epoch source for createdAt/updatedAt
   * @param seed seeds the ids and choices of records created later (and churn)
   */
  constructor(data: CompanyData, clock: () => number, seed: number) {
    this.data = data;
    this.clock = clock;
    this.random = new SeededRandom(seed);
  }

  get key(): CompanyKey {
    return this.data.key;
  }
  get transactions(): TransactionRecord[] {
    return this.data.streams.transactions;
  }
  get deals(): DealRecord[] {
    return this.data.streams.deals;
  }
  get onboardings(): OnboardingRecord[] {
    return this.data.streams.onboardings;
  }
  get completedOnboardings(): OnboardingRecord[] {
    return this.data.completedOnboardings;
  }
  get customers(): CustomerRecord[] {
    return this.data.streams.customers;
  }
  get employees(): EmployeeRecord[] {
    return this.data.employees;
  }
  /** PENDING transactions with a dueDate: the payables view (spec §3, §4.7). */
  get payables(): TransactionRecord[] {
    return this.data.streams.transactions.filter((record) => record.status === 'PENDING' && record.dueDate !== null);
  }

  /** A new seeded kind-prefixed id, e.g. `newId('eml')` (spec §1.6). */
  newId(prefix: string): string {
    return this.random.id(prefix);
  }

  /** The clock as an ISO timestamp with milliseconds. */
  now(): string {
    return new Date(this.clock()).toISOString();
  }

  /** The seeded employee a token role acts as (`admin`, `hr`, `employee`, ...). Throws when missing. */
  employeeForRole(role: string): EmployeeRecord {
    const employee = this.data.employees.find((candidate) => candidate.tokenRole === role);
    if (!employee) throw new Error(`no employee acts as token role ${role} in company ${this.data.key}`);
    return employee;
  }

  /**
   * The stream array (sorted by createdAt, id).
   * @throws Error naming the simulated streams when `stream` is not one
   */
  streamRecords<Name extends StreamName>(stream: Name): RecordOf<Name>[] {
    simulatedStream(stream);
    return this.data.streams[stream];
  }

  /**
   * Marks the world changed. World methods call it; code that edits stream records or arrays directly
   * (e.g. `record.updatedAt = ...`) must call it too, so cached sorted list views are rebuilt.
   */
  touch(stream?: StreamName): void {
    for (const name of stream ? [stream] : STREAM_NAMES) this.data.versions[name] += 1;
  }

  /**
   * Adds a record to any stream (its declaration's churn and tests use it), kept in (createdAt, id)
   * order; the caller sets every field, createdAt/updatedAt included.
   * @throws Error naming the simulated streams when `stream` is not one
   */
  addRecord<Name extends StreamName>(stream: Name, record: RecordOf<Name>): RecordOf<Name> {
    simulatedStream(stream);
    return this.insert(stream, record);
  }

  /**
   * Applies `patch` to a record of any stream and sets updatedAt = now (unless the patch sets it);
   * `id` and `createdAt` never change.
   * @throws Error on an unknown stream or id
   */
  updateRecord<Name extends StreamName>(stream: Name, id: string, patch: Partial<RecordOf<Name>>): RecordOf<Name> {
    simulatedStream(stream);
    const record = this.findIn<RecordOf<Name>>(stream, id);
    Object.assign(record, patch, { id: record.id, createdAt: record.createdAt, updatedAt: patch.updatedAt ?? this.now() });
    return record;
  }

  private insert<T extends TimestampedRecord>(stream: StreamName, record: T): T {
    this.touch(stream);
    const records = this.data.streams[stream] as unknown as T[];
    records.splice(insertionIndex(records, record), 0, record);
    return record;
  }

  private findIn<T extends TimestampedRecord>(stream: StreamName, id: string): T {
    this.touch(stream);
    const records = this.data.streams[stream] as unknown as T[];
    const what = stream.replace(/s$/, '');
    const record = records.find((candidate) => candidate.id === id);
    if (!record) throw new Error(`no ${what} with id ${id} in company ${this.data.key}`);
    return record;
  }

  /**
   * Adds a transaction (defaults for every field not given; the amount is signed by type, spec §4.7),
   * posts its journal entries and recomputes the tax liability. createdAt/updatedAt default to now.
   */
  createTransaction(partial: Partial<TransactionRecord> = {}): TransactionRecord {
    const now = this.now();
    const type: TransactionType = partial.type ?? this.random.pick(TRANSACTION_TYPES);
    const createdAt = partial.createdAt ?? now;
    const record: TransactionRecord = {
      id: partial.id ?? this.random.id('txn'),
      type,
      status: partial.status ?? 'CONFIRMED',
      amount: signedAmount(type, partial.amount ?? this.random.int(100, 500_000)),
      description: partial.description ?? `Simulated ${type.toLowerCase()}`,
      date: partial.date ?? `${createdAt.slice(0, 10)}T00:00:00.000Z`,
      dueDate: partial.dueDate ?? null,
      counterpartyName: partial.counterpartyName ?? null,
      counterpartyEmail: partial.counterpartyEmail ?? null,
      irsCategory: partial.irsCategory ?? null,
      notes: partial.notes ?? null,
      locationId: partial.locationId ?? null,
      legalEntityId: partial.legalEntityId ?? null,
      taxYear: partial.taxYear ?? null,
      taxQuarter: partial.taxQuarter ?? null,
      createdAt,
      updatedAt: partial.updatedAt ?? createdAt,
    };
    this.insert('transactions', record);
    this.postJournal(record);
    this.recomputeTaxLiability();
    return record;
  }

  /**
   * Applies `patch` to a transaction and sets updatedAt = now (unless the patch sets it); `id` and
   * `createdAt` never change (the array order depends on them). Throws on unknown id.
   */
  updateTransaction(id: string, patch: Partial<TransactionRecord>): TransactionRecord {
    const record = this.findIn<TransactionRecord>('transactions', id);
    Object.assign(record, patch, { id: record.id, createdAt: record.createdAt, updatedAt: patch.updatedAt ?? this.now() });
    if (patch.type !== undefined || patch.amount !== undefined) record.amount = signedAmount(record.type, record.amount);
    this.recomputeTaxLiability();
    return record;
  }

  /** Adds a deal (defaults for every field not given). */
  createDeal(partial: Partial<DealRecord> = {}): DealRecord {
    const now = this.now();
    const pipeline = this.random.pick(this.data.pipelines);
    const createdAt = partial.createdAt ?? now;
    const customers = this.data.streams.customers;
    const customer = customers.length > 0 ? this.random.pick(customers) : null;
    const record: DealRecord = {
      id: partial.id ?? this.random.id('deal'),
      referenceId: partial.referenceId ?? this.data.nextReferenceId++,
      locationId: partial.locationId ?? this.random.pick(this.data.locations).id,
      pipelineId: partial.pipelineId ?? pipeline.id,
      stageId: partial.stageId ?? (pipeline.stageIds[0] as string),
      accountId: partial.accountId ?? this.random.id('acct'),
      ownerId: partial.ownerId ?? this.employeeForRole('admin').id,
      title: partial.title ?? `New deal ${this.data.nextReferenceId}`,
      value: partial.value ?? this.random.int(50, 50_000) * 100,
      currency: partial.currency ?? 'USD',
      status: partial.status ?? 'OPEN',
      probability: partial.probability ?? 10,
      expectedCloseDate: partial.expectedCloseDate ?? new Date(this.clock() + 60 * 86_400_000).toISOString(),
      sortOrder: partial.sortOrder ?? this.data.streams.deals.length,
      wonLostReason: partial.wonLostReason ?? null,
      closedAt: partial.closedAt ?? null,
      stageMovedAt: partial.stageMovedAt ?? createdAt,
      createdAt,
      updatedAt: partial.updatedAt ?? createdAt,
      customerId: partial.customerId !== undefined ? partial.customerId : (customer?.id ?? null),
    };
    return this.insert('deals', record);
  }

  /** Applies `patch` to a deal and sets updatedAt = now (unless the patch sets it); `id`/`createdAt` never change. Throws on unknown id. */
  updateDeal(id: string, patch: Partial<DealRecord>): DealRecord {
    const record = this.findIn<DealRecord>('deals', id);
    Object.assign(record, patch, { id: record.id, createdAt: record.createdAt, updatedAt: patch.updatedAt ?? this.now() });
    return record;
  }

  /**
   * The deal status transitions of spec §3: OPEN -> WON/LOST stores the reason and sets closedAt (and
   * with `markContactAsCustomer` on WON promotes the linked customer to CUSTOMER); WON/LOST -> OPEN
   * clears both. Asking for the status the deal already has changes nothing (idempotent retry).
   * WON <-> LOST directly is "not shown" in the spec: refused with TransitionError (HTTP 409).
   * Throws Error on unknown id.
   */
  closeDeal(id: string, input: { status: string; reason?: string | null; markContactAsCustomer?: boolean }): DealRecord {
    const record = this.findIn<DealRecord>('deals', id);
    if (!DEAL_CLOSE_STATUSES.has(input.status)) throw new TransitionError(`status must be WON, LOST or OPEN, got ${input.status}`);
    const now = this.now();
    if (input.status === record.status) {
      if (input.status === 'WON' && input.markContactAsCustomer) this.promoteCustomer(record.customerId, now);
      return record;
    }
    if (input.status === 'OPEN') {
      Object.assign(record, { status: 'OPEN', wonLostReason: null, closedAt: null, updatedAt: now });
      return record;
    }
    if (record.status !== 'OPEN') {
      throw new TransitionError(`deal ${id} is ${record.status}; re-open it (status OPEN) before marking it ${input.status}`);
    }
    Object.assign(record, {
      status: input.status,
      wonLostReason: input.reason ?? null,
      closedAt: now,
      probability: input.status === 'WON' ? 100 : 0,
      updatedAt: now,
    });
    if (input.status === 'WON' && input.markContactAsCustomer) this.promoteCustomer(record.customerId, now);
    return record;
  }

  private promoteCustomer(customerId: string | null, now: string): void {
    const customer = customerId ? this.data.streams.customers.find((candidate) => candidate.id === customerId) : undefined;
    if (customer && customer.lifecycleStage !== 'CUSTOMER') {
      this.touch('customers');
      customer.lifecycleStage = 'CUSTOMER';
      customer.updatedAt = now;
    }
  }

  /** Adds a customer (defaults for every field not given). */
  createCustomer(partial: Partial<CustomerRecord> = {}): CustomerRecord {
    const createdAt = partial.createdAt ?? this.now();
    const firstName = partial.firstName ?? this.random.pick(FIRST_NAMES);
    const lastName = partial.lastName ?? this.random.pick(LAST_NAMES);
    return this.insert('customers', {
      id: partial.id ?? this.random.id('cus'),
      firstName,
      lastName,
      email: partial.email ?? `${firstName.toLowerCase()}.${lastName.toLowerCase()}.${this.random.int(1000, 9999)}@mail.example`,
      lifecycleStage: partial.lifecycleStage ?? 'LEAD',
      createdAt,
      updatedAt: partial.updatedAt ?? createdAt,
    });
  }

  /** Starts onboarding a new employee: a record appears in the onboardings list at step 1. */
  startOnboarding(partial: Partial<OnboardingRecord> = {}): OnboardingRecord {
    const createdAt = partial.createdAt ?? this.now();
    return this.insert('onboardings', {
      id: partial.id ?? this.random.id('onb'),
      employeeId: partial.employeeId ?? this.random.id('emp'),
      onboardingStep: partial.onboardingStep ?? 1,
      fullname: partial.fullname ?? `${this.random.pick(FIRST_NAMES)} ${this.random.pick(LAST_NAMES)}`,
      createdAt,
      updatedAt: partial.updatedAt ?? createdAt,
      completedAt: null,
    });
  }

  /**
   * Makes the list endpoints return fields the spec does not show (`transactions.notes`,
   * `onboardings.user.email`), from now on; a real API adding a field behaves so.
   */
  exposeUndeclaredFields(...fields: UndeclaredField[]): void {
    for (const field of fields) this.data.undeclaredFields.add(field);
    this.touch();
  }

  /** Sets an onboarding's work email (listed as `user.email` once exposed) and its updatedAt. Throws on unknown id. */
  setOnboardingEmail(id: string, email: string | null): OnboardingRecord {
    const record = this.findIn<OnboardingRecord>('onboardings', id);
    record.email = email;
    record.updatedAt = this.now();
    return record;
  }

  /** Moves an onboarding one step on (onboardingStep + 1) and sets updatedAt. Throws on unknown id. */
  advanceOnboarding(id: string): OnboardingRecord {
    const record = this.findIn<OnboardingRecord>('onboardings', id);
    record.onboardingStep += 1;
    record.updatedAt = this.now();
    return record;
  }

  /** Completes an onboarding: it leaves the list (spec §4.1) and moves to completedOnboardings. */
  completeOnboarding(id: string): OnboardingRecord {
    const record = this.findIn<OnboardingRecord>('onboardings', id);
    this.data.streams.onboardings.splice(this.data.streams.onboardings.indexOf(record), 1);
    const now = this.now();
    record.completedAt = now;
    record.updatedAt = now;
    this.data.completedOnboardings.push(record);
    return record;
  }

  /** Removes a record from its stream list (for reconciliation tests). Returns false when absent. */
  deleteRecord(stream: StreamName, id: string): boolean {
    const records: TimestampedRecord[] = this.streamRecords(stream);
    const index = records.findIndex((record) => record.id === id);
    if (index < 0) return false;
    this.touch(stream);
    records.splice(index, 1);
    return true;
  }

  /** Sets updatedAt of the given records to one timestamp (to make ties). Throws on unknown ids. */
  setUpdatedAt(stream: StreamName, ids: readonly string[], isoTimestamp: string): void {
    const normalized = new Date(isoTimestamp).toISOString();
    this.streamRecords(stream);
    for (const id of ids) this.findIn(stream, id).updatedAt = normalized;
  }

  /** Closes the employee's open time clock entry, if any (clock-out is not in the API). */
  clockOut(employeeId: string): TimeClockEntryRecord | undefined {
    const entry = this.data.timeClockEntries.find((candidate) => candidate.employeeId === employeeId && candidate.clockOutAt === null);
    if (entry) {
      entry.clockOutAt = this.now();
      entry.updatedAt = entry.clockOutAt;
    }
    return entry;
  }

  /** Posts the double-entry journal of a transaction write (spec §4.7): two entries summing to zero. */
  private postJournal(record: TransactionRecord): void {
    const at = this.now();
    this.data.journalEntries.push(
      { id: this.random.id('jnl'), transactionId: record.id, account: 'cash', amount: record.amount, at },
      { id: this.random.id('jnl'), transactionId: record.id, account: record.type.toLowerCase(), amount: -record.amount, at },
    );
  }

  /**
   * Recomputes the dependent tax liability (spec §4.7): a flat 20% of confirmed net income (income,
   * invoices and refunds minus expenses and deductions), less tax already paid, never below zero. Cents.
   */
  recomputeTaxLiability(): number {
    let taxable = 0;
    let paid = 0;
    for (const record of this.data.streams.transactions) {
      if (record.status !== 'CONFIRMED') continue;
      if (record.type === 'TAX_PAYMENT') paid += -record.amount;
      else if (record.type !== 'TRANSFER') taxable += record.amount;
    }
    this.data.taxLiabilityCents = Math.max(0, Math.round(taxable * 0.2) - paid);
    return this.data.taxLiabilityCents;
  }

  /**
   * One round of random churn: `count` changes, each on a stream drawn by the streams' churn weights
   * (streams/: transactions created, voided, confirmed; deals stage moved, won, lost, reopened,
   * created; onboardings advanced, completed, started; ...). Each sets updatedAt = clock(). Returns
   * what changed.
   */
  churnTick(count = 1): ChurnChange[] {
    const changes: ChurnChange[] = [];
    for (let index = 0; index < count; index += 1) changes.push(this.churnOnce());
    return changes;
  }

  /**
   * `count` changes of one stream by its declaration's churn (`SimulatedStream.churn`), as
   * `churnTick` makes them: each sets updatedAt = clock(). Returns what changed.
   * @throws Error naming the stream when it is not simulated or declares no churn
   */
  churnStream(stream: StreamName, count = 1): ChurnChange[] {
    const declaration = simulatedStream(stream);
    if (!declaration.churn) throw new Error(`stream ${stream}: its declaration has no churn`);
    const changes: ChurnChange[] = [];
    for (let index = 0; index < count; index += 1) changes.push({ stream: declaration.name, ...declaration.churn.change(this, this.random) });
    return changes;
  }

  private churnOnce(): ChurnChange {
    const churning = churningStreams();
    let roll = this.random.next() * churning.reduce((sum, stream) => sum + stream.churn.weight, 0);
    let stream = churning[churning.length - 1] as (typeof churning)[number];
    for (const candidate of churning) {
      if (roll < candidate.churn.weight) {
        stream = candidate;
        break;
      }
      roll -= candidate.churn.weight;
    }
    return { stream: stream.name, ...stream.churn.change(this, this.random) };
  }

  /**
   * The stream's records exactly as its list endpoint serializes them (transactions: list-item fields
   * only), in the default list order: createdAt descending, id descending. With `filters`, only what
   * the endpoint lists for those query parameters (`{ locationId }` of a list that requires it: the
   * ground truth of one location; without it such a list's ground truth is every location's).
   * @throws Error naming the simulated streams when `stream` is not one; HttpError 400 for filters the endpoint refuses
   */
  groundTruth(stream: StreamName, filters?: Readonly<Record<string, string>>): Record<string, unknown>[] {
    const declaration = simulatedStream(stream);
    const records = this.streamRecords(stream) as TimestampedRecord[];
    const keep = filters === undefined ? undefined : declaration.filter?.(new URLSearchParams(filters), this.data);
    const out: Record<string, unknown>[] = [];
    for (let index = records.length - 1; index >= 0; index -= 1) {
      const record = records[index] as TimestampedRecord;
      if (keep === undefined || keep(record)) out.push(declaration.serialize(record, this.data));
    }
    return out;
  }

  /**
   * The query parameters each of the stream's lists needs: `[{}]` for a list without a required
   * parameter, else one per partition value (`[{ locationId: 'loc_...' }, ...]`, spec §4.4).
   * @throws Error naming the simulated streams when `stream` is not one
   */
  partitionQueries(stream: StreamName): Record<string, string>[] {
    const partitions = simulatedStream(stream).partitions;
    return partitions ? partitions.values(this.data).map((value) => ({ [partitions.parameter]: value })) : [{}];
  }

  /** Counts of the company's records. */
  snapshot(): WorldSnapshot {
    return {
      streams: Object.fromEntries(STREAM_NAMES.map((name) => [name, this.data.streams[name].length])) as Record<StreamName, number>,
      completedOnboardings: this.data.completedOnboardings.length,
      payables: this.payables.length,
      emails: this.data.emails.length,
      auditEvents: this.data.auditEvents.length,
      performanceReviews: this.data.performanceReviews.length,
      timeClockEntries: this.data.timeClockEntries.length,
      domains: this.data.domains.length,
      locations: this.data.locations.length,
      creditsCents: this.data.creditsCents,
    };
  }
}

/** Construction options of a World: the seed, company A's stream sizes and the clock (ms epoch). */
export interface WorldOptions {
  seed: number;
  /** Company A's stream sizes; company B gets a tenth of each (at least 5). */
  sizes: StreamSizes;
  /** ms epoch: seed data is spread over the year before it. */
  anchorMs: number;
  clock: () => number;
  /** Stream records created in bursts sharing one createdAt, of this mean size (GenerateOptions.createdInBursts). */
  createdInBursts?: number;
  /** How many extra companies C1..CN to add beyond A and B (default 0), each with `extraCompanySizes`. */
  extraCompanies?: number;
  /** Stream sizes of each extra company (default: company B's, a tenth of A's, at least 5). */
  extraCompanySizes?: StreamSizes;
}

/** Company B's sizes: a tenth of company A's, at least 5 per stream. */
export function companyBSizes(sizes: StreamSizes): StreamSizes {
  return Object.fromEntries(STREAM_NAMES.map((name) => [name, Math.max(5, Math.floor(sizes[name] / 10))])) as StreamSizes;
}

/** Every company of a World by key: always A and B, plus C1..CN with the `extraCompanies` option. */
export type WorldCompanies = Readonly<Record<string, CompanyWorld>> & { readonly A: CompanyWorld; readonly B: CompanyWorld };

/**
 * The whole simulated world. Itself company A (every token but `otherCompany` and the extra
 * companies' tokens); `companies` maps every company key to its CompanyWorld (`companies.A === world`).
 */
export class World extends CompanyWorld {
  readonly companies: WorldCompanies;

  /** @throws Error when extraCompanies is not a non-negative integer */
  constructor(options: WorldOptions) {
    const nowMs = options.clock();
    super(generateCompany({ key: 'A', seed: options.seed, sizes: options.sizes, anchorMs: options.anchorMs, nowMs, createdInBursts: options.createdInBursts }), options.clock, options.seed * 31 + 17);
    const companyB = new CompanyWorld(
      generateCompany({ key: 'B', seed: options.seed, sizes: companyBSizes(options.sizes), anchorMs: options.anchorMs, nowMs, createdInBursts: options.createdInBursts }),
      options.clock,
      options.seed * 31 + 29,
    );
    const extraCount = options.extraCompanies ?? 0;
    if (!Number.isInteger(extraCount) || extraCount < 0) throw new Error(`extraCompanies must be a non-negative integer, got ${extraCount}`);
    const companies: Record<string, CompanyWorld> = { A: this, B: companyB };
    const extraSizes = options.extraCompanySizes ?? companyBSizes(options.sizes);
    for (let k = 1; k <= extraCount; k += 1) {
      const key = extraCompanyKey(k);
      // Churn and created records of company k draw from their own seeded generator (A: +17, B: +29).
      companies[key] = new CompanyWorld(
        generateCompany({ key, seed: options.seed, sizes: extraSizes, anchorMs: options.anchorMs, nowMs, createdInBursts: options.createdInBursts }),
        options.clock,
        options.seed * 31 + 29 + 12 * k,
      );
    }
    this.companies = companies as WorldCompanies;
  }

  /** The CompanyWorld of a company key (`A`, `B`, `C1`..). @throws Error naming the known keys when there is no such company */
  company(key: CompanyKey): CompanyWorld {
    const company = this.companies[key];
    if (!company) throw new Error(`company must be one of ${Object.keys(this.companies).join(', ')}, got "${key}"`);
    return company;
  }
}
