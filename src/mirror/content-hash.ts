/**
 * A record's content hash (docs/sync.md "No-op suppression"): equal hashes mean nothing the API
 * returned changed. A module of its own, importing only node:crypto, so that a program that needs
 * only the hash (the benchmark's plain loop, bench/plain-backfill.ts) loads nothing else.
 */
import { hash } from 'node:crypto';
import type { ApiRecord } from '../streams/define-stream.ts';

/**
 * sha256 (hex) of a record's JSON text as the API returned it: every field counts. One-shot
 * `crypto.hash`. `json` is `JSON.stringify(record)` when the caller has it already.
 */
export function contentHash(record: ApiRecord, json: string = JSON.stringify(record)): string {
  return hash('sha256', json, 'hex');
}
