/**
 * The few pieces of SQL that differ between SQLite and PostgreSQL, so that every statement of the
 * mirror's modules is written once (src/mirror/sql/executor.ts).
 */
import type { SqlDialect, SqlParameter } from './executor.ts';

/**
 * A subquery listing the strings of a JSON array bound to its one `?`: `WHERE id IN ${jsonArrayValues(dialect)}`
 * with `JSON.stringify(ids)` as the parameter. One parameter whatever the number of ids (SQLite
 * limits a statement's parameters; PostgreSQL plans one statement for every page size).
 */
export function jsonArrayValues(dialect: SqlDialect): string {
  return dialect === 'sqlite' ? '(SELECT value FROM json_each(?))' : '(SELECT jsonb_array_elements_text(?::jsonb))';
}

/**
 * `<column>` is one of the strings of a list bound to the condition's one `?`, given as
 * `listParameter(dialect, values)`: SQLite `column IN (SELECT value FROM json_each(?))` (the list as
 * JSON text), PostgreSQL `column = ANY(?::text[])` (the list as a `text[]`, executor.ts `SqlArray`:
 * planned as one index scan over the list, cheaper to plan than a join with a set-returning function).
 * One parameter whatever the number of values, like `jsonArrayValues`.
 * @param column a column name of the statement, never user input
 */
export function inList(dialect: SqlDialect, column: string): string {
  return dialect === 'sqlite' ? `${column} IN (SELECT value FROM json_each(?))` : `${column} = ANY(?::text[])`;
}

/** The parameter of an `inList` condition: `values` as JSON text (SQLite) or as the array itself (PostgreSQL). */
export function listParameter(dialect: SqlDialect, values: readonly string[]): SqlParameter {
  return dialect === 'sqlite' ? JSON.stringify(values) : values;
}

/**
 * An expression reading the text at a path inside the JSON text of `column`, the path bound to its
 * one `?` as `jsonPath(dialect, fields)` gives it: SQLite `json_extract(column, '$.a.b')`, PostgreSQL
 * `(column::jsonb #>> '{a,b}')`. NULL when the path is absent. On SQLite a number or boolean at the
 * path comes back as such (json_extract), on PostgreSQL as text: compare only string fields.
 * @param column a column name (or qualified name) of the statement, never user input
 */
export function jsonTextField(dialect: SqlDialect, column: string): string {
  return dialect === 'sqlite' ? `json_extract(${column}, ?)` : `(${column}::jsonb #>> ?)`;
}

/**
 * The parameter naming a path for `jsonTextField`: `['transaction', 'createdAt']` is `$.transaction.createdAt`
 * on SQLite, `{transaction,createdAt}` on PostgreSQL.
 * @throws Error naming the field when a field name is empty or holds a character the path syntax would read (`.`, `,`, quotes, braces, brackets, `$`)
 */
export function jsonPath(dialect: SqlDialect, fields: readonly string[]): string {
  for (const field of fields) {
    if (field === '' || /[.,"'{}[\]$\s]/.test(field)) throw new Error(`jsonPath: field "${field}" must be a plain name (no dots, commas, quotes, braces, brackets, $ or spaces)`);
  }
  return dialect === 'sqlite' ? `$.${fields.join('.')}` : `{${fields.join(',')}}`;
}

/**
 * The database's clock now, as ISO 8601 text in UTC with milliseconds (`2026-11-23T21:30:00.123Z`):
 * SQLite's `strftime(... 'now')` (this host's clock; one SQLite file has one host), PostgreSQL's
 * `clock_timestamp()` (the server's clock, whichever host asks). No parameter. Leases judge expiry
 * by it (src/mirror/leases.ts), so that two hosts' clocks never decide who holds what.
 */
export function databaseNow(dialect: SqlDialect): string {
  return dialect === 'sqlite' ? "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')" : `to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

/**
 * The database's clock plus a number of seconds bound to its one `?` (a number, fractions allowed),
 * in the format of `databaseNow`.
 */
export function databaseNowPlusSeconds(dialect: SqlDialect): string {
  return dialect === 'sqlite'
    ? "strftime('%Y-%m-%dT%H:%M:%fZ', 'now', printf('%+.3f seconds', ?))"
    : `to_char((clock_timestamp() + make_interval(secs => ?::double precision)) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}
