/**
 * The storability rule (src/client/storable-json.ts) against the two databases it speaks for: what
 * it calls storable, PostgreSQL 15 casts to `jsonb` and SQLite's JSON functions read; what PostgreSQL
 * or SQLite refuses, it refuses; a storable copy of anything is storable on both. Iterative: no
 * input, however deep, overflows the stack.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { escapeUnstorable, isStorable, MAX_JSON_DEPTH, storabilityIssue, storableCopy, TOO_DEEP_MARKER } from '../../src/client/storable-json.ts';

const POSTGRES_URL = process.env.BIZOPS_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const sqlite = new Database(':memory:');
const postgres = new pg.Client({ connectionString: POSTGRES_URL });
const connected = postgres.connect();
afterAll(async () => {
  sqlite.close();
  await postgres.end();
});

/** `[[...]]`, `levels` arrays deep, built without recursion. */
function nested(levels: number): unknown[] {
  let value: unknown[] = [];
  for (let level = 1; level < levels; level += 1) value = [value];
  return value;
}

/** Whether PostgreSQL casts the JSON text to jsonb and SQLite's json_each reads it. */
async function bothStore(text: string): Promise<{ postgres: boolean; sqlite: boolean }> {
  const onPostgres = await postgres.query('SELECT $1::jsonb IS NOT NULL AS ok', [text]).then(
    () => true,
    () => false,
  );
  let onSqlite: boolean;
  try {
    sqlite.prepare('SELECT count(*) AS n FROM json_each(?)').get(text);
    onSqlite = (sqlite.prepare('SELECT json_valid(?) AS ok').get(text) as { ok: number }).ok === 1;
  } catch {
    onSqlite = false;
  }
  return { postgres: onPostgres, sqlite: onSqlite };
}

const SAMPLES: [string, unknown][] = [
  ['plain record', { id: 'txn_1', amount: -1250, description: 'Catering', tags: ['a', 'b'], nested: { ok: true, none: null } }],
  ['emoji (a surrogate pair)', { description: 'Cake \ud83c\udf82' }],
  ['non-characters', { description: '\uffff\ufffe' }],
  ['control characters but NUL', { description: 'a\u0001\u001fb\t\n' }],
  ['NUL in a value', { description: 'Cater\u0000ing' }],
  ['NUL in a key', { 'tip\u0000': 1 }],
  ['lone high surrogate', { description: 'a\ud800' }],
  ['lone low surrogate', ['\udc00x']],
  ['lone surrogate in a key', { nested: { 'k\udbff': 'v' } }],
  ['surrogates the wrong way round', { description: '\udc00\ud800' }],
  [`${MAX_JSON_DEPTH} levels`, nested(MAX_JSON_DEPTH)],
];

describe('the storability rule', () => {
  it('agrees with PostgreSQL jsonb and SQLite JSON on every sample it calls storable or not (text, keys)', async () => {
    await connected;
    for (const [name, value] of SAMPLES) {
      const stored = await bothStore(JSON.stringify(value));
      expect({ name, storable: isStorable(value) }).toEqual({ name, storable: stored.postgres && stored.sqlite });
      expect(storabilityIssue(value) === undefined, name).toBe(isStorable(value));
      // Its storable copy is storable, here and on both databases.
      const copy = storableCopy(value);
      expect(isStorable(copy), name).toBe(true);
      expect(await bothStore(JSON.stringify(copy)), name).toEqual({ postgres: true, sqlite: true });
    }
  });

  it(`refuses nesting past ${MAX_JSON_DEPTH} levels, well inside what SQLite (1000) and PostgreSQL refuse; never a stack overflow`, async () => {
    await connected;
    expect(await bothStore(JSON.stringify(nested(1001)))).toMatchObject({ sqlite: false });
    expect(isStorable(nested(MAX_JSON_DEPTH + 1))).toBe(false);
    expect(storabilityIssue({ notes: nested(1001) })).toEqual({ path: ['notes'], kind: 'depth', rule: expect.stringContaining(`more than ${MAX_JSON_DEPTH} levels deep`) });
    // 100,000 levels, twenty times what a recursive walk survives: JSON.parse builds it; every walk here is iterative.
    const deepest = JSON.parse(`{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}`) as unknown;
    expect(isStorable(deepest)).toBe(false);
    expect(storabilityIssue(deepest)?.kind).toBe('depth');
    const copy = storableCopy(deepest);
    expect(isStorable(copy)).toBe(true);
    expect(JSON.stringify(copy)).toContain(JSON.stringify(TOO_DEEP_MARKER));
  });

  it('names the first broken place, with an unstorable key escaped; refuses what is not JSON', () => {
    expect(storabilityIssue({ a: [1, { b: 'x\u0000' }] })).toEqual({ path: ['a', 1, 'b'], kind: 'text', rule: 'must not contain the NUL character (U+0000): the mirror cannot store it' });
    expect(storabilityIssue({ a: { 'k\ud800': 1 } })).toMatchObject({ path: ['a', 'k\\ud800'], rule: expect.stringMatching(/^its name must not contain an unpaired surrogate \(U\+D800 at character 2/) });
    expect(escapeUnstorable('a\u0000b\ud83c\udf82\udc00')).toBe('a\\u0000b\ud83c\udf82\\udc00');
    expect(storabilityIssue({ amount: Number.NaN })).toMatchObject({ path: ['amount'], kind: 'value' });
    expect(storabilityIssue({ when: new Date(0) })).toMatchObject({ path: ['when'], kind: 'value' });
    expect(isStorable({ optional: undefined })).toBe(true);
  });
});
