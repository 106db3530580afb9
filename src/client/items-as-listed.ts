/**
 * A list item taken as it was parsed, without zod copying it (src/client/schemas.ts `storableItems`).
 *
 * A zod object schema's `safeParse` returns a new object: the shape's keys first, in the shape's
 * order, then the other keys (`z.looseObject`), each value parsed. For the flat records the API lists
 * (strings, enums, integers, numbers, booleans, nullables) that copy equals the item itself whenever
 * the item's keys already come in that order and every value passes: the copy is then only work and
 * garbage (two objects per record, a tenth of a backfill's allocations). `asListedCheck` reads such a
 * schema once and returns a check that says, per item, that zod would accept it and return an equal
 * object (same keys in the same order, the same values), so the item itself can stand for zod's
 * output. Anything it does not know (another check, a transform, a nested object, an absent key, a key
 * out of order) answers false, and zod parses the item as before: its output and its errors are zod's.
 */

/** A value's test: true when the field's schema accepts it unchanged. */
type ValueCheck = (value: unknown) => boolean;

/** What `asListedCheck` reads of a zod schema: its definition (zod 4's `_zod.def`). */
interface ZodDefinition {
  type?: unknown;
  checks?: readonly { _zod?: { def?: { check?: unknown; minimum?: unknown } } }[];
  coerce?: unknown;
  format?: unknown;
  entries?: unknown;
  innerType?: unknown;
  shape?: unknown;
  catchall?: unknown;
}

/** The definition of a zod 4 schema, or undefined for anything else. */
function definitionOf(schema: unknown): ZodDefinition | undefined {
  const zod = (schema as { _zod?: { def?: unknown } } | null | undefined)?._zod;
  const def = zod?.def;
  return typeof def === 'object' && def !== null ? (def as ZodDefinition) : undefined;
}

/** The value check of a field's schema, or undefined when the schema has anything the check does not model. */
function valueCheck(schema: unknown): ValueCheck | undefined {
  const def = definitionOf(schema);
  if (def === undefined || def.coerce === true) return undefined;
  const checks = def.checks ?? [];
  switch (def.type) {
    case 'string': {
      let minimum = 0;
      for (const check of checks) {
        const rule = check._zod?.def;
        if (rule?.check !== 'min_length' || typeof rule.minimum !== 'number') return undefined;
        minimum = Math.max(minimum, rule.minimum);
      }
      return (value) => typeof value === 'string' && value.length >= minimum;
    }
    case 'enum': {
      if (checks.length > 0 || typeof def.entries !== 'object' || def.entries === null) return undefined;
      const values = Object.values(def.entries);
      if (!values.every((value) => typeof value === 'string')) return undefined;
      const allowed = new Set<unknown>(values);
      return (value) => typeof value === 'string' && allowed.has(value);
    }
    case 'number': {
      // z.int(): the format `safeint` (its own check); z.number(): no format, no check.
      if (def.format === 'safeint') {
        if (!checks.every((check) => check._zod?.def?.check === 'number_format')) return undefined;
        return (value) => typeof value === 'number' && Number.isSafeInteger(value);
      }
      if (def.format !== undefined || checks.length > 0) return undefined;
      return (value) => typeof value === 'number' && Number.isFinite(value);
    }
    case 'boolean':
      return checks.length > 0 ? undefined : (value) => typeof value === 'boolean';
    case 'nullable': {
      const inner = checks.length > 0 ? undefined : valueCheck(def.innerType);
      return inner === undefined ? undefined : (value) => value === null || inner(value);
    }
    case 'optional': {
      // Present keys only (`asListedCheck` asks for every key of the shape): JSON holds no undefined.
      const inner = checks.length > 0 ? undefined : valueCheck(def.innerType);
      return inner === undefined ? undefined : (value) => value !== undefined && inner(value);
    }
    default:
      return undefined;
  }
}

/**
 * For a `z.looseObject` of fields `valueCheck` models: a check that is true for an item zod accepts
 * and would copy into an equal object (a plain object whose keys are the shape's, all present, in the
 * shape's order, then any others, with every shape value accepted unchanged). Undefined for any other
 * schema (then every item goes through zod).
 */
export function asListedCheck(schema: unknown): ((input: unknown) => boolean) | undefined {
  const def = definitionOf(schema);
  if (def === undefined || def.type !== 'object' || (def.checks ?? []).length > 0) return undefined;
  // Loose: the keys the shape does not name pass through untouched (a strict or stripping object copies otherwise).
  if (definitionOf(def.catchall)?.type !== 'unknown') return undefined;
  if (typeof def.shape !== 'object' || def.shape === null) return undefined;
  const keys = Object.keys(def.shape);
  const checks: ValueCheck[] = [];
  for (const key of keys) {
    const check = valueCheck((def.shape as Record<string, unknown>)[key]);
    if (check === undefined || key === '__proto__') return undefined;
    checks.push(check);
  }
  const count = keys.length;
  return (input) => {
    if (typeof input !== 'object' || input === null || Object.getPrototypeOf(input) !== Object.prototype) return false;
    const record = input as Record<string, unknown>;
    let index = 0;
    // for-in: own enumerable keys in the order zod's copy would have them (integer-like keys first: then the order test fails).
    for (const key in record) {
      if (index < count) {
        if (key !== keys[index] || !checks[index]!(record[key])) return false;
        index += 1;
      } else if (key === '__proto__') return false; // zod's copy would set a prototype instead of a key
    }
    return index === count;
  };
}
