/**
 * Range backfills (docs/sync.md "Range backfill"): a complete scan of the records created in a
 * range, `backfill --stream NAME --created-after T --created-before T`, with the list's
 * `createdAfter`/`createdBefore` filters (spec §1 Pagination). What the engine asks of a range: is
 * it valid for the stream, does a checkpoint belong to it, and which filters a page sends. Misses
 * inside a range: src/mirror/range-misses.ts.
 */
import type { CreatedRange } from '../mirror/range-misses.ts';
import type { RunCheckpoint } from '../mirror/mirror-store.ts';
import type { StreamDefinition } from '../streams/define-stream.ts';

export type { CreatedRange } from '../mirror/range-misses.ts';

/** A range that cannot run: a stream whose list does not accept the filters, a bound that is not a time, an empty range. */
export class CreatedRangeError extends Error {
  override name = 'CreatedRangeError';
}

/**
 * The range with its bounds as ISO 8601 UTC with milliseconds (`2026-03-01T00:00:00.000Z`), checked
 * for `stream`.
 * @param range bounds as the operator wrote them (any form `Date.parse` reads: `2026-03-01`, `2026-03-01T12:00:00+02:00`)
 * @throws CreatedRangeError naming the stream when its list does not accept `createdAfter`/`createdBefore`;
 *   naming the option when a bound is not a time, or when `after` is not before `before`; when neither bound is given
 */
export function checkCreatedRange(stream: Pick<StreamDefinition, 'name' | 'request'>, range: { after?: string; before?: string }): CreatedRange {
  if (!stream.request.acceptsCreatedRange) {
    throw new CreatedRangeError(`--created-after/--created-before: the ${stream.name} stream's list (GET ${stream.request.path}) does not accept createdAfter/createdBefore; backfill it whole`);
  }
  const bound = (option: string, value: string | undefined): string | undefined => {
    if (value === undefined) return undefined;
    const ms = Date.parse(value);
    if (Number.isNaN(ms)) throw new CreatedRangeError(`${option}: must be an ISO 8601 time (e.g. 2026-03-01 or 2026-03-01T00:00:00Z), got "${value}"`);
    return new Date(ms).toISOString();
  };
  const after = bound('--created-after', range.after);
  const before = bound('--created-before', range.before);
  if (after === undefined && before === undefined) throw new CreatedRangeError('--created-after/--created-before: give at least one bound');
  if (after !== undefined && before !== undefined && Date.parse(after) >= Date.parse(before)) throw new CreatedRangeError(`--created-after (${after}) must be earlier than --created-before (${before})`);
  return { ...(after !== undefined ? { after } : {}), ...(before !== undefined ? { before } : {}) };
}

/** True when two ranges are the same (both absent counts as the same: a whole-stream run). */
export function sameCreatedRange(left: CreatedRange | undefined, right: CreatedRange | undefined): boolean {
  return left?.after === right?.after && left?.before === right?.before;
}

/**
 * The creation-time filters of a page of `checkpoint`'s run: the range's `createdAfter`, and as
 * `createdBefore` the earlier of the range's end and the frozen set's bound (the server time of the
 * first page, set after it: docs/sync.md "Frozen set").
 */
export function createdFilters(checkpoint: Pick<RunCheckpoint, 'createdBefore' | 'createdRange'>): { createdAfter?: string; createdBefore?: string } {
  const range = checkpoint.createdRange;
  const frozen = checkpoint.createdBefore;
  const before = range?.before === undefined ? frozen : frozen === undefined || Date.parse(range.before) < Date.parse(frozen) ? range.before : frozen;
  return { ...(range?.after !== undefined ? { createdAfter: range.after } : {}), ...(before !== undefined ? { createdBefore: before } : {}) };
}
