/**
 * The one offset paginator (spec §1 Pagination): the sync engine and `ApiClient.paginate` (ledger
 * lookups) both page through lists with it, so its loop guards hold everywhere.
 *
 * - Next offset: the page's offset plus `pagination.limit` (the server's page size; 100 when it says
 *   0), while `hasMore` is true. An empty page with `hasMore` is valid and paging goes on.
 * - Repeated ids: each page's items are checked against the latest `REMEMBERED_IDS` ids this
 *   pagination listed (the oldest forgotten first: memory stays flat however long the list); the
 *   step reports how many came again (`repeatedIds`). Ties in an unstable order and drift
 *   step-backs repeat a few, within a few pages; a list cycling through more records than that is
 *   still stopped by guard (a) once its offsets pass the total.
 * - Endless-list guards (EndlessListError, docs/sync.md "Paging guards"): the server says `hasMore`
 *   while (a) the next offset would pass `pagination.total` plus one page, or (b) the pages have
 *   repeated more ids than twice the largest total plus one page (a list cycling through the same
 *   records, or a total that keeps dropping and sends paging back). An empty page with `hasMore` at
 *   or past the total stops at once.
 * - Drift (option `stepBackOnShrink`, docs/sync.md "Offset drift"): a drop of `pagination.total`
 *   by `d` between two answers means up to `d` records were removed, each of which may have moved
 *   one unread record below a position already read. The paginator keeps the FRONTIER (the first
 *   position never read) and the GAPS (positions that may hold records slid below what was read):
 *   a drop at a page read at the frontier opens the gap of the `d` positions just below it (after
 *   any other page: just below the frontier), and every drop widens the open gaps `d` further
 *   down, since their records may have slid too. Pages at the frontier go on to the end of the list
 *   first; then each gap is read with one page that ENDS at the gap's top, so that records sliding
 *   further while it is asked for stay inside it (a gap wider than a page takes more). A removal at
 *   every request therefore costs one gap page per drop at most (merged where they fall in one
 *   page), never a page that starts again below the last one for ever. A caller may place a gap's
 *   page elsewhere as long as it covers the gap (`placeGap`: the engine centres it on the run of
 *   ties the gap lies in, so that one request reads the gap and the run). Each step says which kind
 *   of page it was (`frontier`: positions read for the first time; `gap`: positions read before,
 *   plus the gap's) and the paging state after it, for a checkpoint (`PagingState`).
 */
import { EndlessListError } from './api-errors.ts';
import { RecentMap } from './recent-map.ts';
import type { Pagination } from './schemas.ts';

/** Page size of every list request: the maximum, for the fewest requests (spec §1 Pagination, §8). */
export const LIST_PAGE_LIMIT = 100;

/** Ids the paginator remembers for its repeated-id count and guard: the latest 20,000 (200 pages). */
export const REMEMBERED_IDS = 20_000;

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

/** Positions `from..to` (both inclusive) of the list being paged. */
export interface PositionRange {
  from: number;
  to: number;
}

/**
 * Where a drift-aware pagination stands (module comment), saved with a checkpoint to resume it:
 * the first position never read, the gaps that may hold records slid below positions read, and
 * whether the frontier reached the end of the list.
 */
export interface PagingState {
  frontier: number;
  gaps: PositionRange[];
  ended: boolean;
}

/** One page and where paging goes next. */
export interface PageStep<T> {
  page: Page<T>;
  /** Offset of the next page: the frontier, or a gap to read. */
  nextOffset: number;
  /** By how much `pagination.total` dropped since the previous answer (records removed); 0 when it did not. */
  stepBack: number;
  /** Items of this page whose id an earlier page of this pagination already listed (among the latest `REMEMBERED_IDS`). */
  repeatedIds: number;
  /** True on the last page: nothing more is fetched. */
  done: boolean;
  /**
   * `frontier`: every position of this page was read for the first time. `gap`: the page re-read
   * positions to find records that slid below them (`gap` names the positions that may hold such
   * records; the others were read before).
   */
  kind: 'frontier' | 'gap';
  /** For a `gap` page: its positions that may hold records not read yet. */
  gap?: PositionRange;
  /** The paging state after this page (for the checkpoint). */
  state: PagingState;
}

