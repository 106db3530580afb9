import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { MirrorFileLockedError, mirrorFileLockedCount, sqliteConnection, type SqliteConnection } from '../../src/mirror/sql/sqlite.ts';

const opened: SqliteConnection[] = [];
function open(path: string, nonBlocking = false): SqliteConnection {
  const database = new Database(path);
  database.pragma('journal_mode = WAL');
  database.pragma('busy_timeout = 100');
  const connection = sqliteConnection(database, { nonBlocking });
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

  it('nonBlocking: a write on a file another process holds write-locked fails with MirrorFileLockedError, counted, without waiting on the busy timeout; a lock released between its tries lets it through', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'sql-')), 'm.db');
    const setup = open(path);
    await setup.exec('CREATE TABLE t (id TEXT PRIMARY KEY)');
    // Another process's handle (SQLite's own file lock, not this process's), holding the write lock.
    const other = new Database(path);
    other.exec('BEGIN IMMEDIATE');
    // Its handle would wait 5 s synchronously (better-sqlite3's default): the connection sets it to 0.
    const daemonDb = sqliteConnection(new Database(path), { nonBlocking: true });
    opened.push(daemonDb);
    expect(daemonDb.sqlite.pragma('busy_timeout', { simple: true })).toBe(0);
    const before = mirrorFileLockedCount(path);
    const insert = daemonDb.run('INSERT INTO t (id) VALUES (?)', ['a']);
    await expect(insert).rejects.toThrow(MirrorFileLockedError);
    await expect(insert).rejects.toThrow(/^the mirror file is locked by another process: /);
    await expect(daemonDb.transaction((tx) => tx.run('INSERT INTO t (id) VALUES (?)', ['b']))).rejects.toMatchObject({ name: 'MirrorFileLockedError', code: 'SQLITE_BUSY' });
    expect(mirrorFileLockedCount(path)).toBe(before + 2);
    // Reads go on meanwhile (WAL).
    expect(await daemonDb.all('SELECT id FROM t')).toEqual([]);

    // A statement's first try runs at once (and fails); the lock is released before its next try.
    const statement = daemonDb.run('INSERT INTO t (id) VALUES (?)', ['c']);
    other.exec('COMMIT');
    await statement;
    await daemonDb.transaction((tx) => tx.run('INSERT INTO t (id) VALUES (?)', ['d']));
    expect(await daemonDb.all('SELECT id FROM t ORDER BY id')).toEqual([{ id: 'c' }, { id: 'd' }]);
    expect(mirrorFileLockedCount(path)).toBe(before + 2);
    other.close();
  });
});
