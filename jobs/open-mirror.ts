/**
 * Opening an existing mirror file for a job that only reads or administers it, and turning SQLite's
 * open failures into one line a person can act on. Kept apart from context.ts (which re-exports it)
 * so that a reader such as `bizops-sync changes` loads SQLite and nothing of the worker (HTTP
 * client, Redis, queues).
 */
import { existsSync, statSync } from 'node:fs';
import { ConfigError } from '../src/config/errors.ts';
import { openMirror, type MirrorDatabase } from '../src/mirror/database.ts';
import { MirrorDamagedError, MirrorMissingError } from './mirror-errors.ts';

export { MirrorDamagedError, MirrorMissingError } from './mirror-errors.ts';

/** SQLite result codes that mean the file itself is damaged (not the path or its permissions). */
const DAMAGED_CODES = new Set(['SQLITE_NOTADB', 'SQLITE_CORRUPT']);

/**
 * Opens the mirror at `dbPath`, turning every failure into one line a person can act on:
 * - a path that cannot hold the mirror (a directory, a read-only or pseudo file system such as
 *   /proc, a missing permission): `ConfigError` naming BIZOPS_DB (exit 2);
 * - a file SQLite cannot read (`file is not a database`, `database disk image is malformed`):
 *   `MirrorDamagedError` (exit 1).
 * Other errors (a mirror written by a newer bizops-sync, a stream table that disagrees) pass as they are.
 */
export function openMirrorFile(dbPath: string, options: { readonly?: boolean } = {}): MirrorDatabase {
  if (dbPath !== ':memory:' && existsSync(dbPath) && statSync(dbPath).isDirectory()) {
    throw new ConfigError(`BIZOPS_DB (dbPath): ${dbPath} is a directory; give the path of the mirror's file, e.g. ${dbPath.replace(/\/+$/, '')}/mirror.db`);
  }
  try {
    return openMirror(dbPath, { readonly: options.readonly ?? false });
  } catch (error) {
    throw classifyMirrorError(dbPath, error);
  }
}

/** The error `openMirrorFile` throws for `error` from SQLite (see there). */
export function classifyMirrorError(dbPath: string, error: unknown): unknown {
  const code = (error as { code?: unknown }).code ?? (error as { cause?: { code?: unknown } }).cause?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (typeof code === 'string' && DAMAGED_CODES.has(code)) {
    return new MirrorDamagedError(`the mirror ${dbPath} is damaged (${message}); restore it from a backup, or move it away and run \`bizops-sync backfill\``, { cause: error });
  }
  if (typeof code === 'string' && (code.startsWith('SQLITE_CANTOPEN') || code.startsWith('SQLITE_READONLY') || code.startsWith('SQLITE_IOERR') || code.startsWith('SQLITE_PERM') || code.startsWith('E'))) {
    return new ConfigError(`BIZOPS_DB (dbPath): cannot use ${dbPath} for the mirror (${message.replace(/^cannot open the mirror database [^:]*: /, '')}); it must be a writable file path`, { cause: error });
  }
  return error;
}

/**
 * Opens the mirror file at `dbPath` for a job that only reads or administers it (`status`, `changes`,
 * `write`, `webhooks`): no API settings needed.
 * @throws MirrorMissingError `no mirror at <path> yet: run \`bizops-sync backfill\` first` when the file does not exist
 * @throws ConfigError / MirrorDamagedError as `openMirrorFile`
 */
export function openExistingMirror(dbPath: string, options: { readonly?: boolean; hint?: string } = {}): MirrorDatabase {
  if (dbPath !== ':memory:' && !existsSync(dbPath)) throw new MirrorMissingError(`no mirror at ${dbPath} yet: ${options.hint ?? 'run `bizops-sync backfill` first'}`);
  return openMirrorFile(dbPath, { readonly: options.readonly ?? false });
}