/** Options of `paginateByOffset`. */
export interface PaginateOptions<T> {
  /** Names the list in the guard's error, e.g. `GET /transactions`. */
  label: string;
  /** Offset of the first page (a resumed run's checkpoint, when it has no `resume` state). Default 0. */
  startOffset?: number;
  /** The paging state of a resumed run (`PageStep.state`); wins over `startOffset`. */
  resume?: PagingState;
  /** `pagination.total` of the answer before the first one, for drift detection across a resume. */
  previousTotal?: number;
  /** Track drift (module comment). Default false: only `limit` steps forward. */
  stepBackOnShrink?: boolean;
  /** An item's id, for the repeated-id count and guard. Default: its `id` property when a string or number. */
  idOf?: (item: T) => string | undefined;
  /**
   * Where to read a drift gap, asked when its page is about to be fetched (after the consumer
   * committed the page before it, unless that step was read ahead): an offset whose page covers
   * the gap (e.g. one that also re-reads the run of ties the gap lies in), or undefined for the
   * default (the page ending at the gap's top). An offset whose page would not cover the whole gap
   * is ignored.
   */
  placeGap?: (gap: PositionRange, pageSize: number) => number | undefined;
}

function defaultIdOf(item: unknown): string | undefined {
  const id = typeof item === 'object' && item !== null ? (item as { id?: unknown }).id : undefined;
  return typeof id === 'string' || typeof id === 'number' ? String(id) : undefined;
}

/** `ranges` sorted, merged where they touch or overlap, clipped to `[0, end)`, empty ones dropped. */
function normalized(ranges: readonly PositionRange[], end: number): PositionRange[] {
  const sorted = ranges
    .map((range) => ({ from: Math.max(0, range.from), to: Math.min(end - 1, range.to) }))
    .filter((range) => range.from <= range.to)
    .sort((left, right) => left.from - right.from);
  const out: PositionRange[] = [];
  for (const range of sorted) {
    const last = out.at(-1);
    if (last && range.from <= last.to + 1) last.to = Math.max(last.to, range.to);
    else out.push({ ...range });
  }
  return out;
}

/** `ranges` less the positions `covered` read. */
function without(ranges: readonly PositionRange[], covered: PositionRange): PositionRange[] {
  const out: PositionRange[] = [];
  for (const range of ranges) {
    if (covered.to < range.from || covered.from > range.to) {
      out.push(range);
      continue;
    }
    if (range.from < covered.from) out.push({ from: range.from, to: covered.from - 1 });
    if (range.to > covered.to) out.push({ from: covered.to + 1, to: range.to });
  }
  return out;
}

