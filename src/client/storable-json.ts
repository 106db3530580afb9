/**
 * The storability rule (docs/sync.md "Invalid records", docs/writes.md "Intake"): what a JSON value
 * must be for both mirrors to store it and read it back through their JSON functions. PostgreSQL's
 * `jsonb` refuses U+0000 (`unsupported Unicode escape sequence`) and an unpaired surrogate
 * (`invalid input syntax for type json`), and its parser runs out of stack past a few thousand
 * levels; SQLite's JSON functions refuse nesting deeper than 1000 levels. One rule, used by write
 * intake (a write is refused naming the field) and by the sync (a list item is quarantined naming
 * the field), so that nothing unstorable reaches a SQL cast:
 *
 * - every string, and every object key, is well-formed Unicode text without U+0000;
 * - objects and arrays nest at most `MAX_JSON_DEPTH` levels;
 * - every value is JSON: null, a boolean, a finite number, a string, an array or a plain object
 *   (`undefined` members are absent, as `JSON.stringify` drops them);
 * - a value holds at most `MAX_JSON_VALUES` values in all.
 *
 * Every walk here is iterative (an explicit stack): no input, however deep, can overflow the call
 * stack, so these checks run before anything recursive looks at a value.
 *
 *   storabilityIssue({ description: 'a\ud800' })   // { path: ['description'], rule: 'must not contain an unpaired surrogate ...' }
 *   isStorable(record)                             // false
 *   storableCopy(record)                           // the same with U+FFFD in place of the surrogate
 */

/** Deepest nesting of objects and arrays a stored value may have: `{}` is 1 level, `{"a":[1]}` 2. */
export const MAX_JSON_DEPTH = 64;

/** Most values (scalars, objects and arrays together) one value may hold: a guard against shared or cyclic structures handed in by code. */
export const MAX_JSON_VALUES = 1_000_000;

/** What replaces a part nested past `MAX_JSON_DEPTH` in a `storableCopy`. */
export const TOO_DEEP_MARKER = `[nested deeper than ${MAX_JSON_DEPTH} levels]`;

/** Where a value breaks the storability rule, and which part of it. */
export interface StorabilityIssue {
  /**
   * Object keys and array indexes from the value's root to the broken part: a string (or a key) for
   * `text`, the top-level member holding the too-deep part for `depth` (empty when that is an
   * array item), the value for `value`. A key holding an unstorable character is given
   * escaped (`a\u0000b`), so that the path itself can be stored and printed.
   */
  path: (string | number)[];
  /** `text`: a string or a key's characters; `depth`: too deep; `value`: not a JSON value, or too many values. */
  kind: 'text' | 'depth' | 'value';
  /** The broken rule, one line: `must not contain the NUL character (U+0000): the mirror cannot store it`. */
  rule: string;
}

/** The scratch stack of `isStorable` (reused: the check runs on every list item of every page, and allocates nothing). */
const pending: unknown[] = [];
const pendingDepths: number[] = [];

/**
 * The rule a string breaks, or undefined when both mirrors store it: no U+0000, no unpaired
 * surrogate (a string from `JSON.parse` may hold one: `"\ud800"` is valid JSON text).
 */
export function unstorableTextRule(text: string): string | undefined {
  if (text.includes('\u0000')) return 'must not contain the NUL character (U+0000): the mirror cannot store it';
  if (text.isWellFormed()) return undefined;
  const at = loneSurrogateIndex(text);
  const code = text.charCodeAt(at).toString(16).toUpperCase();
  return `must not contain an unpaired surrogate (U+${code} at character ${at + 1}: not Unicode text): the mirror cannot store it`;
}

/** Index of the first unpaired surrogate of a string that is not well-formed. */
function loneSurrogateIndex(text: string): number {
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code >= 0xd800 && code <= 0xdbff) {
      const next = text.charCodeAt(index + 1);
      if (next >= 0xdc00 && next <= 0xdfff) index += 1;
      else return index;
    } else if (code >= 0xdc00 && code <= 0xdfff) return index;
  }
  return -1;
}

/** True for a string both mirrors store (`unstorableTextRule` has nothing to say). */
function storableString(text: string): boolean {
  return !text.includes('\u0000') && text.isWellFormed();
}

