/**
 * Job: one write as stored (the `write ID` command). Reads the mirror only, like `status`: it loads
 * the mirror and the writes table, nothing of the queue or the API client.
 */
import { existsSync } from 'node:fs';
import { sqliteConnection } from '../src/mirror/sql/sqlite.ts';
import { WriteStore, type WriteRecord } from '../src/writes/store.ts';
import { openExistingMirror } from './open-mirror.ts';

/** `bizops-sync write ID`: one write as stored, or undefined (also when there is no mirror yet). */
export async function readWrite(dbPath: string, id: string): Promise<WriteRecord | undefined> {
  if (dbPath !== ':memory:' && !existsSync(dbPath)) return undefined;
  const connection = sqliteConnection(openExistingMirror(dbPath, { readonly: true }));
  try {
    return await new WriteStore(connection).get(id);
  } finally {
    await connection.close();
  }
}
