/**
 * The list conventions of spec §1 "Pagination": limit/offset, sortBy/sortOrder, search and the
 * created/updated timestamp filters, answered atomically from the current world.
 *
 * Sorting is stable: ties on the sort field are broken by `id` in the same direction as `sortOrder`,
 * so `createdAt desc` orders by (createdAt desc, id desc). Timestamp filters are strict
 * (createdAfter: createdAt > t; createdBefore: createdAt < t; updatedAfter: updatedAt > t).
 *
 * Performance: stream arrays are kept sorted by (createdAt, id), so `sortBy=createdAt` never sorts;
 * other sort fields use a sorted view cached until the world's version moves. A range filter on the
 * sort field (created filters under createdAt, updatedAfter under updatedAt) is a binary search; with
 * no other filter the page is a slice, otherwise one O(N) pass counts `total` and picks the page.
 */
import type { ListFault } from './faults.ts';
import { SeededRandom } from './random.ts';
import { badRequest } from './http-error.ts';
import type { TimestampedRecord } from './records.ts';

/** The standard list parameters of a request (spec §1 Pagination), parsed and checked by `parseListQuery`. */
export interface ListQuery {
  limit: number;
  offset: number;
  sortBy: string;
  sortOrder: 'asc' | 'desc';
  /** Lowercased search text, or undefined. */
  search: string | undefined;
  /** Normalized ISO timestamps (`toISOString`), or undefined. */
  createdAfter: string | undefined;
  createdBefore: string | undefined;
  updatedAfter: string | undefined;
}

/** What an endpoint declares about its list. */
export interface ListDefinition<R extends TimestampedRecord> {
  /** Allowed sortBy values (besides `createdAt`, always allowed) and how to read each from a record. */
  sortFields: Record<string, (record: R) => string | number | null>;
  /** The primary fields `search` matches (case-insensitive substring). */
  searchFields: (record: R) => readonly (string | null)[];
}

/** One page of a list: the items and `content.pagination` (spec §1 Pagination). */
export interface ListPage<R> {
  items: R[];
  pagination: { total: number; limit: number; offset: number; hasMore: boolean };
}

const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * Parses an ISO 8601 timestamp parameter to the normalized `toISOString` form.
 * @throws HttpError 400 naming the parameter when it is not an ISO 8601 timestamp
 */
export function parseTimestamp(name: string, value: string): string {
  const milliseconds = ISO_TIMESTAMP.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(milliseconds)) throw badRequest(`${name} must be an ISO 8601 timestamp, got "${value}"`);
  return new Date(milliseconds).toISOString();
}

function parseInteger(name: string, value: string | null, fallback: number, min: number, max: number): number {
  if (value === null) return fallback;
  if (!/^-?\d+$/.test(value.trim())) throw badRequest(`${name} must be an integer from ${min} to ${max === Infinity ? 'up' : max}, got "${value}"`);
  const parsed = Number(value);
  if (parsed < min || parsed > max) {
    throw badRequest(max === Infinity ? `${name} must be at least ${min}, got ${parsed}` : `${name} must be between ${min} and ${max}, got ${parsed}`);
  }
  return parsed;
}

/**
 * Reads the standard pagination parameters (spec §1).
 * @param allowedSortFields the endpoint's sortBy values besides createdAt
 * @throws HttpError 400 naming the parameter: limit outside 1..100, negative offset, unknown sortBy,
 *   sortOrder other than asc/desc, invalid timestamps
 */
export function parseListQuery(params: URLSearchParams, allowedSortFields: readonly string[]): ListQuery {
  const sortBy = params.get('sortBy') ?? 'createdAt';
  const allowed = ['createdAt', ...allowedSortFields.filter((field) => field !== 'createdAt')];
  if (!allowed.includes(sortBy)) throw badRequest(`sortBy must be one of ${allowed.join(', ')}, got "${sortBy}"`);
  const sortOrder = params.get('sortOrder') ?? 'desc';
  if (sortOrder !== 'asc' && sortOrder !== 'desc') throw badRequest(`sortOrder must be asc or desc, got "${sortOrder}"`);
  const search = params.get('search');
  const timestamp = (name: string) => {
    const value = params.get(name);
    return value === null ? undefined : parseTimestamp(name, value);
  };
  return {
    limit: parseInteger('limit', params.get('limit'), 20, 1, 100),
    offset: parseInteger('offset', params.get('offset'), 0, 0, Infinity),
    sortBy,
    sortOrder,
    search: search === null || search.trim() === '' ? undefined : search.trim().toLowerCase(),
    createdAfter: timestamp('createdAfter'),
    createdBefore: timestamp('createdBefore'),
    updatedAfter: timestamp('updatedAfter'),
  };
}