/** The rule a non-container value breaks, or undefined when it is a JSON scalar (or undefined: absent). */
function unstorableScalarRule(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return unstorableTextRule(value);
    case 'number':
      return Number.isFinite(value) ? undefined : `must be a finite number (JSON has no ${String(value)})`;
    case 'boolean':
    case 'undefined':
      return undefined;
    default:
      return value === null ? undefined : `must be a JSON value (found a ${typeof value})`;
  }
}

/** True for a plain object or array (what JSON.parse makes); false for a Date, a Map, a class instance. */
function isJsonContainer(value: object): boolean {
  if (Array.isArray(value)) return true;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}

/**
 * True when both mirrors can store `value` (the module's rule). Iterative and allocation-free: call
 * it on every item; ask `storabilityIssue` where it breaks only when this is false.
 */
export function isStorable(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return unstorableScalarRule(value) === undefined;
  let top = 0;
  let seen = 0;
  let storable = true;
  pending[top] = value;
  pendingDepths[top] = 1;
  top += 1;
  walk: while (top > 0) {
    top -= 1;
    const node = pending[top] as object;
    const depth = pendingDepths[top]!;
    pending[top] = undefined;
    if (depth > MAX_JSON_DEPTH || !isJsonContainer(node)) {
      storable = false;
      break;
    }
    if (Array.isArray(node)) {
      seen += node.length;
      if (seen > MAX_JSON_VALUES) {
        storable = false;
        break;
      }
      for (let index = 0; index < node.length; index += 1) {
        const item: unknown = node[index];
        if (typeof item === 'object' && item !== null) {
          pending[top] = item;
          pendingDepths[top] = depth + 1;
          top += 1;
        } else if (typeof item === 'string' ? !storableString(item) : unstorableScalarRule(item) !== undefined) {
          storable = false;
          break walk;
        }
      }
      continue;
    }
    for (const key in node) {
      if (!Object.hasOwn(node, key)) continue;
      seen += 1;
      const item: unknown = (node as Record<string, unknown>)[key];
      if (seen > MAX_JSON_VALUES || !storableString(key)) {
        storable = false;
        break walk;
      }
      if (typeof item === 'object' && item !== null) {
        pending[top] = item;
        pendingDepths[top] = depth + 1;
        top += 1;
      } else if (typeof item === 'string' ? !storableString(item) : unstorableScalarRule(item) !== undefined) {
        storable = false;
        break walk;
      }
    }
  }
  for (let index = 0; index < top; index += 1) pending[index] = undefined;
  return storable;
}

/**
 * A string with every U+0000 and unpaired surrogate written as its escape (`\u0000`, `\ud800`):
 * how a key that breaks the rule is named in an issue's path and message.
 */
export function escapeUnstorable(text: string): string {
  if (storableString(text)) return text;
  let out = '';
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    const high = code >= 0xd800 && code <= 0xdbff;
    const next = text.charCodeAt(index + 1);
    if (high && next >= 0xdc00 && next <= 0xdfff) {
      out += text[index]! + text[index + 1]!;
      index += 1;
    } else if (code === 0 || (code >= 0xd800 && code <= 0xdfff)) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += text[index]!;
  }
  return out;
}

/**
 * Where `value` breaks the storability rule (the module's header), or undefined when both mirrors
 * store it. Iterative: never overflows the stack, however deep `value` nests.
 * @returns the first issue found, depth first in key order
 */
export function storabilityIssue(value: unknown): StorabilityIssue | undefined {
  if (isStorable(value)) return undefined;
  return storabilityIssues(value, 1)[0];
}

/**
 * Every place `value` breaks the storability rule, at most `limit` of them (a too-deep part is one
 * issue: nothing under it is looked at). Iterative, like `isStorable`.
 */