/** The page that reads `gap`: ending at its top when it fits in one (room below for records still sliding), else from its bottom. */
function gapOffset(gap: PositionRange, pageSize: number): number {
  return gap.to - gap.from + 1 <= pageSize ? Math.max(0, gap.to - pageSize + 1) : gap.from;
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
  // The latest ids listed, oldest dropped first: memory, and the cost per id, stay flat however long the list is.
  const seen = new RecentMap<true>(REMEMBERED_IDS);
  let frontier = options.resume?.frontier ?? options.startOffset ?? 0;
  let gaps: PositionRange[] = (options.resume?.gaps ?? []).map((gap) => ({ ...gap }));
  let ended = options.resume?.ended ?? false;
  let previousTotal = options.previousTotal;
  let largestTotal = 0;
  let repeatedTotal = 0;
  let pageSize = LIST_PAGE_LIMIT;
  // What to read next: the lowest gap once the frontier reached the end, else the frontier.
  const next = (): { offset: number; kind: 'frontier' | 'gap'; gap?: PositionRange } | undefined => {
    if (ended && gaps.length > 0) return { offset: gapOffset(gaps[0]!, pageSize), kind: 'gap', gap: gaps[0]! };
    if (!ended) return { offset: frontier, kind: 'frontier' };
    return undefined;
  };
  let target = next() ?? { offset: frontier, kind: 'frontier' as const };
  for (;;) {
    if (target.kind === 'gap' && target.gap && options.placeGap) {
      const placed = options.placeGap(target.gap, pageSize);
      if (placed !== undefined && Number.isInteger(placed) && placed >= 0 && placed <= target.gap.from && placed + pageSize - 1 >= target.gap.to) target = { ...target, offset: placed };
    }
    const page = await fetchPage(target.offset);
    const { total, limit, hasMore } = page.pagination;
    pageSize = limit > 0 ? limit : LIST_PAGE_LIMIT;
    largestTotal = Math.max(largestTotal, total);
    const drop = options.stepBackOnShrink && previousTotal !== undefined ? Math.max(0, previousTotal - total) : 0;
    previousTotal = total;
    let repeatedIds = 0;
    for (const item of page.items) {
      const id = idOf(item);
      if (id === undefined) continue;
      if (!seen.set(id, true)) repeatedIds += 1;
    }
    repeatedTotal += repeatedIds;
    const where = `${options.label}?offset=${target.offset}`;
    const offset = target.offset;
    if (target.kind === 'frontier' && drop === 0 && page.items.length === 0 && hasMore && offset >= total) {
      // Following `hasMore` here would page forever: stop with what the server said.
      throw new EndlessListError({ message: `${where}: the server says hasMore with no items at an offset past its total (${total}); stopped paging` });
    }
    // Where this page's positions may have been before: a gap read widens by the drop too.
    const gapRead = target.kind === 'gap' && target.gap ? { from: Math.max(0, target.gap.from - drop), to: target.gap.to } : undefined;
    if (options.stepBackOnShrink) {
      // Records removed since the previous answer may have moved unread records below what was read.
      gaps = gaps.map((gap) => ({ from: gap.from - drop, to: gap.to }));
      if (target.kind === 'frontier') {
        if (drop > 0) gaps.push({ from: offset - drop, to: offset - 1 });
      } else if (drop > 0 && !ended) {
        gaps.push({ from: frontier - drop, to: frontier - 1 });
      }
    }
    if (target.kind === 'frontier') {
      // The server's page size, as it says (`pagination.limit`): a short or empty page with hasMore
      // is valid, and the next one starts a page further.
      frontier = offset + pageSize;
      if (!hasMore) ended = true;
    }
    // Positions that exist in this answer: up to the total, or where a list that says it has no more ends.
    const listEnd = hasMore ? total : Math.min(total, offset + page.items.length);
    gaps = normalized(without(gaps, { from: offset, to: offset + page.items.length - 1 }), listEnd);
    const following = next();
    const done = following === undefined;
    const nextOffset = following?.offset ?? offset + pageSize;
    if (!done && following?.kind === 'frontier' && nextOffset > total + pageSize) {
      throw new EndlessListError({ message: `${where}: the server still says hasMore past its total (${total}) plus one page (${pageSize}); stopped paging` });
    }
    const repeatBound = 2 * largestTotal + pageSize;
    if (!done && repeatedTotal > repeatBound) {
      throw new EndlessListError({
        message: `${where}: the pages repeated ${repeatedTotal} ids already listed, more than twice the total (${largestTotal}) plus one page; stopped paging`,
      });
    }
    yield {
      page,
      nextOffset,
      stepBack: drop,
      repeatedIds,
      done,
      kind: target.kind,
      ...(gapRead ? { gap: gapRead } : {}),
      state: { frontier, gaps: gaps.map((gap) => ({ ...gap })), ended },
    };
    if (done) return;
    target = following;
  }
}
