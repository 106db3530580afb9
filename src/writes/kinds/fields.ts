/**
 * Field rules shared by the write kinds (spec §1 conventions, §8 limits). Every rule carries its own
 * message, so a refused write reads `amount: must be at least 1 (cents)`, never zod's default text.
 */
import { z } from 'zod';
import type { WriteKind } from './types.ts';

/** `YYYY-MM-DD` (spec §1 convention 4: "Dates without time"). */
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
/**
 * An ISO 8601 timestamp with an explicit zone (`Z` or `±hh:mm`): without one, the instant would
 * depend on the server's local time zone (spec §1 convention 4: timestamps are UTC).
 */
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/;

function isRealDate(value: string): boolean {
  const match = DATE.exec(value);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

/** A calendar date `YYYY-MM-DD` that exists (no 2024-02-30). */
export const isoDate = z.string({ error: 'must be a date YYYY-MM-DD' }).refine(isRealDate, { error: 'must be a real date YYYY-MM-DD' });

/** An ISO 8601 timestamp with a zone, e.g. `2025-03-01T09:00:00Z`. */
export const isoTimestamp = z
  .string({ error: 'must be an ISO 8601 timestamp' })
  .refine((value) => TIMESTAMP.test(value) && Number.isFinite(Date.parse(value)), {
    error: 'must be an ISO 8601 timestamp with a zone, e.g. 2025-03-01T09:00:00Z',
  });

/** An ISO 8601 date `YYYY-MM-DD` or a timestamp with a zone (spec §4.7 `date`, `dueDate`: "ISO 8601"). */
export const isoDateOrTimestamp = z
  .string({ error: 'must be an ISO 8601 date or timestamp' })
  .refine((value) => isRealDate(value) || (TIMESTAMP.test(value) && Number.isFinite(Date.parse(value))), {
    error: 'must be an ISO 8601 date YYYY-MM-DD or a timestamp with a zone, e.g. 2025-03-01T09:00:00Z',
  });

/** A path id (spec §4: "Path parameters are required strings"): non-empty, no surrounding spaces. */
export const pathId = z
  .string({ error: 'must be a string id' })
  .min(1, { error: 'must not be empty' })
  .refine((value) => value.trim() === value && value.trim() !== '', { error: 'must not be blank or have surrounding spaces' });

/** Any string (may be empty). */
export const text = z.string({ error: 'must be a string' });
/** A non-empty string. */
export const nonEmptyText = z.string({ error: 'must be a string' }).min(1, { error: 'must not be empty' });

/** An email address (something@domain.tld, no spaces). */
export const emailAddress = z
  .string({ error: 'must be an email address' })
  .regex(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, { error: 'must be an email address' });

/** Up to `max` email addresses (spec §8: cc/bcc and draft to/cc/bcc "up to 20 addresses each"). */
export function addressList(max: number) {
  return z.array(emailAddress, { error: 'must be an array of email addresses' }).max(max, { error: `must hold at most ${max} addresses` });
}

/** An integer number of cents, at least `min` (spec §1 convention 5). */
export function cents(min: number) {
  return z
    .number({ error: 'must be a number of cents' })
    .int({ error: 'must be an integer number of cents' })
    .min(min, { error: `must be at least ${min} (cents)` })
    .max(Number.MAX_SAFE_INTEGER, { error: 'is too large' });
}

/** Identity helper that keeps a kind's literal name and schema types. */
export function defineWriteKind<const Name extends string, Schema extends z.ZodType, R>(kind: WriteKind<Name, Schema, R>): WriteKind<Name, Schema, R> {
  return kind;
}

/** `encodeURIComponent` for a path segment. */
export function segment(id: string): string {
  return encodeURIComponent(id);
}

/** The payload without the named path fields: what goes in the body. */
export function without<T extends Record<string, unknown>, K extends keyof T>(payload: T, ...keys: K[]): Omit<T, K> {
  const copy: Record<string, unknown> = { ...payload };
  for (const key of keys) delete copy[key as string];
  return copy as Omit<T, K>;
}