function compareValues(left: string | number | null, right: string | number | null): number {
  if (left === right) return 0;
  if (left === null) return -1;
  if (right === null) return 1;
  return left < right ? -1 : 1;
}

interface SortedView {
  version: number;
  length: number;
  records: TimestampedRecord[];
}

/** Per stream array and sortBy: the records sorted by (field, id) ascending, rebuilt when the version moves. */
const sortedViews = new WeakMap<readonly TimestampedRecord[], Map<string, SortedView>>();

function sortedView<R extends TimestampedRecord>(records: readonly R[], sortBy: string, read: (record: R) => string | number | null, version: number): R[] {
  let views = sortedViews.get(records);
  if (!views) {
    views = new Map();
    sortedViews.set(records, views);
  }
  const cached = views.get(sortBy);
  if (cached && cached.version === version && cached.length === records.length) return cached.records as R[];
  const sorted = [...records].sort((left, right) => compareValues(read(left), read(right)) || (left.id < right.id ? -1 : left.id > right.id ? 1 : 0));
  views.set(sortBy, { version, length: records.length, records: sorted });
  return sorted;
}

interface UpdatedTimes {
  version: number;
  length: number;
  times: Float64Array;
}

/** Per stream array: updatedAt as ms, aligned with the array positions, rebuilt when the version moves. */
const updatedTimesCache = new WeakMap<readonly TimestampedRecord[], UpdatedTimes>();

/**
 * updatedAt in ms for each position of `records`. Scanning these numbers is far faster than reading
 * 100k record objects (memory-bound), so an `updatedAfter` filter over a createdAt-sorted page costs
 * well under a millisecond once built (building costs ~20 ms per 100k after each change of the stream).
 */
function updatedTimes(records: readonly TimestampedRecord[], version: number): Float64Array {
  const cached = updatedTimesCache.get(records);
  if (cached && cached.version === version && cached.length === records.length) return cached.times;
  const times = new Float64Array(records.length);
  for (let index = 0; index < records.length; index += 1) times[index] = Date.parse((records[index] as TimestampedRecord).updatedAt);
  updatedTimesCache.set(records, { version, length: records.length, times });
  return times;
}

/** First index in [0, length) whose key is > value (strict) or >= value, by binary search over an ascending view. */
function boundary<R>(view: readonly R[], read: (record: R) => string | number | null, value: string, strict: boolean): number {
  let low = 0;
  let high = view.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    const key = read(view[middle] as R);
    const before = key === null || (strict ? key <= value : key < value);
    if (before) low = middle + 1;
    else high = middle;
  }
  return low;
}

/**
 * Computes one page of `records` (sorted by createdAt, id) under `query`, with `filter` for the
 * endpoint's own parameters (e.g. type, status). Synchronous, so the page reflects one instant.
 *
 * @param version the world's change counter: sorted views for other sort fields are cached until it
 *   moves (World methods bump it; code that edits records directly calls `world.touch()`).
 * @param fault a list fault to apply (faults.ts: truncate-list, unstable-order, endless-list)
 */
