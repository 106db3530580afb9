/**
 * The fair plain loop bench/backfill.ts measures `bizops-sync backfill --stream transactions`
 * against: the least a program can do to leave the same mirror behind, run as a child process.
 *
 * `node bench/plain-backfill.ts BASE_URL TOKEN MIRROR_PATH`: the mirror at MIRROR_PATH is one the
 * project created (empty, migrated: the bench opens it with `openMirror` first). The loop opens it
 * with plain better-sqlite3 and the project's pragmas (WAL, `synchronous = NORMAL`,
 * `wal_autocheckpoint = 10000`, `foreign_keys`, `busy_timeout`), then pages through
 * `GET /api/public/v1/transactions?sortBy=createdAt&sortOrder=asc&limit=100&offset=N` with Node's fetch (from
 * the second page on with `createdBefore` = the first answer's `Date`, as the sync does), and per
 * page in one transaction: per record its JSON text, the same SHA-256 content hash, an upsert of
 * its row (typed columns, raw, hash, first seen, synced, scan 1) and its changelog row (the same
 * version-2 `data`, byte-identical to the project's), then the checkpoint written to `sync_state`;
 * at the end the cursor and counts. No validation, no change detection, no read of the mirror.
 * Prints the records it stored.
 */
import Database from 'better-sqlite3';
// The project's content hash and event ids from their own modules, which import only node:crypto: the
// modules around them (the stream definitions, zod: about 0.1-0.15 s of CPU at start) stay unloaded,
// as this loop never uses them.
import { contentHash } from '../src/mirror/content-hash.ts';
import { timeOrderedUuid } from '../src/mirror/time-ordered-uuid.ts';

const [baseUrl, token, path] = process.argv.slice(2);
if (!baseUrl || !token || !path) throw new Error('usage: node bench/plain-backfill.ts BASE_URL TOKEN MIRROR_PATH');

const db = new Database(path);
db.pragma('busy_timeout = 5000');
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.pragma('wal_autocheckpoint = 10000');
db.pragma('foreign_keys = ON');

const upsert = db.prepare(
  `INSERT INTO transactions (id, type, status, amount, description, date, raw, content_hash, first_seen_at, synced_at, last_seen_scan, missed_scans)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 0)
   ON CONFLICT (id) DO UPDATE SET type = excluded.type, status = excluded.status, amount = excluded.amount, description = excluded.description,
     date = excluded.date, raw = excluded.raw, content_hash = excluded.content_hash, synced_at = excluded.synced_at, deleted_at = NULL,
     last_seen_scan = excluded.last_seen_scan, missed_scans = 0`,
);
const change = db.prepare("INSERT INTO changes (event_id, type, stream, record_id, occurred_at, data) VALUES (?, 'transaction.created', 'transactions', ?, ?, ?)");
const checkpoint = db.prepare("UPDATE sync_state SET run = ? WHERE stream = 'transactions' AND partition_value = ''");
db.prepare("INSERT INTO sync_state (stream, partition_value) VALUES ('transactions', '') ON CONFLICT DO NOTHING").run();

interface Row {
  id: string;
  type: string;
  status: string;
  amount: number;
  description: string;
  date: string;
}

const startedAt = new Date().toISOString();
const storePage = db.transaction((rows: Row[], run: Record<string, unknown>) => {
  const now = new Date().toISOString();
  for (const row of rows) {
    const raw = JSON.stringify(row);
    upsert.run(row.id, row.type, row.status, row.amount, row.description, row.date, raw, contentHash(row as never, raw), now, now);
    change.run(`evt_${timeOrderedUuid()}`, row.id, now, `{"version":2,"record":${raw}}`);
  }
  checkpoint.run(JSON.stringify(run));
});

let offset = 0;
let createdBefore: string | undefined;
let pages = 0;
for (;;) {
  const query = new URLSearchParams({ sortBy: 'createdAt', sortOrder: 'asc', ...(createdBefore ? { createdBefore } : {}), limit: '100', offset: String(offset) });
  const response = await fetch(`${baseUrl}/api/public/v1/transactions?${query}`, { headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
  if (response.status !== 200) throw new Error(`GET /transactions answered ${response.status}`);
  createdBefore ??= new Date(response.headers.get('date') ?? Date.now()).toISOString();
  const rows = ((await response.json()) as { content: { transactions: Row[] } }).content.transactions;
  offset += rows.length;
  pages += 1;
  storePage(rows, { mode: 'complete', reason: 'backfill', startedAt, offset, pages, records: offset, changes: offset, createdBefore, scanNumber: 1 });
  if (rows.length < 100) break;
}
db.prepare("UPDATE sync_state SET run = NULL, cursor = ?, scan_number = 1, last_run_records = ?, last_run_changes = ?, last_success_at = ? WHERE stream = 'transactions' AND partition_value = ''").run(
  createdBefore!,
  offset,
  offset,
  new Date().toISOString(),
);
db.close();
console.log(offset);
