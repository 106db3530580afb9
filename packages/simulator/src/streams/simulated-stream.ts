/**
 * What a simulated list endpoint is: one declaration holds everything about it (its path, the
 * `content` key of its items, its scope, sort and search fields, its own query parameters, how an
 * item is serialized, how its seed records are generated, and how churn changes them). The list
 * route, the ground truth (`World.groundTruth`, `/__admin/ground-truth/{stream}`), the sizes, the
 * change counters and churn all iterate the declarations (`streams/index.ts`), so a new list endpoint
 * is one declaration there.
 */
import type { CompanyData } from '../company-data.ts';
import type { ListDefinition } from '../list.ts';
import type { SeededRandom } from '../random.ts';
import type { EmployeeRecord, LegalEntityRecord, LocationRecord, PipelineRecord, TimestampedRecord } from '../records.ts';
import type { RecordTimes } from '../seeding.ts';
import type { CompanyKey } from '../tokens.ts';
import type { CompanyWorld } from '../world.ts';

/** The company as far as it is generated when a stream's seed records are made (generate.ts). */
export interface SeedingCompany {
  key: CompanyKey;
  locations: LocationRecord[];
  legalEntities: LegalEntityRecord[];
  /** The token employees first (admin, hr, employee, readOnly, noScopes), then staff (`tokenRole` null). */
  employees: EmployeeRecord[];
  /** Deal pipelines: made by the deals stream's generator (their stages are its records' stages). */
  pipelines: PipelineRecord[];
  /** The records of the streams declared before this one, by stream name. */
  streams: Readonly<Record<string, readonly TimestampedRecord[]>>;
}

/** What a stream's generator is given. */
export interface StreamSeed {
  /**
   * The company's seeded generator, shared by every stream in declaration order and then by the rest
   * of the company's data: draw from it in a fixed order, so the same seed gives the same world.
   */
  random: SeededRandom;
  /** How many records to make: the stream's size for this company. */
  count: number;
  /**
   * createdAt/updatedAt pairs for `count` records over the year before the anchor (with ties, and in
   * bursts with the `createdInBursts` option); `salt` seeds the bursts apart from other streams'.
   */
  times(salt: number): RecordTimes[];
  company: SeedingCompany;
}

/** One change churn made: which record, and what happened to it (`created`, `voided`, `completed`, ...). */
export interface ChurnOutcome {
  id: string;
  kind: string;
}

/**
 * One list endpoint the simulator serves from its ground truth (spec §1 Pagination). `R` is the
 * internal record, `Name` the stream's name: the key of its records, sizes and change counters, the
 * `{stream}` of the admin surface, and the name bizops-sync gives the stream.
 */
export interface SimulatedStream<R extends TimestampedRecord = TimestampedRecord, Name extends string = string> {
  name: Name;
  /** The list path under /api/public/v1, e.g. `/transactions`. */
  path: string;
  /** The member of `content` holding the items, e.g. `transactions`. */
  itemsKey: string;
  /** The scope the endpoint requires (spec §5). */
  scope: string;
  /** The response's `message`. */
  message: string;
  /** Company A's size when the options name none (company B: a tenth, at least 5). */
  defaultSize: number;
  /**
   * A query parameter the endpoint requires, and the values it takes for a company (spec §4.4:
   * `locationId`, one list per location): each value's list is a partition of the ground truth
   * (`World.groundTruth(name, { [parameter]: value })`). Absent: one list, no required parameter.
   */
  partitions?: { parameter: string; values(data: CompanyData): string[] };
  /** Sort fields besides createdAt, and the fields `search` matches. */
  list: ListDefinition<R>;
  /**
   * The endpoint's own query parameters (filters), read before the standard ones: a record predicate,
   * or undefined when none is given.
   * @throws HttpError 400 naming the parameter when one is invalid or a required one is missing
   */
  filter?(query: URLSearchParams, data: CompanyData): ((record: R) => boolean) | undefined;
  /** One item as the list returns it. */
  serialize(record: R, data: CompanyData): Record<string, unknown>;
  /** The company's seed records (any order: they are sorted by (createdAt, id) afterwards). */
  generate(seed: StreamSeed): R[];
  /**
   * Random churn (`World.churnTick`): `weight` is the share of changes that land on this stream (any
   * positive number: weights are relative), `change` makes one change through the world's methods
   * (which set updatedAt to the clock), drawing its choices from `random` (the company's churn
   * generator). Without it the stream changes only when tests change it.
   */
  churn?: { weight: number; change(company: CompanyWorld, random: SeededRandom): ChurnOutcome };
}
