/**
 * The one offset paginator (spec §1 Pagination): the sync engine and `ApiClient.paginate` (ledger
 * lookups) both page through lists with it, so its loop guards hold everywhere.
 *
 * - Next offset: the page's offset plus `pagination.limit` (the server's page size; 100 when it says
 *   0), while `hasMore` is true. An empty page with `hasMore` is valid and paging goes on.
 * - Guard: an empty page with `hasMore` at an offset at or past `pagination.total` would page
 *   forever; it stops with an InvalidResponseError instead.
 * - Drift (option `stepBackOnShrink`): when `pagination.total` drops between two pages, up to that
 *   many unseen records slid below the offset (records were removed), so the next page is read
 *   that much earlier (docs/sync.md "Offset drift"). Re-read records cost a request, never an event.
 */
import { InvalidResponseError } from './errors.ts';
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
  /** True on the last page: nothing more is fetched. */
  done: boolean;
}

/** Options of `paginateByOffset`. */
export interface PaginateOptions {
  /** Names the list in the guard's error, e.g. `GET /transactions`. */
  label: string;
  /** Offset of the first page (a resumed run's checkpoint). Default 0. */
  startOffset?: number;
  /** `pagination.total` of the page before `startOffset`, for drift detection across a resume. */
  previousTotal?: number;
  /** Step back when the total drops between pages (module comment). Default false. */
  stepBackOnShrink?: boolean;
}

/**
 * Pages through a list by offset, yielding each page with the next offset; the next page is fetched
 * only when the consumer asks for it (after it committed this one, for the engine).
 * @param fetchPage fetches (and validates) the page at an offset
 * @throws InvalidResponseError when the server says `hasMore` with no items past its total; what `fetchPage` throws
 */
export async function* paginateByOffset<T>(fetchPage: (offset: number) => Promise<Page<T>>, options: PaginateOptions): AsyncGenerator<PageStep<T>, void, undefined> {
  let offset = options.startOffset ?? 0;
  let previousTotal = options.previousTotal;
  for (;;) {
    const page = await fetchPage(offset);
    const { total, limit, hasMore } = page.pagination;
    const drop = options.stepBackOnShrink && previousTotal !== undefined ? Math.max(0, previousTotal - total) : 0;
    previousTotal = total;
    if (drop === 0 && page.items.length === 0 && hasMore && offset >= total) {
      // Following `hasMore` here would page forever: stop with what the server said.
      throw new InvalidResponseError({ message: `${options.label}?offset=${offset}: the server says hasMore with no items at an offset past its total (${total})` });
    }
    const nextOffset = drop > 0 ? Math.max(0, offset - drop) : offset + (limit > 0 ? limit : LIST_PAGE_LIMIT);
    const done = drop === 0 && !hasMore;
    yield { page, nextOffset, stepBack: drop, done };
    if (done) return;
    offset = nextOffset;
  }
}
