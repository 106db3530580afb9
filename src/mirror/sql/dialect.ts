/**
 * The few pieces of SQL that differ between SQLite and PostgreSQL, so that every statement of the
 * mirror's modules is written once (src/mirror/sql/executor.ts).
 */
import type { SqlDialect } from './executor.ts';

/**
 * A subquery listing the strings of a JSON array bound to its one `?`: `WHERE id IN ${jsonArrayValues(dialect)}`
 * with `JSON.stringify(ids)` as the parameter. One parameter whatever the number of ids (SQLite
 * limits a statement's parameters; PostgreSQL plans one statement for every page size).
 */
export function jsonArrayValues(dialect: SqlDialect): string {
  return dialect === 'sqlite' ? '(SELECT value FROM json_each(?))' : '(SELECT jsonb_array_elements_text(?::jsonb))';
}
