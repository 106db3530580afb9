/**
 * The errors of loading the configuration (load.ts re-exports them). Their own module, without the
 * schema and zod, so that the CLI's one-line error reporting recognises them at no loading cost.
 */

/** A configuration value that is missing or breaks a rule. The message names the key and the rule. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * The caller did not name a connection and several are configured, or named one that is not
 * configured. The message lists the configured names. The CLI reports it as a usage error (exit 2).
 */
export class ConnectionChoiceError extends Error {
  override name = 'ConnectionChoiceError';
  /** The configured connection names, in file order. */
  readonly names: readonly string[];
  constructor(message: string, names: readonly string[]) {
    super(message);
    this.names = names;
  }
}
