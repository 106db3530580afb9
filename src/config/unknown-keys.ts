/**
 * Finding keys the configuration schema does not know (a typo such as `webhook`, `schedul` or
 * `perMinit` would otherwise be dropped in silence and its default used). The known keys come from
 * the zod schema itself, never from a list kept by hand: a key added to schema.ts is known here at
 * once, at every depth (objects, arrays of objects, records keyed by an enum).
 */
import type { z } from 'zod';

/** A key the schema does not know, where it was found, and the known key nearest to it. */
export interface UnknownKey {
  /** Dot-separated path of the unknown key (`sync.schedul`, `webhooks.0.secrte`). */
  path: string;
  /** The known key of the same object nearest in spelling, as a full path; undefined when none is close. */
  suggestion?: string;
  /** Every key the object at that place accepts, in schema order. */
  known: readonly string[];
}

/** The parts of a zod 4 schema's definition this walk reads (`schema._zod.def`). */
interface SchemaDefinition {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  element?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  catchall?: z.ZodType;
  keyType?: z.ZodType;
  valueType?: z.ZodType;
  entries?: Record<string, string | number>;
}

function definitionOf(schema: z.ZodType): SchemaDefinition {
  return (schema as unknown as { _zod: { def: SchemaDefinition } })._zod.def;
}

/** The schema under its wrappers (`.default()`, `.prefault()`, `.optional()`, `.nullable()`, pipes). */
function unwrap(schema: z.ZodType): SchemaDefinition {
  let definition = definitionOf(schema);
  for (;;) {
    if (definition.innerType && ['default', 'prefault', 'optional', 'nullable', 'readonly', 'catch', 'nonoptional'].includes(definition.type)) {
      definition = definitionOf(definition.innerType);
    } else if (definition.type === 'pipe' && definition.in) {
      definition = definitionOf(definition.in);
    } else {
      return definition;
    }
  }
}

const isPlainObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * The first key of `value` that `schema` does not know, depth first in the value's own key order,
 * or undefined when every key is known. Values of the wrong type are left to the schema's own check.
 * @param prefix the path of `value` itself ('' at the top)
 * @param skip top-level keys not to look at (checked elsewhere)
 */
export function findUnknownKey(schema: z.ZodType, value: unknown, prefix = '', skip: readonly string[] = []): UnknownKey | undefined {
  const definition = unwrap(schema);
  const at = (key: string | number) => (prefix === '' ? String(key) : `${prefix}.${key}`);
  if (definition.type === 'object' && definition.shape && isPlainObject(value)) {
    const known = Object.keys(definition.shape).filter((key) => !skip.includes(key));
    for (const [key, child] of Object.entries(value)) {
      if (skip.includes(key)) continue;
      const childSchema = definition.shape[key];
      if (childSchema === undefined) {
        // An object with a catchall accepts any further key: check it against that schema.
        if (definition.catchall && unwrap(definition.catchall).type !== 'never') {
          const found = findUnknownKey(definition.catchall, child, at(key));
          if (found) return found;
          continue;
        }
        const nearest = nearestKey(key, known);
        return { path: at(key), suggestion: nearest === undefined ? undefined : at(nearest), known };
      }
      const found = findUnknownKey(childSchema, child, at(key));
      if (found) return found;
    }
    return undefined;
  }
  if (definition.type === 'array' && definition.element && Array.isArray(value)) {
    for (const [index, item] of value.entries()) {
      const found = findUnknownKey(definition.element, item, at(index));
      if (found) return found;
    }
    return undefined;
  }
  if (definition.type === 'record' && definition.valueType && isPlainObject(value)) {
    // A record keyed by an enum (`sync.streamSchedules`, keyed by stream name) knows its keys too.
    const keyDefinition = definition.keyType ? unwrap(definition.keyType) : undefined;
    const known = keyDefinition?.type === 'enum' && keyDefinition.entries ? Object.values(keyDefinition.entries).map(String) : undefined;
    for (const [key, child] of Object.entries(value)) {
      if (known && !known.includes(key)) {
        const nearest = nearestKey(key, known);
        return { path: at(key), suggestion: nearest === undefined ? undefined : at(nearest), known };
      }
      const found = findUnknownKey(definition.valueType, child, at(key));
      if (found) return found;
    }
  }
  return undefined;
}

/**
 * The known key nearest in spelling to `key` (case-insensitive edit distance), or undefined when
 * none is within a third of the key's length (at least 2 edits allowed): `webhook` -> `webhooks`,
 * `perMinit` -> `perMinute`, `baseURL` -> `baseUrl`; `colour` suggests nothing.
 */
export function nearestKey(key: string, known: readonly string[]): string | undefined {
  const allowed = Math.max(2, Math.floor(key.length / 3));
  let best: { key: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (distance <= allowed && (best === undefined || distance < best.distance)) best = { key: candidate, distance };
  }
  return best?.key;
}

/** Levenshtein distance between `a` and `b` (insertions, deletions, substitutions; one row kept). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** The one-line description of an unknown key: `unknown key webhook; did you mean webhooks?` */
export function describeUnknownKey(unknown: UnknownKey, where: string): string {
  const hint = unknown.suggestion !== undefined ? `did you mean ${unknown.suggestion}?` : `expected one of ${unknown.known.join(', ')}`;
  return `unknown key ${unknown.path}${where ? ` in ${where}` : ''}; ${hint}`;
}
