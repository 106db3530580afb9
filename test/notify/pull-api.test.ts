/**
 * The changelog over HTTP (docs/mirror.md "Reading over HTTP"): the daemon's read routes
 * (src/daemon/change-routes.ts in a route table behind the read key) on a real HTTP server over a real
 * mirror: pages with the webhook's body, long-polls woken by new changes (or by polling, for another
 * process's commits), named consumers that read, acknowledge and read on (at-least-once), and a
 * clear 4xx naming the parameter for every bad request. Conditions only, no time asserted.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { changeRoutes, CONSUMER_READ_NOTE_MS } from '../../src/daemon/change-routes.ts';
import { startDaemonHttpServer, type RunningHttpServer } from '../../src/daemon/http-server.ts';
import { RouteTable } from '../../src/http/route-table.ts';
import { openMirrorConnection } from '../../src/mirror/open.ts';
import { ChangeSignal } from '../../src/notify/pull/change-signal.ts';
import { CHANGES_QUERY, CONSUMER_CHANGES_QUERY, quickChangesQuery, quickConsumerChangesQuery, readEncodedChangesPage, readEncodedChangesPageNow } from '../../src/notify/pull/changes-page.ts';
import { describeOnSqlite } from '../sqlite-only.ts';
import { pruneChangelog } from '../../src/notify/retention.ts';
import { buildWebhookMessage } from '../../src/notify/webhooks/signing.ts';
import { readChanges } from '../../src/notify/changelog-reader.ts';
import { insertChanges, tempMirror, type TempMirror } from './helpers.ts';

const KEY = 'read-key-for-pull-api-tests';
let mirror: TempMirror;
let server: RunningHttpServer;
let signal: ChangeSignal;

beforeEach(async () => {
  mirror = await tempMirror();
  signal = new ChangeSignal();
  server = await startDaemonHttpServer({
    host: '127.0.0.1',
    port: 0,
    readiness: async () => ({ ready: true, status: 200, reason: 'test', checkedAt: null }),
    metrics: async () => ({ contentType: 'text/plain', body: '' }),
    routes: new RouteTable({ readKey: KEY }).mount(changeRoutes({ executor: mirror.connection, signal, pollMs: 50 })),
  });
});
afterEach(async () => {
  await server.close();
  await mirror.cleanup();
});

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

type Page = { events: { id: string; type: string; timestamp: string; data: { seq: number } }[]; next: number; latestSeq: number; oldestSeq: number };

describe('GET /changes', () => {
  it('pages through the changelog with the webhook body of each event and its id', async () => {
    const inserted = await insertChanges(mirror.connection, 5, { types: ['deal.won', 'transaction.created'] });
    const first = await call('GET', '/changes?after=0&limit=2');
    expect(first.status).toBe(200);
    const page = first.body as unknown as Page;
    expect(page.events.map((event) => event.data.seq)).toEqual([1, 2]);
    expect(page).toMatchObject({ next: 2, latestSeq: 5, oldestSeq: 1 });
    // The same body a webhook carries, plus its webhook-id.
    const [stored] = await readChanges(mirror.connection, { sinceSeq: 0, limit: 1 });
    expect(page.events[0]).toEqual({ id: inserted[0]!.eventId, ...JSON.parse(buildWebhookMessage(stored!).body) });
    const rest = (await call('GET', `/changes?after=${page.next}&limit=100`)).body as unknown as Page;
    expect(rest.events.map((event) => event.data.seq)).toEqual([3, 4, 5]);
    expect(rest.next).toBe(5);
    // A type filter reads only those, and moves past the rest.
    const deals = (await call('GET', '/changes?after=0&types=deal.*')).body as unknown as Page;
    expect(deals.events.map((event) => event.type)).toEqual(['deal.won', 'deal.won', 'deal.won']);
    expect(deals.next).toBe(5);
  });

  it('long-polls: a request waiting for changes is answered by the next one appended, notified or only polled', async () => {
    await insertChanges(mirror.connection, 2);
    const waiting = call('GET', '/changes?after=2&wait=30');
    // Appended by this process: the daemon's listener notifies.
    const waitingBeforeNotify = () => signal.waiting > 0;
    await expect.poll(waitingBeforeNotify, { timeout: 10_000 }).toBe(true);
    await insertChanges(mirror.connection, 1);
    signal.notify();
    const answered = (await waiting).body as unknown as Page;
    expect(answered.events.map((event) => event.data.seq)).toEqual([3]);

    // Appended by another process (another connection, no notification): the wait polls.
    const other = await mirror.connect();
    const polling = call('GET', '/changes?after=3&wait=30');
    await expect.poll(() => signal.waiting > 0, { timeout: 10_000 }).toBe(true);
    await insertChanges(other, 1);
    expect(((await polling).body as unknown as Page).events.map((event) => event.data.seq)).toEqual([4]);
    // No change within the wait: an empty page, where it stood.
    expect((await call('GET', '/changes?after=4&wait=0.05')).body).toMatchObject({ events: [], next: 4 });
  });

  it('answers bad input with a 4xx naming the parameter', async () => {
    await insertChanges(mirror.connection, 3);
    const expectError = async (path: string, status: number, parameter: string, message: RegExp, method = 'GET', body?: unknown) => {
      const answer = await call(method, path, body);
      expect(answer.status, path).toBe(status);
      expect(answer.body.parameter, path).toBe(parameter);
      expect(String(answer.body.error), path).toMatch(message);
    };
    await expectError('/changes', 400, 'after', /^after: required/);
    await expectError('/changes?after=x', 400, 'after', /^after: must be a seq/);
    await expectError('/changes?after=4', 400, 'after', /^after: 4 is ahead of the changelog \(its last seq is 3\)/);
    await expectError('/changes?after=0&limit=1001', 400, 'limit', /^limit: must be from 1 to 1000/);
    await expectError('/changes?after=0&limit=0', 400, 'limit', /^limit: must be from 1 to 1000/);
    await expectError('/changes?after=0&wait=61', 400, 'wait', /^wait: must be seconds from 0 to 60/);
    await expectError('/changes?after=0&types=deal%20won', 400, 'types', /types\[0\]: "deal won" is not an event type pattern/);
    // Well-formed, but no event type has it (`deal.*` is): a reader moving on to `next` would lose every deal event.
    await expectError('/changes?after=0&types=deal.won,deals.*', 400, 'types', /^types\[1\]: "deals\.\*" matches no event type \(did you mean "deal\.\*"\?\); the known types are transaction\.created, .*deal\.won/);
    const unknown = await call('GET', '/changes?after=0&types=dael.won');
    expect(unknown.body).toMatchObject({ parameter: 'types', knownTypes: expect.arrayContaining(['deal.won', 'transaction.created', 'stream.failing']) });
    expect(unknown.body.error).toMatch(/did you mean "deal\.won"/);
    await expectError('/consumers/nobody/changes', 404, 'name', /^name: no consumer named "nobody"; register it first with PUT \/consumers\/nobody/);
    await expectError('/consumers/bad%20name', 400, 'name', /^name: "bad name" is not a consumer name/, 'PUT');
    expect((await call('PUT', '/consumers/erp')).status).toBe(201);
    await expectError('/consumers/erp/ack', 400, 'seq', /^seq: 9 is ahead of the changelog/, 'POST', { seq: 9 });
    await expectError('/consumers/erp/ack', 400, 'seq', /^seq: must be the last seq handled/, 'POST', { seq: 'three' });
    await expectError('/consumers/erp/ack', 400, 'seq', /^seq: required/, 'POST');
    await expectError('/consumers/erp/changes?after=1', 400, 'after', /^after: a consumer reads after its own cursor/);
    await expectError('/consumers/erp/changes?types=deals.*', 400, 'types', /^types\[0\]: "deals\.\*" matches no event type/);
    await expectError('/changes?after=0', 405, 'method', /answers GET/, 'POST', {});
    // The wrong key: 401, naming the header (read-access.ts).
    const wrong = await fetch(`${server.url}/changes?after=0`, { headers: { authorization: 'Bearer not-the-key-0123456789' } });
    expect(wrong.status).toBe(401);
    expect(((await wrong.json()) as { error: string }).error).toMatch(/Authorization/);
  });

  it('a seq the retention pruned is a 410 telling the reader to start over from a snapshot', async () => {
    await insertChanges(mirror.connection, 6, { occurredAt: new Date(Date.now() - 40 * 86_400_000) });
    await insertChanges(mirror.connection, 2);
    const pruned = await pruneChangelog(mirror.connection, { before: new Date(Date.now() - 30 * 86_400_000), endpoints: [] });
    expect(pruned).toMatchObject({ rows: 6, prunedThrough: 6, oldestSeq: 7 });
    const gone = await call('GET', '/changes?after=3');
    expect(gone.status).toBe(410);
    expect(gone.body).toMatchObject({ parameter: 'after', oldestSeq: 7 });
    expect(String(gone.body.error)).toMatch(/^after: the changes after 3 up to 6 were pruned .*start over from a snapshot: POST \/consumers\/NAME\/reset\?initial=snapshot/);
    expect(((await call('GET', '/changes?after=6')).body as unknown as Page).events.map((event) => event.data.seq)).toEqual([7, 8]);
  });
});

describe('named consumers', () => {
  it('a consumer reads after its own cursor, reads the same events again until it acknowledges them, then reads on', async () => {
    await insertChanges(mirror.connection, 2); // before the consumer: not delivered to it
    const created = await call('PUT', '/consumers/erp');
    expect(created).toMatchObject({ status: 201, body: { created: true, consumer: { name: 'erp', cursor: 2 } } });
    expect((await call('PUT', '/consumers/erp')).body).toMatchObject({ created: false, consumer: { cursor: 2 } });
    expect((await call('GET', '/consumers/erp/changes')).body).toMatchObject({ consumer: 'erp', events: [], next: 2 });

    await insertChanges(mirror.connection, 3);
    const read = (await call('GET', '/consumers/erp/changes?limit=2')).body as unknown as Page;
    expect(read.events.map((event) => event.data.seq)).toEqual([3, 4]);
    // Not acknowledged (the consumer died): the same events again.
    expect(((await call('GET', '/consumers/erp/changes?limit=2')).body as unknown as Page).events.map((event) => event.data.seq)).toEqual([3, 4]);
    expect((await call('GET', '/consumers/erp')).body).toMatchObject({ consumer: { cursor: 2, lagEvents: 3 } });
    expect((await call('POST', '/consumers/erp/ack', { seq: read.next })).body).toMatchObject({ consumer: { cursor: 4 } });
    expect(((await call('GET', '/consumers/erp/changes')).body as unknown as Page).events.map((event) => event.data.seq)).toEqual([5]);

    // A consumer waiting for changes is woken by the next one.
    await call('POST', '/consumers/erp/ack', { seq: 5 });
    const waiting = call('GET', '/consumers/erp/changes?wait=30');
    await expect.poll(() => signal.waiting > 0, { timeout: 10_000 }).toBe(true);
    await insertChanges(mirror.connection, 1);
    signal.notify();
    expect(((await waiting).body as unknown as Page).events.map((event) => event.data.seq)).toEqual([6]);

    // A second consumer starting from the beginning; the list shows both with their lag.
    expect((await call('PUT', '/consumers/ledger', { after: 0 })).body).toMatchObject({ consumer: { cursor: 0 } });
    const listing = (await call('GET', '/consumers')).body as { consumers: { name: string; cursor: number; lagEvents: number; lastReadAt: string | null }[] };
    expect(listing.consumers.map((consumer) => [consumer.name, consumer.cursor, consumer.lagEvents])).toEqual([
      ['erp', 5, 1],
      ['ledger', 0, 6],
    ]);
    expect(listing.consumers[0]!.lastReadAt).not.toBeNull();
    expect((await call('DELETE', '/consumers/ledger')).status).toBe(200);
    expect((await call('GET', '/consumers/ledger')).status).toBe(404);
  });
});

describeOnSqlite('the query of a page, parsed by hand for the common case', () => {
  // Every query string here: the hand-written parse (the route's `quickQuery`) either gives exactly
  // what the zod schema gives, or leaves it to the schema; it never accepts what the schema refuses.
  const queries = [
    'after=0', 'after=41&limit=100', 'after=7&limit=1000', 'after=7&limit=1', 'after=5&wait=30', 'after=5&wait=0.25', 'after=5&wait=60', 'limit=10&after=3&other=x',
    'after=1&after=2', 'after=1&limit=5&limit=7', 'after=000012&limit=010',
    '', 'limit=10', 'after=', 'after=x', 'after=-1', 'after=1.5', 'after=1234567890123456', 'after=1&limit=0', 'after=1&limit=1001', 'after=1&limit=', 'after=1&limit=ten',
    'after=1&wait=61', 'after=1&wait=60.5', 'after=1&wait=-1', 'after=1&wait=', 'after=1&wait=1e3', 'after=1&types=deal.*', 'after=1&types=nothing.*', 'after=1&types=',
  ];

  it('GET /changes: the same output as CHANGES_QUERY, or none', () => {
    let quick = 0;
    for (const text of queries) {
      const query = new URLSearchParams(text);
      const byHand = quickChangesQuery(query);
      const bySchema = CHANGES_QUERY.safeParse(Object.fromEntries(query));
      if (byHand === undefined) continue;
      quick += 1;
      expect(bySchema.success, text).toBe(true);
      expect(byHand, text).toStrictEqual({ types: undefined, ...bySchema.data });
    }
    // The common queries (the first eleven) take the hand-written path.
    expect(quick).toBe(11);
    expect(quickChangesQuery(new URLSearchParams('after=41&limit=100&wait=2.5'))).toStrictEqual({ after: 41, limit: 100, wait: 2500, types: undefined });
  });

  it('GET /consumers/{name}/changes: the same output as CONSUMER_CHANGES_QUERY, or none', () => {
    let quick = 0;
    for (const text of ['', 'limit=5', 'wait=1', 'after=3', ...queries]) {
      const query = new URLSearchParams(text);
      const byHand = quickConsumerChangesQuery(query);
      const bySchema = CONSUMER_CHANGES_QUERY.safeParse(Object.fromEntries(query));
      if (byHand === undefined) continue;
      quick += 1;
      expect(bySchema.success, text).toBe(true);
      expect(byHand, text).toStrictEqual({ types: undefined, ...bySchema.data });
    }
    expect(quick).toBeGreaterThanOrEqual(15);
  });
});

describeOnSqlite('reading a page at once', () => {
  it('reads the page synchronously when the file is free, and waits for a transaction of this process holding it', async () => {
    await insertChanges(mirror.connection, 3);
    const query = { after: 0, limit: 100 };
    const now = readEncodedChangesPageNow(mirror.connection, query);
    expect(now).toMatchObject({ eventCount: 3, next: 3, latestSeq: 3 });
    expect(now).toStrictEqual(await readEncodedChangesPage(mirror.connection, query));
    expect(() => readEncodedChangesPageNow(mirror.connection, { after: 9, limit: 100 })).toThrow(/after: 9 is ahead of the changelog/);

    // A transaction holding the file's lock: its rows are not committed, and may never be. A read at
    // once on the same handle would see them; it is refused, and the asynchronous read waits for the end.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let inside!: () => void;
    const entered = new Promise<void>((resolve) => (inside = resolve));
    const transaction = mirror.connection
      .transaction(async (tx) => {
        await insertChanges(tx, 2);
        inside();
        await gate;
        throw new Error('rolled back');
      })
      .catch((error: unknown) => error);
    await entered;
    expect(readEncodedChangesPageNow(mirror.connection, query)).toBeUndefined();
    const waiting = readEncodedChangesPage(mirror.connection, query);
    release();
    expect(String(await transaction)).toMatch(/rolled back/);
    expect(await waiting).toMatchObject({ eventCount: 3, next: 3, latestSeq: 3 });
    // Through the route as well: answered from the committed rows only.
    expect(((await call('GET', '/changes?after=0')).body as unknown as Page).events.map((event) => event.data.seq)).toEqual([1, 2, 3]);
  });
});

/**
 * Another process inside a write transaction on the mirror file (`BEGIN IMMEDIATE`, change rows
 * inserted, not committed), as a one-off `sync` beside the daemon is: a child process on its own
 * better-sqlite3 handle, committing when told on stdin.
 */
