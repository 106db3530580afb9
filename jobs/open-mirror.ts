/**
 * Opening the mirror for a job, wherever it lives (a SQLite file path, or a PostgreSQL URL:
 * src/mirror/open.ts), and turning open failures into one line a person can act on. Kept apart
 * from context.ts (which re-exports it) so that a reader such as `bizops-sync changes` loads the
 * mirror and nothing of the worker (HTTP client, Redis, queues).
 *
 * Every message names the mirror by `mirrorLocation(dbPath)`: a file path as it is, a PostgreSQL
 * URL with its password masked.
 */
import { existsSync, statSync } from 'node:fs';
import { ConfigError } from '../src/config/index.ts';
import { maskUrlPassword } from '../src/logging/index.ts';
import { openMirrorConnection, postgresMirrorExists, isPostgresUrl, type SqlConnection } from '../src/mirror/index.ts';
import { MirrorDamagedError, MirrorMissingError } from './mirror-errors.ts';

export { MirrorDamagedError, MirrorMissingError } from './mirror-errors.ts';

/** SQLite result codes that mean the file itself is damaged (not the path or its permissions). */
const DAMAGED_CODES = new Set(['SQLITE_NOTADB', 'SQLITE_CORRUPT']);

/** The mirror's location for messages and logs: a file path as it is, a PostgreSQL URL with its password masked. */
export function mirrorLocation(dbPath: string): string {
  return maskUrlPassword(dbPath);
}

/**
 * Opens the mirror at `dbPath` (migrated, stream tables in place unless read-only), turning every
 * failure into one line a person can act on:
 * - SQLite: a path that cannot hold the mirror (a directory, a device such as /dev/null, a file
 *   used as a directory, a read-only or pseudo file system such as /proc, a missing permission): `ConfigError` naming BIZOPS_DB (exit 2); a file SQLite cannot
 *   read (`file is not a database`, `database disk image is malformed`): `MirrorDamagedError` (exit 1).
 * - PostgreSQL: a server that does not answer, a refused login, a missing database: Error
 *   `cannot connect to the PostgreSQL mirror at <URL, password masked>: <reason>`.
 * Other errors (a mirror written by a newer bizops-sync, a stream table that disagrees) pass as they are.
 */
export async function openMirrorAt(dbPath: string, options: { readonly?: boolean; idleInTransactionTimeoutMs?: number; busyTimeoutMs?: number; nonBlocking?: boolean } = {}): Promise<SqlConnection> {
  if (isPostgresUrl(dbPath)) return openMirrorConnection(dbPath, { readonly: options.readonly ?? false, idleInTransactionTimeoutMs: options.idleInTransactionTimeoutMs });
  if (dbPath !== ':memory:' && existsSync(dbPath) && statSync(dbPath).isDirectory()) {
    throw new ConfigError(`BIZOPS_DB (dbPath): ${dbPath} is a directory; give the path of the mirror's file, e.g. ${dbPath.replace(/\/+$/, '')}/mirror.db`);
  }
  if (dbPath !== ':memory:' && existsSync(dbPath) && !statSync(dbPath).isFile()) {
    throw new ConfigError(`BIZOPS_DB (dbPath): ${dbPath} is not a regular file (a device, a pipe or a socket); give the path of the mirror's file`);
  }
  try {
    return await openMirrorConnection(dbPath, { readonly: options.readonly ?? false, busyTimeoutMs: options.busyTimeoutMs, nonBlocking: options.nonBlocking ?? false });
  } catch (error) {
    throw classifyMirrorError(dbPath, error);
  }
}

/** The error `openMirrorAt` throws for `error` from SQLite (see there); other errors pass as they are. */
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
 * The documented line for a mirror found damaged while a job worked on it (a page read or written
 * after the open: `database disk image is malformed`), when `error` is that; undefined otherwise.
 * Jobs that read or write pages after the open (`sync`, `backfill`, `changes`) throw it instead of
 * SQLite's bare message (docs/operations.md "A damaged mirror").
 * @returns MirrorDamagedError naming the file and the remedy, or undefined
 */
export function damagedMirrorError(dbPath: string, error: unknown): MirrorDamagedError | undefined {
  const classified = classifyMirrorError(dbPath, error);
  return classified instanceof MirrorDamagedError ? classified : undefined;
}

/**
 * True when a mirror exists at `dbPath`: the SQLite file exists; the PostgreSQL schema exists and
 * holds a migrated mirror (a `schema_version` row). Connects to PostgreSQL once to ask.
 * @throws Error naming the masked URL when PostgreSQL does not answer
 */
export async function mirrorExists(dbPath: string): Promise<boolean> {
  if (!isPostgresUrl(dbPath)) return dbPath === ':memory:' || existsSync(dbPath);
  return postgresMirrorExists(dbPath);
}

/**
 * Opens the existing mirror at `dbPath` for a job that only reads or administers it (`status`,
 * `changes`, `write`, `webhooks`): no API settings needed, nothing created.
 * @throws MirrorMissingError `no mirror at <location> yet: run \`bizops-sync backfill\` first` when
 *   the file, or the PostgreSQL schema, does not exist (the URL's password masked)
 * @throws ConfigError / MirrorDamagedError / Error as `openMirrorAt`
 */
export async function openExistingMirror(dbPath: string, options: { readonly?: boolean; hint?: string } = {}): Promise<SqlConnection> {
  if (!(await mirrorExists(dbPath))) throw new MirrorMissingError(`no mirror at ${mirrorLocation(dbPath)} yet: ${options.hint ?? 'run `bizops-sync backfill` first'}`);
  return openMirrorAt(dbPath, { readonly: options.readonly ?? false });
}
