/**
 * Where a PostgreSQL mirror lives, read from its URL (docs/mirror.md "PostgreSQL"), without loading
 * the driver: the configuration checks `dbPath` with it.
 *
 *   postgres://user:password@host:5432/database?schema=acme
 *
 * `postgres://` and `postgresql://` are both accepted. `schema` names the PostgreSQL schema that
 * holds the mirror's tables (default `bizops`): one schema per mirror, so several connections share
 * one database, each in its own schema (`?schema={connection}` in the configuration). Every other
 * query parameter (`sslmode`, `application_name`, ...) is the driver's (node-postgres).
 */
import { maskUrlPassword } from '../../logging/mask-url.ts';

/** The schema of a mirror whose URL names none. */
export const DEFAULT_POSTGRES_SCHEMA = 'bizops';

/**
 * A schema name: lowercase letters, digits, `_` and `-` (connection names are made of these), at
 * most 63 characters (PostgreSQL's identifier length). Always written quoted in SQL.
 */
const SCHEMA_NAME = /^[a-z0-9_][a-z0-9_-]{0,62}$/;

/** A PostgreSQL mirror's URL, taken apart. */
export interface PostgresLocation {
  /** The URL for the driver: the one given without its `schema` parameter. */
  connectionString: string;
  /** The schema holding the mirror's tables. */
  schema: string;
  /** The URL as given with its password masked (`postgres://user:***@host/db?schema=acme`), for messages. */
  location: string;
  /** The password in the URL ('' when none), so that messages can be checked not to carry it. */
  password: string;
}

/** True when `location` is a PostgreSQL URL (`postgres://` or `postgresql://`) rather than a SQLite file path. */
export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}

/**
 * True when `location` looks like a URL of another kind (`mysql://...`): a mistake rather than a
 * file path, which the configuration refuses.
 */
export function isOtherUrl(location: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(location) && !isPostgresUrl(location);
}

/**
 * Takes a PostgreSQL mirror URL apart.
 * @throws Error naming the masked URL when it is not a URL, or when its `schema` is not a valid
 *   schema name (lowercase letters, digits, `_`, `-`, at most 63), or is given twice
 */
export function parsePostgresLocation(url: string): PostgresLocation {
  const location = maskUrlPassword(url);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`${location} is not a valid PostgreSQL URL (postgres://user:password@host:5432/database?schema=name)`);
  }
  if (!isPostgresUrl(url)) throw new Error(`${location} is not a PostgreSQL URL: it must start with postgres:// or postgresql://`);
  const schemas = parsed.searchParams.getAll('schema');
  if (schemas.length > 1) throw new Error(`${location}: schema is given ${schemas.length} times; give it once`);
  const schema = schemas[0] ?? DEFAULT_POSTGRES_SCHEMA;
  if (!SCHEMA_NAME.test(schema)) {
    throw new Error(`${location}: schema "${schema}" must be lowercase letters, digits, _ and - (starting with a letter, digit or _), at most 63 characters`);
  }
  parsed.searchParams.delete('schema');
  return { connectionString: parsed.toString(), schema, location, password: decodeURIComponent(parsed.password) };
}

/** `name` as a quoted SQL identifier (`"acme-eu"`). Schema names never hold a `"` (SCHEMA_NAME). */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
