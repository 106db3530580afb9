/**
 * Job: one write as stored (the `write ID` command). Reads the mirror only, like `status`: it loads
 * SQLite and the writes table, nothing of the queue or the API client.
 */
import { existsSync } from 'node:fs';
import { WriteStore, type WriteRecord } from '../src/writes/store.ts';
import { openExistingMirror } from './open-mirror.ts';

/** `bizops-sync write ID`: one write as stored, or undefined (also when there is no mirror yet). */
export function readWrite(dbPath: string, id: string): WriteRecord | undefined {
  if (dbPath !== ':memory:' && !existsSync(dbPath)) return undefined;
  const db = openExistingMirror(dbPath, { readonly: true });
  try {
    return new WriteStore(db).get(id);
  } finally {
    db.close();
  }
}
