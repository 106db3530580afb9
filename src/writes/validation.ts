/**
 * Payload validation at intake (docs/writes.md: an invalid write is refused with a field-level
 * message and never queued). First the storability rule (src/client/storable-json.ts, the one the
 * sync quarantines by: nesting at most `MAX_JSON_DEPTH` levels, JSON values only, checked without
 * recursion, so nothing after it can overflow the stack), then the kind's schema as `field: rule`
 * lines, and the text rules every string field shares (no control characters, Unicode text the
 * mirror can store, a length cap: `textRuleIssues`).
 */
import type { z } from 'zod';
import { escapeUnstorable, storabilityIssues, unstorableTextRule } from '../client/storable-json.ts';
import { WriteValidationError, type WriteFieldIssue } from './write-errors.ts';
import { isWriteKindName, WRITE_KIND_NAMES, writeKind, type WriteKindName } from './kinds/index.ts';

/**
 * Control characters refused in every text field of every write kind: U+0000 to U+001F except tab,
 * line feed and carriage return (a NUL cannot even be stored in a PostgreSQL mirror).
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL_CHARACTER = /[\u0000-\u0008\u000b\u000c\u000e-\u001f]/;

/**
 * Longest text, in characters, of a field whose length the spec leaves open (docs/writes.md
 * "Intake"); fields with a limit of their own (a transaction's `description`: 1000) keep theirs.
 */
export const MAX_TEXT_CHARACTERS = 10_000;

/**
 * The text rules of every string anywhere in a payload (every field of every kind, nested ones and
 * array items included): no control characters, text the mirror can store (no unpaired surrogate:
 * `unstorableTextRule`), at most MAX_TEXT_CHARACTERS characters. Recursive: call it on a payload
 * that passed the storability rule (at most `MAX_JSON_DEPTH` levels), as `validateWritePayload` does.
 * @returns one issue per broken field, `[]` when none
 */
export function textRuleIssues(payload: unknown, path: readonly PropertyKey[] = []): WriteFieldIssue[] {
  if (typeof payload === 'string') {
    const field = fieldPath(path) || 'payload';
    const control = CONTROL_CHARACTER.exec(payload);
    if (control) {
      const code = control[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0');
      return [{ field, rule: `must not contain control characters (U+0000 to U+001F other than tab, CR and LF; found U+${code})` }];
    }
    const unstorable = unstorableTextRule(payload);
    if (unstorable !== undefined) return [{ field, rule: unstorable }];
    if (payload.length > MAX_TEXT_CHARACTERS) return [{ field, rule: `must be at most ${MAX_TEXT_CHARACTERS} characters` }];
    return [];
  }
  if (Array.isArray(payload)) return payload.flatMap((item, index) => textRuleIssues(item, [...path, index]));
  if (payload && typeof payload === 'object') return Object.entries(payload).flatMap(([key, value]) => textRuleIssues(value, [...path, key]));
  return [];
}

/** `ratings[0].score` from a zod path; a key the mirror could not store is escaped (`a\u0000b`). */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else {
      const name = escapeUnstorable(String(part));
      out += out === '' ? name : `.${name}`;
    }
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
    const named = typeof kind === 'string' ? kind : `(${typeName(kind)})`;
    throw new WriteValidationError(named, [{ field: 'kind', rule: `must be one of ${WRITE_KIND_NAMES.join(', ')}` }]);
  }
  // Before anything recursive (the schema, the text rules, hashing): a payload nested too deep, or
  // holding what is not JSON, is refused on that alone; its other parts are not looked at.
  const unstorable = storabilityIssues(payload);
  const structural = unstorable.filter((issue) => issue.kind !== 'text');
  if (structural.length > 0) throw new WriteValidationError(kind, structural.map((issue) => ({ field: fieldPath(issue.path) || 'payload', rule: issue.rule })));
  const parsed = writeKind(kind).payloadSchema.safeParse(payload, { reportInput: true });
  const textIssues = [...textRuleIssues(payload), ...unstorable.map((issue) => ({ field: fieldPath(issue.path) || 'payload', rule: issue.rule }))];
  if (!parsed.success || textIssues.length > 0) {
    // One rule per field: the first broken one (zod goes on checking after a failed check); a control
    // character is named first, being what a caller must fix whatever the field's other rules.
    const seen = new Set<string>();
    const issues = [...textIssues, ...(parsed.success ? [] : parsed.error.issues.flatMap(describeIssue))].filter((issue) => !seen.has(issue.field) && seen.add(issue.field));
    throw new WriteValidationError(kind, issues);
  }
  return { kind, payload: parsed.data as Record<string, unknown> };
}
