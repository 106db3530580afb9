/**
 * Opening an existing mirror file for a job that only reads or administers it. Kept apart from
 * context.ts (which re-exports it) so that a reader such as `bizops-sync changes` loads SQLite and
 * nothing of the worker (HTTP client, Redis, queues).
 */
import { existsSync } from 'node:fs';
import { openMirror, type MirrorDatabase } from '../src/mirror/database.ts';

/** The mirror file a job reads does not exist yet: nothing has run. The message says what to run. */
export class MirrorMissingError extends Error {
  override name = 'MirrorMissingError';
}

/**
 * Opens the mirror file at `dbPath` for a job that only reads or administers it (`status`, `changes`,
 * `write`, `webhooks`): no API settings needed.
 * @throws MirrorMissingError `no mirror at <path> yet: run \`bizops-sync backfill\` first` when the file does not exist
 */
export function openExistingMirror(dbPath: string, options: { readonly?: boolean; hint?: string } = {}): MirrorDatabase {
  if (dbPath !== ':memory:' && !existsSync(dbPath)) throw new MirrorMissingError(`no mirror at ${dbPath} yet: ${options.hint ?? 'run `bizops-sync backfill` first'}`);
  return openMirror(dbPath, { readonly: options.readonly ?? false });
}