export function storabilityIssues(value: unknown, limit = 20): StorabilityIssue[] {
  const issues: StorabilityIssue[] = [];
  if (typeof value !== 'object' || value === null) {
    const rule = unstorableScalarRule(value);
    return rule === undefined ? [] : [{ path: [], kind: typeof value === 'string' ? 'text' : 'value', rule }];
  }
  const stack: { node: unknown; depth: number; path: (string | number)[] }[] = [{ node: value, depth: 1, path: [] }];
  let seen = 0;
  while (stack.length > 0 && issues.length < limit) {
    const { node, depth, path } = stack.pop()!;
    if (typeof node !== 'object' || node === null) {
      const rule = unstorableScalarRule(node);
      if (rule !== undefined) issues.push({ path, kind: typeof node === 'string' ? 'text' : 'value', rule });
      continue;
    }
    if (depth > MAX_JSON_DEPTH) {
      issues.push({ path: typeof path[0] === 'string' ? [path[0]] : [], kind: 'depth', rule: `must not nest objects and arrays more than ${MAX_JSON_DEPTH} levels deep: the mirror cannot store it` });
      continue;
    }
    if (!isJsonContainer(node)) {
      issues.push({ path, kind: 'value', rule: `must be a JSON value (found a ${(node as object).constructor?.name ?? 'object'})` });
      continue;
    }
    const children: { node: unknown; depth: number; path: (string | number)[] }[] = [];
    if (Array.isArray(node)) {
      seen += node.length;
      for (let index = 0; index < node.length; index += 1) children.push({ node: node[index], depth: depth + 1, path: [...path, index] });
    } else {
      for (const key in node) {
        if (!Object.hasOwn(node, key)) continue;
        seen += 1;
        const rule = unstorableTextRule(key);
        if (rule !== undefined) {
          issues.push({ path: [...path, escapeUnstorable(key)], kind: 'text', rule: `its name ${rule}` });
          continue;
        }
        children.push({ node: (node as Record<string, unknown>)[key], depth: depth + 1, path: [...path, key] });
      }
    }
    if (seen > MAX_JSON_VALUES) {
      issues.push({ path: [], kind: 'value', rule: `must hold at most ${MAX_JSON_VALUES} values` });
      break;
    }
    // Reversed onto the stack: the first member is looked at first.
    for (let index = children.length - 1; index >= 0; index -= 1) stack.push(children[index]!);
  }
  return issues.slice(0, limit);
}

/** `text` with every U+0000 and unpaired surrogate replaced by U+FFFD (the replacement character). */
export function storableText(text: string): string {
  return storableString(text) ? text : text.toWellFormed().replaceAll('\u0000', '\ufffd');
}

/**
 * A copy of `value` both mirrors store: strings and keys through `storableText`, a part nested past
 * `MAX_JSON_DEPTH` replaced by `TOO_DEEP_MARKER`, a non-finite number by null, any other non-JSON
 * value by its `String`, `undefined` members left out. What the quarantine keeps of an item, and
 * what a write keeps of a response. Iterative; `value` itself when it is storable already.
 */
export function storableCopy(value: unknown): unknown {
  if (isStorable(value)) return value;
  const root: { value: unknown } = { value: undefined };
  const stack: { source: unknown; depth: number; place: (copy: unknown) => void }[] = [{ source: value, depth: 1, place: (copy) => (root.value = copy) }];
  let seen = 0;
  while (stack.length > 0) {
    const { source, depth, place } = stack.pop()!;
    seen += 1;
    if (typeof source === 'string') place(storableText(source));
    else if (typeof source === 'number') place(Number.isFinite(source) ? source : null);
    else if (source === null || typeof source === 'boolean' || source === undefined) place(source);
    else if (typeof source !== 'object' || !isJsonContainer(source)) place(String(source));
    else if (depth > MAX_JSON_DEPTH || seen > MAX_JSON_VALUES) place(TOO_DEEP_MARKER);
    else if (Array.isArray(source)) {
      const copy: unknown[] = new Array<unknown>(source.length).fill(null);
      place(copy);
      for (let index = source.length - 1; index >= 0; index -= 1) {
        stack.push({ source: source[index], depth: depth + 1, place: (item) => (copy[index] = item === undefined ? null : item) });
      }
    } else {
      const copy: Record<string, unknown> = {};
      place(copy);
      const keys = Object.keys(source);
      for (const key of keys) copy[storableText(key)] = undefined;
      for (let index = keys.length - 1; index >= 0; index -= 1) {
        const key = storableText(keys[index]!);
        stack.push({
          source: (source as Record<string, unknown>)[keys[index]!],
          depth: depth + 1,
          place: (item) => {
            if (item === undefined) delete copy[key];
            else copy[key] = item;
          },
        });
      }
    }
  }
  return root.value;
}
