/**
 * Job: one write as stored (the `write ID` command). Reads the mirror only, like `status`: it loads
 * the mirror and the writes table, nothing of the queue or the API client.
 */
import { WriteStore, type WriteRecord } from '../src/writes/index.ts';
import { mirrorExists, openMirrorAt } from './open-mirror.ts';

/** `bizops-sync write ID`: one write as stored, or undefined (also when there is no mirror yet). */
export async function readWrite(dbPath: string, id: string): Promise<WriteRecord | undefined> {
  if (!(await mirrorExists(dbPath))) return undefined;
  const connection = await openMirrorAt(dbPath, { readonly: true });
  try {
    return await new WriteStore(connection).get(id);
  } finally {
    await connection.close();
  }
}
