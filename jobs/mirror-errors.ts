/**
 * The errors of opening and reading a mirror file that the CLI reports as one line, exit 1
 * (open-mirror.ts, status.ts and context.ts re-export them). Their own module, without SQLite, so
 * that the error reporting recognises them at no loading cost.
 */

/** The mirror file a job reads does not exist yet: nothing has run. The message says what to run. */
export class MirrorMissingError extends Error {
  override name = 'MirrorMissingError';
}

/**
 * The mirror file exists but SQLite cannot read it (a damaged header or page, not a database at
 * all): a runtime failure (exit 1), not a configuration one. The message names the file and what to do.
 */
export class MirrorDamagedError extends Error {
  override name = 'MirrorDamagedError';
}

/** The mirror's schema is older than this build's: `status` reads, it never migrates. */
export class MirrorNeedsMigrationError extends Error {
  override name = 'MirrorNeedsMigrationError';
}
