/**
 * The fair baseline of bench/pull.ts: a plain HTTP server answering `GET /changes?after=A&limit=L`
 * with the bytes the pull API answers, written as well as a person would write it by hand, without
 * the project's route table, query schema, executor or long-poll.
 *
 * The same work per request and per event as the project's route: the bearer key compared in
 * constant time over SHA-256 digests; the changelog's ends read (its last seq, what retention
 * pruned); the same page query on the same mirror file and connection pragmas; each row's stored
 * `data` parsed (a corrupt row must not reach a reader), a version-2 text spliced into the event, a
 * created event's `changes` derived from its record (every listed field `{ old: null, new }`); the
 * same JSON text out. bench/pull.ts checks that every body is byte-identical to the project's.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import Database from 'better-sqlite3';
import { STREAM_LIST } from '../src/streams/definitions.ts';

interface Row {
  seq: number;
  event_id: string;
  type: string;
  stream: string;
  record_id: string;
  occurred_at: string;
  data: string;
  partition_value: string | null;
}

const PREFIX = '{"version":2,';
const RECORD = '{"version":2,"record":';
const LISTED = new Map<string, string[][]>(STREAM_LIST.map((stream) => [stream.name, stream.listedFields.map((field) => field.split('.'))]));

/** The value at a dot path of a record (undefined when absent). */
function fieldAt(record: unknown, path: readonly string[]): unknown {
  let node = record;
  for (const part of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

/** One event's JSON text from its row, as the pull API writes it. */
function eventJson(row: Row): string {
  const parsed = JSON.parse(row.data) as Record<string, unknown>;
  let data: string;
  if (parsed.changes !== undefined) {
    data = `{${row.data.slice(PREFIX.length, -1)}`;
  } else {
    const changes: Record<string, { old: null; new: unknown }> = {};
    for (const path of LISTED.get(row.stream) ?? []) changes[path.join('.')] = { old: null, new: fieldAt(parsed.record, path) ?? null };
    const error = typeof parsed.error === 'string' ? `,"error":${JSON.stringify(parsed.error)}` : '';
    data = `{"record":${row.data.slice(RECORD.length, row.data.length - 1 - error.length)},"changes":${JSON.stringify(changes)}${error}`;
  }
  const partition = row.partition_value === null ? '' : `,"partition":${JSON.stringify(row.partition_value)}`;
  return `{"id":${JSON.stringify(row.event_id)},"type":${JSON.stringify(row.type)},"timestamp":${JSON.stringify(row.occurred_at)},"data":${data},"seq":${row.seq},"stream":${JSON.stringify(row.stream)},"record_id":${JSON.stringify(row.record_id)}${partition}}}`;
}

/**
 * Starts the plain server on 127.0.0.1 over the mirror file at `path` (opened with the project's
 * connection pragmas), answering requests that carry `Authorization: Bearer <readKey>`.
 */
export async function startPlainPullServer(path: string, readKey: string): Promise<{ url: string; server: Server; close: () => Promise<void> }> {
  const db = new Database(path);
  db.pragma('busy_timeout = 5000');
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('wal_autocheckpoint = 10000');
  db.pragma('foreign_keys = ON');
  const lastSeq = db.prepare('SELECT COALESCE(MAX(seq), 0) AS seq FROM changes');
  const pruned = db.prepare('SELECT through_seq FROM changelog_pruned WHERE id = 1');
  const page = db.prepare('SELECT seq, event_id, type, stream, record_id, occurred_at, data, partition_value FROM changes WHERE seq > ? ORDER BY seq LIMIT ?');
  const keyDigest = createHash('sha256').update(readKey).digest();
  const server = createServer((req, res) => {
    const given = (req.headers.authorization ?? '').replace(/^Bearer /, '');
    if (!timingSafeEqual(createHash('sha256').update(given).digest(), keyDigest)) {
      res.writeHead(401).end();
      return;
    }
    const query = new URL(req.url ?? '/', 'http://x').searchParams;
    const after = Number(query.get('after'));
    const limit = Number(query.get('limit') ?? 100);
    const prunedThrough = Number((pruned.get() as { through_seq: number } | undefined)?.through_seq ?? 0);
    const latest = Math.max(Number((lastSeq.get() as { seq: number }).seq), prunedThrough);
    const rows = page.all(after, limit) as Row[];
    const last = rows.at(-1)?.seq ?? after;
    const next = rows.length < limit ? Math.max(last, latest) : last;
    const body = `{"events":[${rows.map(eventJson).join(',')}],"after":${after},"next":${next},"latestSeq":${Math.max(latest, rows.at(-1)?.seq ?? 0)},"oldestSeq":${prunedThrough + 1}}\n`;
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(body)), 'cache-control': 'no-store' });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: async () => {
      await new Promise((resolve) => server.close(resolve));
      db.close();
    },
  };
}
