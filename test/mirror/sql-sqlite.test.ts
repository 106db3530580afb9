import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { sqliteConnection, type SqliteConnection } from '../../src/mirror/sql/sqlite.ts';

const opened: SqliteConnection[] = [];
function open(path: string): SqliteConnection {
  const database = new Database(path);
  database.pragma('journal_mode = WAL');
  database.pragma('busy_timeout = 100');
  const connection = sqliteConnection(database);
  opened.push(connection);
  return connection;
}

afterEach(async () => {
  for (const connection of opened.splice(0)) await connection.close();
});

describe('the SQLite executor', () => {
  it('commits a transaction when its body resolves and rolls it back when it throws', async () => {
    const db = open(join(mkdtempSync(join(tmpdir(), 'sql-')), 'm.db'));
    await db.exec('CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER)');
    await db.transaction(async (tx) => {
      await tx.run('INSERT INTO t (id, n) VALUES (?, ?)', ['a', 1]);
      // Nested: joins the outer transaction.
      await tx.transaction((inner) => inner.run('INSERT INTO t (id, n) VALUES (?, ?)', ['b', 2]));
    });
    await expect(
      db.transaction(async (tx) => {
        await tx.run('INSERT INTO t (id, n) VALUES (?, ?)', ['c', 3]);
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await db.all('SELECT id FROM t ORDER BY id')).toEqual([{ id: 'a' }, { id: 'b' }]);
    expect(await db.get('SELECT n FROM t WHERE id = ?', ['b'])).toEqual({ n: 2 });
    expect(await db.get('SELECT n FROM t WHERE id = ?', ['zz'])).toBeUndefined();
  });

  it('keeps a statement of another connection to the same file out of an open transaction, without a busy error', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'sql-')), 'm.db');
    const first = open(path);
    const second = open(path);
    await first.exec('CREATE TABLE t (id TEXT PRIMARY KEY)');
    const seenInside: unknown[] = [];
    let insert: Promise<unknown> | undefined;
    await first.transaction(async (tx) => {
      await tx.run("INSERT INTO t (id) VALUES ('in-transaction')");
      // Another part of the process writes while the transaction is open (between two awaits).
      insert = second.run("INSERT INTO t (id) VALUES ('other-connection')");
      await tx.run("INSERT INTO t (id) VALUES ('in-transaction-2')");
      seenInside.push(...(await tx.all('SELECT id FROM t ORDER BY id')));
    });
    await insert;
    expect(seenInside).toEqual([{ id: 'in-transaction' }, { id: 'in-transaction-2' }]);
    expect(await second.all('SELECT id FROM t ORDER BY id')).toEqual([{ id: 'in-transaction' }, { id: 'in-transaction-2' }, { id: 'other-connection' }]);
  });

  it('refuses a transaction executor used after its transaction ended, and reports a bad statement as a rejection', async () => {
    const db = open(':memory:');
    await db.exec('CREATE TABLE t (id TEXT)');
    let kept: { run: (sql: string) => Promise<unknown> } | undefined;
    await db.transaction(async (tx) => {
      kept = tx;
    });
    await expect(kept!.run("INSERT INTO t VALUES ('late')")).rejects.toThrow('already ended');
    await expect(db.run('INSERT INTO missing VALUES (1)')).rejects.toThrow('no such table');
    expect(db.dialect).toBe('sqlite');
  });
});