export function listPage<R extends TimestampedRecord>(
  records: readonly R[],
  query: ListQuery,
  definition: ListDefinition<R>,
  filter: ((record: R) => boolean) | undefined,
  version: number,
  fault?: ListFault,
): ListPage<R> {
  if (fault !== undefined) return faultyListPage(records, query, definition, filter, version, fault);
  const byCreated = query.sortBy === 'createdAt';
  const read = byCreated ? (record: R) => record.createdAt : definition.sortFields[query.sortBy];
  if (!read) throw badRequest(`sortBy ${query.sortBy} is not supported here`);
  const view: readonly R[] = byCreated ? records : sortedView(records, query.sortBy, read, version);

  // Range filters on the sort field become binary searches; the others are checked per record.
  let start = 0;
  let end = view.length;
  let createdAfter = query.createdAfter;
  let createdBefore = query.createdBefore;
  let updatedAfter = query.updatedAfter;
  if (byCreated) {
    if (createdAfter !== undefined) start = boundary(view, read, createdAfter, true);
    if (createdBefore !== undefined) end = boundary(view, read, createdBefore, false);
    createdAfter = undefined;
    createdBefore = undefined;
  } else if (query.sortBy === 'updatedAt' && updatedAfter !== undefined) {
    start = boundary(view, read, updatedAfter, true);
    updatedAfter = undefined;
  }
  const { search } = query;
  // Under createdAt order the view is the stream array itself, so updatedAfter reads the aligned times.
  let updatedAfterMs: number | undefined;
  let times: Float64Array | undefined;
  if (byCreated && updatedAfter !== undefined) {
    updatedAfterMs = Date.parse(updatedAfter);
    times = updatedTimes(records, version);
    updatedAfter = undefined;
  }
  const checks: ((record: R) => boolean)[] = [];
  if (createdAfter !== undefined) {
    const value = createdAfter;
    checks.push((record) => record.createdAt > value);
  }
  if (createdBefore !== undefined) {
    const value = createdBefore;
    checks.push((record) => record.createdAt < value);
  }
  if (updatedAfter !== undefined) {
    const value = updatedAfter;
    checks.push((record) => record.updatedAt > value);
  }
  if (filter) checks.push(filter);
  if (search !== undefined) {
    checks.push((record) => definition.searchFields(record).some((field) => field !== null && field.toLowerCase().includes(search)));
  }

  const items: R[] = [];
  let total = 0;
  const ascending = query.sortOrder === 'asc';
  if (checks.length === 0 && times === undefined) {
    total = Math.max(0, end - start);
    const count = Math.max(0, Math.min(query.limit, total - query.offset));
    for (let position = 0; position < count; position += 1) {
      const index = ascending ? start + query.offset + position : end - 1 - query.offset - position;
      items.push(view[index] as R);
    }
  } else {
    const pageEnd = query.offset + query.limit;
    const matches =
      checks.length === 0 ? undefined : checks.length === 1 ? (checks[0] as (record: R) => boolean) : (record: R) => checks.every((check) => check(record));
    for (let step = 0, length = end - start; step < length; step += 1) {
      const index = ascending ? start + step : end - 1 - step;
      if (times !== undefined && !((times[index] as number) > (updatedAfterMs as number))) continue;
      const record = view[index] as R;
      if (matches !== undefined && !matches(record)) continue;
      if (total >= query.offset && total < pageEnd) items.push(record);
      total += 1;
    }
  }
  return {
    items,
    pagination: { total, limit: query.limit, offset: query.offset, hasMore: query.offset + items.length < total },
  };
}

/** An ISO 8601 instant in UTC as the simulator writes it (`toISOString`). */
const UTC_INSTANT = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d{3})Z$/;

/**
 * A copy of `record` whose top-level instants (`toISOString` text) are written in `style`, naming
 * the same instant: `+00:00` instead of `Z`, or without a `.000` fraction (`timestamp-style` fault).
 */
function restyleInstants<R extends TimestampedRecord>(record: R, style: '+00:00' | 'no-fraction'): R {
  const copy = { ...record } as Record<string, unknown>;
  for (const [field, value] of Object.entries(copy)) {
    const match = typeof value === 'string' ? UTC_INSTANT.exec(value) : null;
    if (!match) continue;
    copy[field] = style === '+00:00' ? `${match[1]}${match[2]}+00:00` : match[2] === '.000' ? `${match[1]}Z` : value;
  }
  return copy as R;
}

/** The generator of each seeded `unstable-order` fault (keyed by the injected fault object). */
const tieGenerators = new WeakMap<object, SeededRandom>();

/** Fisher-Yates shuffle of `items[from, to)` in place with `random` (in [0, 1)): a new order on every call. */
function shuffleRange<T>(items: T[], from: number, to: number, random: () => number): void {
  for (let index = to - 1; index > from; index -= 1) {
    const other = from + Math.floor(random() * (index - from + 1));
    const swap = items[index] as T;
    items[index] = items[other] as T;
    items[other] = swap;
  }
}

/**
 * One page under a list fault (faults.ts `ListFault`): reads every matching record in order (an O(N)
 * pass; faults are for tests), then misbehaves as the fault says.
 */
