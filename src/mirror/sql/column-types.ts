/**
 * The mirror's column types and how each back end stores them: the one type map that both the
 * stream tables (src/mirror/stream-tables.ts) and the PostgreSQL text of every migration
 * (src/mirror/sql/postgres-ddl.ts) follow, so that rows read back the same from either engine
 * (docs/mirror.md "Types").
 */
import type { ColumnType } from '../../streams/define-stream.ts';
import type { SqlDialect } from './executor.ts';

/** The column types a mirror table may declare, as SQLite names them. */
export const COLUMN_TYPES: readonly ColumnType[] = ['TEXT', 'INTEGER', 'REAL'];

/** How each back end stores a column type: TEXT -> text, INTEGER -> bigint, REAL -> double precision on PostgreSQL. */
export const STORED_TYPE: Record<SqlDialect, Record<ColumnType, string>> = {
  sqlite: { TEXT: 'TEXT', INTEGER: 'INTEGER', REAL: 'REAL' },
  postgres: { TEXT: 'text', INTEGER: 'bigint', REAL: 'double precision' },
};

/**
 * How a TEXT column is declared on PostgreSQL: `text` in byte order (`COLLATE "C"`), so that it sorts
 * and compares as SQLite's TEXT (BINARY) whatever the database's default collation, and its indexes
 * compare bytes instead of calling the locale (src/mirror/migrations/021_text_byte_order.ts).
 */
export const POSTGRES_TEXT_IN_BYTE_ORDER = 'text COLLATE "C"';

/** PostgreSQL's type names (`udt_name`) of the stored types, named back as the mirror's column types. */
export const POSTGRES_TYPE_NAMES: Record<string, ColumnType> = { text: 'TEXT', int8: 'INTEGER', float8: 'REAL' };

/** The column type `word` names (any case: SQLite's type names are), or undefined when it names none. */
export function columnType(word: string): ColumnType | undefined {
  const upper = word.toUpperCase();
  return COLUMN_TYPES.find((type) => type === upper);
}