function holdWriteTransaction(file: string, rows: { eventId: string; recordId: string }[]) {
  const script = `
    const Database = require(${JSON.stringify(createRequire(import.meta.url).resolve('better-sqlite3'))});
    const db = new Database(${JSON.stringify(file)});
    db.pragma('busy_timeout = 10000');
    db.exec('BEGIN IMMEDIATE');
    const insert = db.prepare('INSERT INTO changes (event_id, type, stream, record_id, occurred_at, data) VALUES (?, ?, ?, ?, ?, ?)');
    for (const row of ${JSON.stringify(rows)}) insert.run(row.eventId, 'deal.updated', 'deals', row.recordId, new Date().toISOString(), JSON.stringify({ record: { id: row.recordId }, changes: {} }));
    process.stdout.write('held\\n');
    process.stdin.once('data', () => { db.exec('COMMIT'); db.close(); process.stdout.write('committed\\n'); process.exit(0); });
  `;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  const line = (expected: string) => new Promise<void>((resolve, reject) => {
    lines.on('line', (text) => text === expected && resolve());
    child.once('close', (code) => reject(new Error(`the lock holder exited (${code}) before printing ${expected}`)));
  });
  const held = line('held');
  return {
    held,
    /** Commits and resolves once the transaction is committed and the handle closed. */
    async commit() {
      const committed = line('committed');
      child.stdin.write('commit\n');
      await committed;
    },
    kill: () => child.kill('SIGKILL'),
  };
}

