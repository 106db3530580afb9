/**
 * Change detection (docs/sync.md "No-op suppression", docs/mirror.md "Fields the spec does not
 * show"): beside the content hash of everything the API returned for a record (content-hash.ts), a
 * field-level diff for the changelog's `data.changes` over every field the incoming item carries.
 *
 * The rules:
 *   - The hash covers the whole item as returned (its JSON text). Equal hashes: nothing changed, no
 *     diff needed. A different hash (a changed field, a field added or dropped, another key order, a
 *     write response stored before) sends the record to the diff, which decides.
 *   - The diff compares every field path present in the incoming item (objects walked to
 *     `MAX_FIELD_DEPTH` levels, arrays compared whole) plus the stream's listed fields (an absent
 *     listed field counts as null, as ever). A field absent from the item is not compared: a list
 *     item without a field only a write response carries changes nothing.
 *   - Two texts naming one instant (`...578Z`, `...578+00:00`: src/mirror/instants.ts) are the same
 *     value: a server that changes how it writes its times changes no record.
 *   - A field the stored record lacks is compared (as null before) only when the stream knew it
 *     when that version was stored: a listed field, or one the field registry recorded before this
 *     page and no later than the stored version (`first_seen_at` <= the row's `synced_at`). A field
 *     appearing in a stream (a server deploy adding it to every record) is announced once
 *     (`schema.field_added`, src/mirror/field-registry.ts): a record stored before the stream first
 *     saw it gains it without an update event (its `raw` is rewritten); a record stored while the
 *     stream already knew the field, and lacking it, that gains it has changed (old null).
 */
import type { FieldChanges } from './changelog-format.ts';
import { plantedBug } from '../logging/planted-bugs.ts';
import { readField, type ApiRecord, type StreamDefinition } from '../streams/define-stream.ts';
import { sameInstant } from './instants.ts';

/** How deep nested objects are walked into field paths (`user.email` is depth 2); deeper objects compare whole. */
export const MAX_FIELD_DEPTH = 3;

/**
 * The leaf field paths of a record: `id`, `user.fullname`, `user.email`; a nested object below
 * `MAX_FIELD_DEPTH`, an array or null is a leaf.
 */
export function fieldPaths(record: ApiRecord): string[] {
  const paths: string[] = [];
  forEachFieldPath(record, (path) => paths.push(path));
  return paths;
}

/**
 * Calls `visit` with each of `record`'s field paths, in `fieldPaths` order, without building a list:
 * it runs on every record a page writes.
 */
export function forEachFieldPath(record: ApiRecord, visit: (path: string) => void): void {
  walkFieldPaths(record, '', 1, visit);
}

function walkFieldPaths(node: Record<string, unknown>, prefix: string, depth: number, visit: (path: string) => void): void {
  for (const key in node) {
    if (!Object.hasOwn(node, key)) continue;
    const value = node[key];
    const path = prefix === '' ? key : `${prefix}.${key}`;
    if (depth < MAX_FIELD_DEPTH && value !== null && typeof value === 'object' && !Array.isArray(value)) walkFieldPaths(value as Record<string, unknown>, path, depth + 1, visit);
    else visit(path);
  }
}

/** The field paths a stream declares: its columns' fields and the objects holding them (`user` for `user.fullname`). */
export function declaredFieldPaths(stream: Pick<StreamDefinition, 'columns'>): ReadonlySet<string> {
  let declared = declaredByStream.get(stream);
  if (declared) return declared;
  declared = new Set<string>();
  for (const column of stream.columns) {
    const parts = column.field.split('.');
    for (let length = 1; length <= parts.length; length += 1) declared.add(parts.slice(0, length).join('.'));
  }
  declaredByStream.set(stream, declared);
  return declared;
}

const declaredByStream = new WeakMap<object, Set<string>>();

/** What `diffRecord` needs to know of the stream. */
export interface DiffFields {
  /** The stream's listed fields: always compared, absent counting as null. */
  listed: readonly string[];
  /** True for an undeclared field the stream knew before this page (the field registry). */
  known(path: string): boolean;
  /**
   * When the stream first saw an undeclared field (the registry's `first_seen_at`, ISO 8601);
   * undefined when not known. With `diffRecord`'s `storedAt`, a field the stored version lacks is
   * compared only when that version was stored at or after this moment. Absent: every known field is compared.
   */
  firstSeenAt?(path: string): string | undefined;
}

/**
 * The fields whose value differs between the stored record and the incoming one (module rules).
 * @param previous the stored version, or undefined for a new record (every listed field then counts
 *   as changed, old = null)
 * @param storedAt when `previous` was stored (the row's `synced_at`, ISO 8601): a field it lacks
 *   that the stream first saw later is not a change (`DiffFields.firstSeenAt`); absent, not checked
 */
export function diffRecord(previous: ApiRecord | undefined, next: ApiRecord, fields: DiffFields, storedAt?: string): FieldChanges {
  const changes: FieldChanges = {};
  if (previous === undefined) {
    for (const field of fields.listed) changes[field] = { old: null, new: readField(next, field) ?? null };
    return changes;
  }
  const listed = new Set(fields.listed);
  const skipStatus = plantedBug('skip-field');
  for (const field of fields.listed) {
    if (skipStatus && field === 'status') continue;
    const before = readField(previous, field) ?? null;
    const after = readField(next, field) ?? null;
    if (!sameValue(before, after)) changes[field] = { old: before, new: after };
  }
  for (const path of fieldPaths(next)) {
    if (listed.has(path)) continue;
    const before = readField(previous, path);
    // New to the stream (announced once), or new since this version was stored (a deploy added it): not a change.
    if (before === undefined && (!fields.known(path) || storedBeforeField(fields, path, storedAt))) continue;
    const after = readField(next, path);
    if (!sameValue(before ?? null, after ?? null)) changes[path] = { old: before ?? null, new: after ?? null };
  }
  return changes;
}

/**
 * The listed fields whose value differs between two versions of a record (a diff over the listed
 * fields alone, as the changelog's version-1 rows carry).
 * @param previous the stored version, or undefined for a new record (every field then counts as changed, old = null)
 */
export function diffFields(previous: ApiRecord | undefined, next: ApiRecord, fields: readonly string[]): FieldChanges {
  const changes: FieldChanges = {};
  for (const field of fields) {
    const before = previous === undefined ? null : (readField(previous, field) ?? null);
    const after = readField(next, field) ?? null;
    if (previous === undefined || !sameValue(before, after)) changes[field] = { old: before, new: after };
  }
  return changes;
}

/** True when the stored version (`storedAt`) is older than the stream's first sight of `path`: it could not carry it. */
function storedBeforeField(fields: DiffFields, path: string, storedAt: string | undefined): boolean {
  const firstSeenAt = storedAt === undefined ? undefined : fields.firstSeenAt?.(path);
  return firstSeenAt !== undefined && Date.parse(storedAt!) < Date.parse(firstSeenAt);
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  // One instant written two ways (`Z` and `+00:00`, with or without a fraction): not a change (instants.ts).
  if (typeof a === 'string' && typeof b === 'string') return sameInstant(a, b);
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  return JSON.stringify(a) === JSON.stringify(b);
}
