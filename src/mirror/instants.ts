/**
 * Instants, not text (docs/sync.md "Instants, not text"): the API writes its times as ISO 8601 in
 * UTC (spec §1 convention 4), but as `Z` or `+00:00`, with or without a fraction
 * (`2025-11-01T07:41:35.578Z`, `2025-11-01T07:41:35.578+00:00`, `2025-11-01T07:41:35Z`), and such
 * texts do not sort as their instants do ('+' sorts before 'Z', 'Z' after '.'). So every comparison
 * of a time the API wrote is made between instants (milliseconds since the epoch), here, never
 * between texts. Times this worker writes itself (`toISOString`: UTC, milliseconds, `Z`) are one
 * form, whose text order is their time order.
 */

/** An ISO 8601 date, or date and time with an optional zone (`Z`, `+00:00`, `+0000`); `T` or a space between. */
const ISO_TIME = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)(Z|[+-]\d{2}:?\d{2})?)?$/i;

/**
 * The instant an ISO 8601 time names, milliseconds since the epoch (a fraction below the
 * millisecond is cut); a time without a zone is read as UTC (the API's zone), a date alone as its
 * midnight in UTC.
 * @returns NaN when `text` is not an ISO 8601 time (or not a string)
 */
export function instantMs(text: unknown): number {
  if (typeof text !== 'string') return Number.NaN;
  const match = ISO_TIME.exec(text);
  if (!match) return Number.NaN;
  // Date.parse reads a date-time without a zone as local time: the API's times are UTC.
  return Date.parse(match[2] !== undefined && match[3] === undefined ? `${text}Z` : text);
}

/** True when both are ISO 8601 times with a time of day naming the same millisecond (`...578Z` and `...578+00:00`). */
export function sameInstant(left: string, right: string): boolean {
  if (left.length < 16 || right.length < 16) return false;
  const a = instantMs(left);
  return Number.isFinite(a) && a === instantMs(right);
}
