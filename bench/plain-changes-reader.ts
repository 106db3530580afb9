/**
 * The yardstick of `bench/changelog.ts`: the least a program can do to print the changelog as JSON
 * lines: one better-sqlite3 `iterate()` over `changes`, each row printed with its `data` parsed, in
 * 64 KiB writes that wait for stdout to drain.
 * Usage: `node bench/plain-changes-reader.ts MIRROR.db > lines`
 */
import { once } from 'node:events';
import Database from 'better-sqlite3';

const db = new Database(process.argv[2]!, { readonly: true, fileMustExist: true });
let buffer = '';
for (const row of db.prepare('SELECT seq, event_id, type, stream, record_id, occurred_at, data FROM changes ORDER BY seq').iterate() as IterableIterator<Record<string, unknown>>) {
  buffer += `${JSON.stringify({ ...row, data: JSON.parse(row.data as string) as unknown })}\n`;
  if (buffer.length >= 65_536) {
    if (!process.stdout.write(buffer)) await once(process.stdout, 'drain');
    buffer = '';
  }
}
process.stdout.write(buffer);
db.close();