function faultyListPage<R extends TimestampedRecord>(
  records: readonly R[],
  query: ListQuery,
  definition: ListDefinition<R>,
  filter: ((record: R) => boolean) | undefined,
  version: number,
  fault: ListFault,
): ListPage<R> {
  const { offset, limit } = query;
  if (fault.kind === 'backwards-updated-at') {
    // The record as served: its stamp replaced before the filters look at it (a copy of the array;
    // the cache of sorted views is keyed by the array, so this one is sorted afresh).
    const served = records.map((record) => (record.id === fault.id ? { ...record, updatedAt: fault.updatedAt } : record));
    return listPage(served, query, definition, filter, version);
  }
  let all = listPage(records, { ...query, offset: 0, limit: Number.MAX_SAFE_INTEGER }, definition, filter, version).items;
  if (fault.kind === 'duplicate-id' && all.length > 0) {
    const from = Math.min(fault.position ?? 0, all.length - 1);
    const at = Math.min(fault.at ?? from + 1, all.length);
    const copy = { ...(all[from] as R), ...(fault.patch ?? { description: 'a second copy' }) } as R;
    all = [...all.slice(0, at), copy, ...all.slice(at)];
  }
  if (fault.kind === 'timestamp-style') {
    const page = listPage(records, query, definition, filter, version);
    return { ...page, items: page.items.map((record) => restyleInstants(record, fault.style)) };
  }
  if (fault.kind === 'id-less-item' && all.length > 0) {
    const at = Math.min(fault.position ?? 0, all.length - 1);
    const { id: _id, ...rest } = all[at] as R;
    const item = (fault.nullId ? { ...rest, id: null } : rest) as unknown as R;
    all = [...all.slice(0, at), item, ...all.slice(fault.instead ? at + 1 : at)];
  }
  if (fault.kind === 'duplicate-id' || fault.kind === 'id-less-item') {
    return { items: all.slice(offset, offset + limit), pagination: { total: all.length, limit, offset, hasMore: offset + limit < all.length } };
  }
  const total = all.length;
  const pagination = (items: R[], hasMore: boolean): ListPage<R> => ({ items, pagination: { total, limit, offset, hasMore } });
  if (fault.kind === 'capped-list') {
    const end = Math.min(total, fault.cap);
    const items = all.slice(Math.min(offset, end), Math.min(offset + limit, end));
    return { items, pagination: { total: fault.reportedTotal ?? end, limit, offset, hasMore: offset + items.length < end } };
  }
  if (fault.kind === 'truncate-list') {
    const end = Math.min(total, offset + limit, Math.max(offset, fault.atOffset));
    const items = all.slice(offset, end);
    const cut = end >= fault.atOffset;
    const hasMore = !cut && offset + items.length < total;
    return { items, pagination: { total: cut && fault.cutTotal ? Math.min(total, fault.atOffset) : total, limit, offset, hasMore } };
  }
  if (fault.kind === 'endless-list') {
    if (offset < total || total === 0) return pagination(all.slice(offset, offset + limit), true);
    if (fault.mode === 'repeat') return pagination(all.slice(Math.max(0, total - limit)), true);
    return pagination(Array.from({ length: limit }, (_, position) => all[(offset + position) % total] as R), true);
  }
  // unstable-order: reorder every run of records tying on the sort field that overlaps this page.
  const read = query.sortBy === 'createdAt' ? (record: R) => record.createdAt : (definition.sortFields[query.sortBy] as (record: R) => string | number | null);
  const end = Math.min(total, offset + limit);
  if (offset >= end) return pagination([], false);
  let from = offset;
  while (from > 0 && read(all[from - 1] as R) === read(all[offset] as R)) from -= 1;
  let to = end;
  while (to < total && read(all[to] as R) === read(all[end - 1] as R)) to += 1;
  const window = all.slice(from, to);
  let random = Math.random;
  if (fault.seed !== undefined) {
    let generator = tieGenerators.get(fault);
    if (generator === undefined) tieGenerators.set(fault, (generator = new SeededRandom(fault.seed)));
    random = () => (generator as SeededRandom).next();
  }
  let runStart = 0;
  for (let index = 1; index <= window.length; index += 1) {
    if (index === window.length || read(window[index] as R) !== read(window[runStart] as R)) {
      shuffleRange(window, runStart, index, random);
      runStart = index;
    }
  }
  return pagination(window.slice(offset - from, end - from), end < total);
}
