/**
 * The yardstick of `bench/changelog.ts` and `bench/memory.ts`: the least a program can do to print
 * the changelog as the same JSON lines `bizops-sync changes` prints: one better-sqlite3 `iterate()`
 * over `changes`, each row's columns written as JSON and its stored `data` spliced in as it is
 * (`{"version":2,...}` stored, `"version":2` moved to the line and the rest of `data` kept as text,
 * never parsed nor serialised again), in 64 KiB writes that wait for stdout to drain. Its lines are
 * byte-identical to the command's for version-2 rows.
 * Usage: `node bench/plain-changes-reader.ts MIRROR.db > lines`
 */
import { once } from 'node:events';
import Database from 'better-sqlite3';

const VERSION_PREFIX = '{"version":2,';
const db = new Database(process.argv[2]!, { readonly: true, fileMustExist: true });
let buffer = '';
for (const row of db.prepare('SELECT seq, event_id, type, stream, record_id, occurred_at, data FROM changes ORDER BY seq').iterate() as IterableIterator<{
  seq: number;
  event_id: string;
  type: string;
  stream: string;
  record_id: string;
  occurred_at: string;
  data: string;
}>) {
  const versioned = row.data.startsWith(VERSION_PREFIX);
  const data = versioned ? `{${row.data.slice(VERSION_PREFIX.length)}` : row.data;
  buffer += `{"seq":${row.seq},${versioned ? '"version":2,' : ''}"event_id":${JSON.stringify(row.event_id)},"type":${JSON.stringify(row.type)},"stream":${JSON.stringify(row.stream)},"record_id":${JSON.stringify(row.record_id)},"occurred_at":${JSON.stringify(row.occurred_at)},"data":${data}}\n`;
  if (buffer.length >= 65_536) {
    if (!process.stdout.write(buffer)) await once(process.stdout, 'drain');
    buffer = '';
  }
}
process.stdout.write(buffer);
db.close();
