/** The error a command throws for bad usage (program.ts re-exports it; its own module so that light entry points need not load the whole program). */

/** A failure the user can act on: printed as one line, exit code given. */
export class UsageError extends Error {
  override name = 'UsageError';
  readonly exitCode: number;
  constructor(message: string, exitCode = 2) {
    super(message);
    this.exitCode = exitCode;
  }
}
