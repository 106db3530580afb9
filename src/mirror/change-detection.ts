/**
 * Change detection: a content hash for no-op suppression (docs/sync.md "No-op suppression") and a
 * field-level diff for the changelog's `data.changes`.
 */
import { hash } from 'node:crypto';
import type { FieldChanges } from './changelog-format.ts';
import { readField, type ApiRecord } from '../streams/define-stream.ts';


/**
 * sha256 (hex) of the record's listed fields, in a fixed order, so that key order, unknown extra
 * fields and write-response-only fields never make identical data look changed. One-shot
 * `crypto.hash` (no Hash object per record); the digest is the same sha256 as before, so hashes
 * stored by earlier versions still compare equal.
 */
export function contentHash(record: ApiRecord, fields: readonly string[]): string {
  const values = new Array<unknown>(fields.length);
  for (let index = 0; index < fields.length; index += 1) values[index] = readField(record, fields[index]!) ?? null;
  return hash('sha256', JSON.stringify(values), 'hex');
}

/**
 * The listed fields whose value differs between two versions of a record.
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

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  return JSON.stringify(a) === JSON.stringify(b);
}
