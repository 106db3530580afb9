/**
 * The one offset paginator (spec §1 Pagination): the sync engine and `ApiClient.paginate` (ledger
 * lookups) both page through lists with it, so its loop guards hold everywhere.
 *
 * - Next offset: the page's offset plus `pagination.limit` (the server's page size; 100 when it says
 *   0), while `hasMore` is true. An empty page with `hasMore` is valid and paging goes on.
 * - Repeated ids: each page's items are checked against the ids this pagination already listed; the
 *   step reports how many came again (`repeatedIds`, `repeatedIdList`). Ties in an unstable order
 *   and drift step-backs repeat a few; the engine uses them to find the boundaries to re-read.
 * - Endless-list guards (EndlessListError, docs/sync.md "Paging guards"): the server says `hasMore`
 *   while (a) the next offset would pass `pagination.total` plus one page, or (b) the pages have
 *   repeated more ids than twice the largest total plus one page (a list cycling through the same
 *   records, or a total that keeps dropping and sends paging back). An empty page with `hasMore` at
 *   or past the total stops at once.
 * - Drift (option `stepBackOnShrink`): when `pagination.total` drops between two pages, up to that
 *   many unseen records slid below the offset (records were removed), so the next page is read
 *   that much earlier (docs/sync.md "Offset drift"). Re-read records cost a request, never an event.
 */
import { EndlessListError } from './api-errors.ts';
import type { Pagination } from './schemas.ts';

/** Page size of every list request: the maximum, for the fewest requests (spec §1 Pagination, §8). */
export const LIST_PAGE_LIMIT = 100;

/** One list page (spec §1 Pagination): validated items, `content.pagination`, and the server clock. */
export interface Page<T> {
  items: T[];
  pagination: Pagination;
  serverTime: Date | undefined;
  /** The offset this page was requested at. */
  offset: number;
  /** Items that failed their schema, when the list was asked to collect them (`ListOptions.invalidItems`). */
  rejected?: RejectedItem[];
}

/** A list item that failed its schema: its index in the page, the item as received, and why (names the field and the rule). */
export interface RejectedItem {
  index: number;
  raw: unknown;
  error: string;
}

/** One page and where paging goes next. */
export interface PageStep<T> {
  page: Page<T>;
  /** Offset of the next page (after a step back: earlier than this page's). */
  nextOffset: number;
  /** How far paging stepped back because the total dropped by that much; 0 when it did not. */
  stepBack: number;
  /** Items of this page whose id an earlier page of this pagination already listed. */
  repeatedIds: number;
  /** True on the last page: nothing more is fetched. */
  done: boolean;
}

/** Options of `paginateByOffset`. */
export interface PaginateOptions<T> {
  /** Names the list in the guard's error, e.g. `GET /transactions`. */
  label: string;
  /** Offset of the first page (a resumed run's checkpoint). Default 0. */
  startOffset?: number;
  /** `pagination.total` of the page before `startOffset`, for drift detection across a resume. */
  previousTotal?: number;
  /** Step back when the total drops between pages (module comment). Default false. */
  stepBackOnShrink?: boolean;
  /** An item's id, for the repeated-id count and guard. Default: its `id` property when a string or number. */
  idOf?: (item: T) => string | undefined;
}

function defaultIdOf(item: unknown): string | undefined {
  const id = typeof item === 'object' && item !== null ? (item as { id?: unknown }).id : undefined;
  return typeof id === 'string' || typeof id === 'number' ? String(id) : undefined;
}

/**
 * Pages through a list by offset, yielding each page with the next offset; the next page is fetched
 * only when the consumer asks for it (after it committed this one, for the engine).
 * @param fetchPage fetches (and validates) the page at an offset
 * @throws EndlessListError when the server keeps saying `hasMore` past its total, or repeats ids past
 *   the bound (module comment); what `fetchPage` throws
 */
export async function* paginateByOffset<T>(fetchPage: (offset: number) => Promise<Page<T>>, options: PaginateOptions<T>): AsyncGenerator<PageStep<T>, void, undefined> {
  const idOf = options.idOf ?? defaultIdOf;
  const seen = new Set<string>();
  let offset = options.startOffset ?? 0;
  let previousTotal = options.previousTotal;
  let largestTotal = 0;
  let repeatedTotal = 0;
  for (;;) {
    const page = await fetchPage(offset);
    const { total, limit, hasMore } = page.pagination;
    const pageSize = limit > 0 ? limit : LIST_PAGE_LIMIT;
    largestTotal = Math.max(largestTotal, total);
    const drop = options.stepBackOnShrink && previousTotal !== undefined ? Math.max(0, previousTotal - total) : 0;
    previousTotal = total;
    let repeatedIds = 0;
    for (const item of page.items) {
      const id = idOf(item);
      if (id === undefined) continue;
      if (seen.has(id)) repeatedIds += 1;
      else seen.add(id);
    }
    repeatedTotal += repeatedIds;
    const where = `${options.label}?offset=${offset}`;
    if (drop === 0 && page.items.length === 0 && hasMore && offset >= total) {
      // Following `hasMore` here would page forever: stop with what the server said.
      throw new EndlessListError({ message: `${where}: the server says hasMore with no items at an offset past its total (${total}); stopped paging` });
    }
    const nextOffset = drop > 0 ? Math.max(0, offset - drop) : offset + pageSize;
    const done = drop === 0 && !hasMore;
    if (!done && nextOffset > total + pageSize) {
      throw new EndlessListError({ message: `${where}: the server still says hasMore past its total (${total}) plus one page (${pageSize}); stopped paging` });
    }
    const repeatBound = 2 * largestTotal + pageSize;
    if (!done && repeatedTotal > repeatBound) {
      throw new EndlessListError({
        message: `${where}: the pages repeated ${repeatedTotal} ids already listed, more than twice the total (${largestTotal}) plus one page; stopped paging`,
      });
    }
    yield { page, nextOffset, stepBack: drop, repeatedIds, done };
    if (done) return;
    offset = nextOffset;
  }
}
