/**
 * Request body validation with zod: an invalid body is answered 400 with a message naming the field
 * and the rule (e.g. `amount: must be at least 1`). The spec leaves these statuses "not shown" (§7).
 */
import { z } from 'zod';
import { badRequest } from '../http-error.ts';

/**
 * Parses `body` with `schema`.
 * @throws HttpError 400 `{ message }` listing each invalid field as `field: rule`
 */
export function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const result = schema.safeParse(body ?? {});
  if (result.success) return result.data;
  const details = result.error.issues.map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : 'body'}: ${issue.message}`);
  throw badRequest(`Invalid request body: ${details.join('; ')}`);
}

const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

/** An ISO 8601 date or timestamp string, normalized to `toISOString` form. */
export const isoTimestamp = z
  .string()
  .refine((value) => ISO_TIMESTAMP.test(value) && !Number.isNaN(Date.parse(value)), { message: 'must be an ISO 8601 timestamp' })
  .transform((value) => new Date(value).toISOString());

/** An email address (loose check: something@something.tld). */
export const emailAddress = z.string().regex(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, { message: 'must be an email address' });

/** Reads an optional enum query parameter. @throws HttpError 400 naming the parameter and the allowed values */
export function enumParameter(query: URLSearchParams, name: string, allowed: readonly string[]): string | undefined {
  const value = query.get(name);
  if (value === null) return undefined;
  if (!allowed.includes(value)) throw badRequest(`${name} must be one of ${allowed.join(', ')}, got "${value}"`);
  return value;
}