describeOnSqlite('another process holding the mirror file\'s write lock', () => {
  it('a reader waiting on GET /changes and GET /consumers/{name}/changes gets the rows once they are committed: no 500, none lost or doubled', async () => {
    const before = await insertChanges(mirror.connection, 3);
    // The daemon's route table on a connection that never waits on another process's lock.
    const daemonConnection = await openMirrorConnection(mirror.path, { nonBlocking: true });
    const daemonSignal = new ChangeSignal();
    const daemon = await startDaemonHttpServer({
      host: '127.0.0.1',
      port: 0,
      readiness: async () => ({ ready: true, status: 200, reason: 'test', checkedAt: null }),
      metrics: async () => ({ contentType: 'text/plain', body: '' }),
      routes: new RouteTable({ readKey: KEY }).mount(changeRoutes({ executor: daemonConnection, signal: daemonSignal, pollMs: 50 })),
    });
    const get = async (path: string, method = 'GET') => {
      const response = await fetch(`${daemon.url}${path}`, { method, headers: { authorization: `Bearer ${KEY}` } });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const rows = [1, 2].map(() => ({ eventId: `evt_${randomUUID()}`, recordId: `rec_${randomUUID().slice(0, 8)}` }));
    expect((await get('/consumers/erp', 'PUT')).body).toMatchObject({ consumer: { cursor: 3 } });
    const holder = holdWriteTransaction(mirror.path, rows);
    try {
      await holder.held;

      // The lock is held and its rows are not committed (and may never be). The file is in WAL:
      // a reader is not locked out, and reads the committed rows only.
      expect(readEncodedChangesPageNow(daemonConnection, { after: 0, limit: 100 })).toMatchObject({ eventCount: 3, latestSeq: 3 });
      const listed = await get('/changes?after=0');
      expect(listed.status).toBe(200);
      expect((listed.body as unknown as Page).events.map((event) => event.id)).toEqual(before.map((row) => row.eventId));
      const consumerNow = await get('/consumers/erp/changes');
      expect(consumerNow).toMatchObject({ status: 200, body: { consumer: 'erp', events: [], next: 3 } });

      // Both readers wait for what comes after seq 3; no notification reaches them (another process): they poll.
      const waitingPull = get('/changes?after=3&wait=30');
      const waitingConsumer = get('/consumers/erp/changes?wait=30');
      await expect.poll(() => daemonSignal.waiting, { timeout: 20_000 }).toBe(2);
      await holder.commit();

      const [pulled, consumed] = await Promise.all([waitingPull, waitingConsumer]);
      for (const answer of [pulled, consumed]) {
        expect(answer.status).toBe(200);
        const page = answer.body as unknown as Page;
        expect(page.events.map((event) => [event.id, event.data.seq])).toEqual([
          [rows[0]!.eventId, 4],
          [rows[1]!.eventId, 5],
        ]);
        expect(page).toMatchObject({ next: 5, latestSeq: 5 });
      }
      expect(consumed.body).toMatchObject({ consumer: 'erp' });

      // The whole changelog once each, in order; the consumer acknowledges and has nothing left.
      const all = (await get('/changes?after=0')).body as unknown as Page;
      expect(all.events.map((event) => event.id)).toEqual([...before.map((row) => row.eventId), ...rows.map((row) => row.eventId)]);
      expect(all.events.map((event) => event.data.seq)).toEqual([1, 2, 3, 4, 5]);
      expect((await fetch(`${daemon.url}/consumers/erp/ack`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ seq: 5 }) })).status).toBe(200);
      expect((await get('/consumers/erp/changes')).body).toMatchObject({ events: [], next: 5 });
    } finally {
      holder.kill();
      await daemon.close();
      await daemonConnection.close();
    }
  });
});

