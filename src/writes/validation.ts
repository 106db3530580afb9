/**
 * Payload validation at intake (docs/writes.md: an invalid write is refused with a field-level
 * message and never queued). Turns zod issues into `field: rule` lines.
 */
import type { z } from 'zod';
import { WriteValidationError, type WriteFieldIssue } from './errors.ts';
import { isWriteKindName, WRITE_KIND_NAMES, writeKind, type WriteKindName } from './kinds/index.ts';

/** `ratings[0].score` from a zod path. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out;
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}

/** One zod issue as `{ field, rule }`, with plain wording for missing and unknown fields. */
function describeIssue(issue: z.core.$ZodIssue): WriteFieldIssue[] {
  const field = fieldPath(issue.path);
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => ({ field: fieldPath([...issue.path, key]), rule: 'is not a field of this write kind' }));
  }
  // A missing field fails its type (or enum) check with input undefined: say so plainly.
  if (issue.code !== 'custom' && issue.input === undefined && issue.path.length > 0) return [{ field, rule: 'is required' }];
  if (issue.code === 'invalid_type' && field === '' && issue.expected === 'object') {
    return [{ field: 'payload', rule: `must be a JSON object, got ${typeName(issue.input)}` }];
  }
  return [{ field, rule: issue.message }];
}

/**
 * Validates `payload` for `kind`.
 * @returns the normalized payload (what will be sent)
 * @throws WriteValidationError naming the kind, each field and its rule; also when `kind` is unknown
 */
export function validateWritePayload(kind: unknown, payload: unknown): { kind: WriteKindName; payload: Record<string, unknown> } {
  if (!isWriteKindName(kind)) {
    throw new WriteValidationError(String(kind), [{ field: 'kind', rule: `must be one of ${WRITE_KIND_NAMES.join(', ')}` }]);
  }
  const parsed = writeKind(kind).payloadSchema.safeParse(payload, { reportInput: true });
  if (!parsed.success) {
    // One rule per field: the first broken one (zod goes on checking after a failed check).
    const seen = new Set<string>();
    const issues = parsed.error.issues.flatMap(describeIssue).filter((issue) => !seen.has(issue.field) && seen.add(issue.field));
    throw new WriteValidationError(kind, issues);
  }
  return { kind, payload: parsed.data as Record<string, unknown> };
}
