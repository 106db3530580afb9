/**
 * Plain wording for the rules zod checks without a message of ours ("must be a whole number, got
 * \"abc\"" instead of zod's "Invalid input: expected number, received string"). Passed to every parse
 * of the configuration as its error map; a rule's own message in schema.ts wins over it.
 */
import type { z } from 'zod';

/** A value as shown after "got": short literals quoted, anything else by its kind (never a secret's text). */
function shown(value: unknown, showText: boolean): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') return showText && value.length <= 40 ? JSON.stringify(value) : 'a string';
  return String(value);
}

const TYPE_WORDS: Record<string, string> = {
  number: 'a number',
  int: 'a whole number',
  string: 'a string',
  boolean: 'true or false',
  object: 'an object',
  array: 'a list',
  record: 'an object',
};

/** Bounds of a too_small / too_big issue in words, by what was measured. */
function bound(issue: { origin?: string; inclusive?: boolean }, limit: number | bigint, direction: 'min' | 'max'): string {
  switch (issue.origin) {
    case 'string':
      return `must be ${direction === 'min' ? 'at least' : 'at most'} ${limit} characters long`;
    case 'array':
    case 'set':
      return `must have ${direction === 'min' ? 'at least' : 'at most'} ${limit} ${limit === 1 ? 'item' : 'items'}`;
    default:
      if (issue.inclusive === false) return `must be ${direction === 'min' ? 'greater than' : 'less than'} ${limit}`;
      return `must be ${direction === 'min' ? 'at least' : 'at most'} ${limit}`;
  }
}

/**
 * The rule an issue broke, in the words `bizops-sync: configuration error: KEY: ...` continues
 * with. The given value is quoted only where a number or a choice was expected (a secret is a
 * string and never quoted).
 */
export function plainIssueMessage(issue: z.core.$ZodRawIssue): string {
  switch (issue.code) {
    case 'invalid_type': {
      const expected = TYPE_WORDS[issue.expected] ?? `a ${issue.expected}`;
      return `must be ${expected}, got ${shown(issue.input, issue.expected === 'number' || issue.expected === 'int' || issue.expected === 'boolean')}`;
    }
    case 'too_small':
      return bound(issue, issue.minimum, 'min');
    case 'too_big':
      return bound(issue, issue.maximum, 'max');
    case 'invalid_value':
      return `must be one of ${issue.values.map((value) => JSON.stringify(value)).join(', ')}, got ${shown(issue.input, true)}`;
    case 'invalid_format':
      if (issue.format === 'url') return 'must be a URL (http:// or https://)';
      if (issue.format === 'datetime') return 'must be an ISO 8601 date-time with a time zone, e.g. 2026-12-01T00:00:00Z';
      if (issue.format === 'regex' && 'pattern' in issue) return `must match ${String(issue.pattern)}`;
      return `must be a valid ${issue.format}`;
    case 'not_multiple_of':
      return `must be a multiple of ${issue.divisor}`;
    case 'unrecognized_keys':
      return `unknown ${issue.keys.length === 1 ? 'key' : 'keys'} ${issue.keys.join(', ')}`;
    case 'invalid_key':
      return `is not a valid name here (${issue.issues.map((inner) => inner.message).join('; ')})`;
    case 'invalid_union':
      return 'matches none of the allowed forms';
    case 'invalid_element':
      return 'holds an invalid value';
    default:
      return 'is not valid';
  }
}

/** The error map for `safeParse(value, { error: configErrorMap })`. */
export const configErrorMap = (issue: z.core.$ZodRawIssue): string => plainIssueMessage(issue);