describeOnSqlite('noting a consumer\'s reads', () => {
  it('a burst of reads writes last_read_at at most once per CONSUMER_READ_NOTE_MS, sooner when the cursor moved; the time shown is never older than that', async () => {
    await insertChanges(mirror.connection, 4);
    // Every write of last_read_at, counted by the database itself.
    await mirror.connection.exec(`
      CREATE TABLE read_notes (at TEXT NOT NULL);
      CREATE TRIGGER read_noted AFTER UPDATE OF last_read_at ON consumers BEGIN INSERT INTO read_notes VALUES (NEW.last_read_at); END;
    `);
    let clock = Date.parse('2026-03-01T09:00:00.000Z');
    const clocked = await startDaemonHttpServer({
      host: '127.0.0.1',
      port: 0,
      readiness: async () => ({ ready: true, status: 200, reason: 'test', checkedAt: null }),
      metrics: async () => ({ contentType: 'text/plain', body: '' }),
      routes: new RouteTable({ readKey: KEY }).mount(changeRoutes({ executor: mirror.connection, signal, pollMs: 50, now: () => new Date(clock) })),
    });
    const send = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${clocked.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      expect(response.status, `${method} ${path}`).toBeLessThan(300);
      return (await response.json()) as Record<string, unknown>;
    };
    const notes = async () => Number((await mirror.connection.get<{ count: number }>('SELECT count(*) AS count FROM read_notes'))!.count);
    const shownReadAt = async () => Date.parse(((await send('GET', '/consumers/erp')) as { consumer: { lastReadAt: string } }).consumer.lastReadAt);
    try {
      await send('PUT', '/consumers/erp', { after: 0 });

      // 40 reads, 100 ms of the clock apart: 4 s of fast polling.
      for (let read = 0; read < 40; read += 1) {
        const page = (await send('GET', '/consumers/erp/changes?limit=2')) as unknown as Page;
        expect(page.events.map((event) => event.data.seq)).toEqual([1, 2]);
        const shown = await shownReadAt();
        expect(clock - shown).toBeGreaterThanOrEqual(0);
        expect(clock - shown).toBeLessThan(CONSUMER_READ_NOTE_MS);
        clock += 100;
      }
      expect(await notes()).toBe(4);

      // Within the second, an acknowledged move of the cursor: the next read is noted at once.
      await send('POST', '/consumers/erp/ack', { seq: 2 });
      const before = await notes();
      expect(((await send('GET', '/consumers/erp/changes')) as unknown as Page).events.map((event) => event.data.seq)).toEqual([3, 4]);
      expect(await notes()).toBe(before + 1);
      expect(await shownReadAt()).toBe(clock);
      await send('GET', '/consumers/erp/changes');
      expect(await notes()).toBe(before + 1);
    } finally {
      await clocked.close();
    }
  });
});
