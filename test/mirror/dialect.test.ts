/**
 * The SQL that differs between the back ends (src/mirror/sql/dialect.ts), run on each: SQLite
 * through its executor, PostgreSQL 15 (127.0.0.1:5432, or BIZOPS_TEST_POSTGRES) through plain `pg`
 * with the `?` placeholders numbered, as its back end does.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { jsonArrayValues, jsonPath, jsonTextField } from '../../src/mirror/sql/dialect.ts';
import { sqliteConnection } from '../../src/mirror/sql/sqlite.ts';

const POSTGRES_URL = process.env.BIZOPS_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const sqlite = sqliteConnection(new Database(':memory:'));
const postgres = new pg.Client({ connectionString: POSTGRES_URL });
const connected = postgres.connect();
afterAll(async () => {
  await sqlite.close();
  await postgres.end();
});

/** `?` placeholders as PostgreSQL's `$1, $2, ...`. */
function numbered(sql: string): string {
  let index = 0;
  return sql.replace(/\?/g, () => `$${++index}`);
}

const WRITE_RESULT = JSON.stringify({ transaction: { id: 'txn_1', createdAt: '2026-11-20T10:00:00.000Z' }, count: 3 });

describe('the SQL dialect', () => {
  it('reads a JSON text field at a path on SQLite and on PostgreSQL alike, NULL when the path is absent', async () => {
    await connected;
    const present = `SELECT ${jsonTextField('sqlite', 'result')} AS stamp FROM (SELECT ? AS result) AS w`;
    const row = await sqlite.get(present, [jsonPath('sqlite', ['transaction', 'createdAt']), WRITE_RESULT]);
    expect(row).toEqual({ stamp: '2026-11-20T10:00:00.000Z' });
    expect(await sqlite.get(present, [jsonPath('sqlite', ['deal', 'updatedAt']), WRITE_RESULT])).toEqual({ stamp: null });

    // The path binds first (in the SELECT list), the row second, as on SQLite.
    const query = numbered(`SELECT ${jsonTextField('postgres', 'result')} AS stamp FROM (SELECT ?::text AS result) AS w`);
    expect((await postgres.query(query, [jsonPath('postgres', ['transaction', 'createdAt']), WRITE_RESULT])).rows).toEqual([{ stamp: '2026-11-20T10:00:00.000Z' }]);
    expect((await postgres.query(query, [jsonPath('postgres', ['deal', 'updatedAt']), WRITE_RESULT])).rows).toEqual([{ stamp: null }]);
  });

  it('lists the strings of a JSON array bound to one parameter, on both back ends', async () => {
    await connected;
    const ids = JSON.stringify(['a', 'c']);
    const rows = await sqlite.all(`SELECT id FROM (SELECT 'a' AS id UNION ALL SELECT 'b' UNION ALL SELECT 'c') AS t WHERE id IN ${jsonArrayValues('sqlite')} ORDER BY id`, [ids]);
    expect(rows).toEqual([{ id: 'a' }, { id: 'c' }]);
    const result = await postgres.query(numbered(`SELECT id FROM (VALUES ('a'), ('b'), ('c')) AS t (id) WHERE id IN ${jsonArrayValues('postgres')} ORDER BY id`), [ids]);
    expect(result.rows).toEqual([{ id: 'a' }, { id: 'c' }]);
  });

  it('refuses a path field the path syntax would read, naming it', () => {
    expect(jsonPath('sqlite', ['deal', 'updatedAt'])).toBe('$.deal.updatedAt');
    expect(jsonPath('postgres', ['deal', 'updatedAt'])).toBe('{deal,updatedAt}');
    expect(() => jsonPath('postgres', ['a,b'])).toThrow('jsonPath: field "a,b" must be a plain name');
    expect(() => jsonPath('sqlite', ['a.b'])).toThrow('field "a.b"');
  });
});
