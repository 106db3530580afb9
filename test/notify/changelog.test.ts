import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteConnection } from '../../src/mirror/sql/sqlite.ts';
import { encodeChangeData, lastChangeSeq } from '../../src/mirror/changelog-format.ts';
import { MirrorStore } from '../../src/mirror/mirror-store.ts';
import { encodePulledEvent, followChanges, followStoredChanges, formatChangeLine, formatStoredChangeLine, iterateChanges, iterateStoredChanges, readChanges, readStoredChanges, type ChangeEvent, type StoredChange } from '../../src/notify/changelog-reader.ts';
import { webhookBody, webhookPayload } from '../../src/notify/event-payload.ts';
import { transactionsStream } from '../../src/streams/definitions.ts';
import { insertChanges, tempMirror, type TempMirror } from './helpers.ts';
import { fixtureEnv } from '../helpers.ts';

let mirror: TempMirror;
beforeEach(async () => {
  mirror = await tempMirror();
});
afterEach(() => mirror.cleanup());

/** Every event an async iteration yields, in order. */
async function collect(events: AsyncIterable<ChangeEvent>): Promise<ChangeEvent[]> {
  const all: ChangeEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}

describe('readChanges', () => {
  it('returns typed rows with data parsed, after an exclusive sinceSeq, up to limit', async () => {
    const inserted = await insertChanges(mirror.connection, 5);
    const events = await readChanges(mirror.connection, { sinceSeq: inserted[1]!.seq, limit: 2 });
    expect(events.map((e) => e.seq)).toEqual([inserted[2]!.seq, inserted[3]!.seq]);
    expect(events[0]).toEqual({
      seq: inserted[2]!.seq,
      eventId: inserted[2]!.eventId,
      type: 'deal.updated',
      stream: 'deals',
      recordId: inserted[2]!.recordId,
      occurredAt: inserted[2]!.occurredAt,
      // insertChanges writes format version 1 rows (no version key in data).
      version: 1,
      data: inserted[2]!.data,
    });
    expect(await lastChangeSeq(mirror.connection)).toBe(inserted[4]!.seq);
  });

  it('filters by exact type, prefix wildcard and *', async () => {
    await insertChanges(mirror.connection, 6, { types: ['deal.won', 'deal.lost', 'transaction.created'] });
    const types = async (patterns: string[]) => (await readChanges(mirror.connection, { types: patterns })).map((e) => e.type);
    expect(await types(['deal.won'])).toEqual(['deal.won', 'deal.won']);
    expect(await types(['deal.*'])).toEqual(['deal.won', 'deal.lost', 'deal.won', 'deal.lost']);
    expect(await types(['transaction.created', 'deal.lost'])).toEqual(['deal.lost', 'transaction.created', 'deal.lost', 'transaction.created']);
    expect(await types(['*'])).toHaveLength(6);
    // A prefix wildcard matches the dot boundary only.
    expect(await types(['dea.*'])).toEqual([]);
  });

  it('limit applies to matching events', async () => {
    await insertChanges(mirror.connection, 10, { types: ['deal.won', 'transaction.created'] });
    expect((await readChanges(mirror.connection, { limit: 3, types: ['transaction.*'] })).map((e) => e.type)).toEqual(['transaction.created', 'transaction.created', 'transaction.created']);
  });

  it('rejects bad options with the field name', async () => {
    await expect(readChanges(mirror.connection, { limit: 0 })).rejects.toThrow(/^limit: must be an integer from 1 to 10000/);
    await expect(readChanges(mirror.connection, { sinceSeq: -1 })).rejects.toThrow(/^sinceSeq: must be a non-negative integer/);
    await expect(readChanges(mirror.connection, { types: ['de*l'] })).rejects.toThrow(/^types\[0\]: "de\*l" is not an event type pattern/);
  });

  it('names the seq of a row whose data is not JSON', async () => {
    (await mirror.connection.run("INSERT INTO changes (event_id, type, stream, record_id, occurred_at, data) VALUES ('evt_bad', 'deal.won', 'deals', 'd', '2025-01-01T00:00:00Z', '{oops')"));
    await expect(readChanges(mirror.connection)).rejects.toThrow(/changes row seq 1 \(event evt_bad\): data is not valid JSON/);
  });
});

describe('formatChangeLine', () => {
  it('is one JSON line with the changelog column names', async () => {
    const [inserted] = await insertChanges(mirror.connection, 1);
    const [event] = await readChanges(mirror.connection);
    const line = formatChangeLine(event!);
    expect(line).not.toContain('\n');
    expect(Object.keys(JSON.parse(line))).toEqual(['seq', 'version', 'event_id', 'type', 'stream', 'record_id', 'occurred_at', 'data']);
    expect(JSON.parse(line)).toMatchObject({ seq: 1, event_id: inserted!.eventId, data: inserted!.data });
  });
});

describe('formatStoredChangeLine (the changes command)', () => {
  const listed = { id: 'txn_1', type: 'EXPENSE', status: 'PENDING', amount: -1250, description: 'Paper', date: '2026-11-20' };

  async function storedRows(): Promise<StoredChange[]> {
    const rows: StoredChange[] = [];
    for await (const batch of iterateStoredChanges(mirror.connection, { batchSize: 2 })) rows.push(...batch);
    return rows;
  }

  it('prints an update exactly as formatChangeLine does, from the stored text (no decoding and encoding of the record)', async () => {
    await insertChanges(mirror.connection, 3);
    const store = new MirrorStore(mirror.connection);
    await store.applyRecords(transactionsStream, [listed]);
    await store.applyRecords(transactionsStream, [{ ...listed, status: 'CONFIRMED' }]);
    const rows = await storedRows();
    const events = await readChanges(mirror.connection);
    expect(rows.map((row) => row.seq)).toEqual(events.map((event) => event.seq));
    // Version-1 rows and a version-2 update: the same line, byte for byte.
    for (const index of [0, 1, 2, 4]) expect(formatStoredChangeLine(rows[index]!)).toBe(formatChangeLine(events[index]!));
  });

  it('a version-2 created event: the record once, no per-field changes; expandCreated gives the line formatChangeLine gives', async () => {
    await new MirrorStore(mirror.connection).applyRecords(transactionsStream, [listed]);
    const [row] = await storedRows();
    const [event] = await readChanges(mirror.connection);
    const line = JSON.parse(formatStoredChangeLine(row!)) as Record<string, unknown>;
    expect(line).toEqual({ seq: row!.seq, version: 2, event_id: row!.eventId, type: 'transaction.created', stream: 'transactions', record_id: 'txn_1', occurred_at: row!.occurredAt, data: { record: listed } });
    expect(formatStoredChangeLine(row!, { expandCreated: true })).toBe(formatChangeLine(event!));
  });

  it('names the seq of a row whose data is not a JSON object', () => {
    const row: StoredChange = { seq: 7, eventId: 'evt_bad', type: 'deal.won', stream: 'deals', recordId: 'd', occurredAt: '2026-01-01T00:00:00Z', data: '{oops' };
    expect(() => formatStoredChangeLine(row)).toThrow(/^changes row seq 7 \(event evt_bad\): data is not valid JSON/);
    expect(() => formatStoredChangeLine({ ...row, data: '[1]' })).toThrow(/^changes row seq 7 \(event evt_bad\): data is not a JSON object/);
  });

  it('prints a row in the version-2 form without parsing it (its only writer is encodeChangeData); a text of another form is parsed and refused naming the seq', () => {
    const row: StoredChange = {
      seq: 8,
      eventId: 'evt_v2',
      type: 'deal.won',
      stream: 'deals',
      recordId: 'd',
      occurredAt: '2026-01-01T00:00:00Z',
      data: '{"version":2,"record":{"id":"d","value":150},"changes":{"status":{"old":"OPEN","new":"WON"}}}',
    };
    const head = '{"seq":8,"version":2,"event_id":"evt_v2","type":"deal.won","stream":"deals","record_id":"d","occurred_at":"2026-01-01T00:00:00Z","data":';
    expect(formatStoredChangeLine(row)).toBe(`${head}{"record":{"id":"d","value":150},"changes":{"status":{"old":"OPEN","new":"WON"}}}}`);
    expect(formatStoredChangeLine({ ...row, partition: 'loc_1' })).toBe(`${head.replace('"record_id":"d"', '"record_id":"d","partition":"loc_1"')}{"record":{"id":"d","value":150},"changes":{"status":{"old":"OPEN","new":"WON"}}}}`);
    // Recognised by its form, not checked by its content: a text JSON.parse refuses is spliced as it is.
    expect(formatStoredChangeLine({ ...row, data: '{"version":2,"record":{oops}}' })).toBe(`${head}{"record":{oops}}}`);
    // Without the form's closing brace it is parsed, and refused naming the seq; so is any other form.
    expect(() => formatStoredChangeLine({ ...row, data: '{"version":2,"record":{"id":"d"' })).toThrow(/^changes row seq 8 \(event evt_v2\): data is not valid JSON/);
    expect(() => formatStoredChangeLine({ ...row, data: '{"version": 2, oops}' })).toThrow(/^changes row seq 8 \(event evt_v2\): data is not valid JSON/);
    // --expand-created decodes a created event's data to derive its changes.
    expect(() => formatStoredChangeLine({ ...row, data: '{"version":2,"record":{oops}}' }, { expandCreated: true })).toThrow(/data is not valid JSON/);
  });

  it('encodePulledEvent (the pull API) and webhookBody of an event read with dataJson (the delivery core) write, from the stored text, the bytes of the decoded event, for every stored form', async () => {
    await insertChanges(mirror.connection, 2); // version 1: { record, changes }
    const store = new MirrorStore(mirror.connection);
    await store.applyRecords(transactionsStream, [listed]); // version 2, created: no changes stored
    await store.applyRecords(transactionsStream, [{ ...listed, status: 'CONFIRMED', description: 'caf\u00e9 "quoted" \u2028' }]); // version 2 update
    const insert = 'INSERT INTO changes (event_id, type, stream, record_id, occurred_at, data, partition_value) VALUES (?, ?, ?, ?, ?, ?, ?)';
    const at = '2026-11-28T10:00:00.000Z';
    const rejected = { id: 'txn_bad', amount: 'lots' };
    // A rejected item (created form, with its error), an update with an error, a partitioned change,
    // and version-2 texts encodeChangeData never writes (an extra key; changes null).
    await mirror.connection.run(insert, ['evt_rej', 'record.rejected', 'transactions', 'txn_bad', at, encodeChangeData({ record: rejected, error: 'amount: must be a number' }), null]);
    await mirror.connection.run(insert, ['evt_rej2', 'record.rejected', 'transactions', 'txn_bad', at, encodeChangeData({ record: rejected, changes: { amount: { old: 1, new: 'lots' } }, error: 'amount: must be a number' }), null]);
    await mirror.connection.run(insert, ['evt_part', 'qa_corrective_action.updated', 'qa_corrective_actions', 'qa_1', at, encodeChangeData({ record: { id: 'qa_1', status: 'OPEN' }, changes: { status: { old: 'CLOSED', new: 'OPEN' } } }), 'loc_7']);
    await mirror.connection.run(insert, ['evt_extra', 'deal.updated', 'deals', 'd_1', at, '{"version":2,"record":{"id":"d_1"},"changes":{},"note":"kept out"}', null]);
    await mirror.connection.run(insert, ['evt_null', 'deal.updated', 'deals', 'd_1', at, '{"version":2,"record":{"id":"d_1"},"changes":null}', null]);
    const rows = await readStoredChanges(mirror.connection, { limit: 100 });
    const events = await readChanges(mirror.connection, { limit: 100 });
    expect(rows).toHaveLength(9);
    const withJson = await readChanges(mirror.connection, { limit: 100, dataJson: true });
    for (const [index, row] of rows.entries()) {
      const event = events[index]!;
      expect(encodePulledEvent(row), row.eventId).toBe(JSON.stringify({ id: event.eventId, ...webhookPayload(event) }));
      // The delivery core's read: the same event, its data's text beside it; the body from it is the encoded one.
      const { dataJson, ...decoded } = withJson[index]!;
      expect(decoded).toEqual(event);
      expect(dataJson, row.eventId).toBe(JSON.stringify(event.data));
      expect(webhookBody(withJson[index]!), row.eventId).toBe(JSON.stringify(webhookPayload(event)));
      expect(webhookBody(event)).toBe(JSON.stringify(webhookPayload(event)));
    }
    // The rejected created item's changes are derived from its record, as for any created event.
    expect(JSON.parse(encodePulledEvent(rows[4]!)).data).toMatchObject({ error: 'amount: must be a number', record: rejected });
    expect(JSON.parse(encodePulledEvent(rows[6]!)).data.partition).toBe('loc_7');
    expect(() => encodePulledEvent({ ...rows[0]!, data: '{oops' })).toThrow(/^changes row seq 1 \(event evt_.*\): data is not valid JSON/);
  });

  it('iterateStoredChanges and followStoredChanges read the rows after the cursor in batches, with the type filter', async () => {
    await insertChanges(mirror.connection, 7, { types: ['deal.won', 'transaction.created'] });
    const batches: number[][] = [];
    for await (const batch of iterateStoredChanges(mirror.connection, { sinceSeq: 1, batchSize: 2 })) batches.push(batch.map((row) => row.seq));
    expect(batches).toEqual([[2, 3], [4, 5], [6, 7]]);
    const deals: number[] = [];
    for await (const batch of iterateStoredChanges(mirror.connection, { types: ['deal.*'] })) deals.push(...batch.map((row) => row.seq));
    expect(deals).toEqual([1, 3, 5, 7]);
    const controller = new AbortController();
    const followed: number[] = [];
    for await (const batch of followStoredChanges(mirror.connection, { sinceSeq: 4, pollMs: 10, batchSize: 2, signal: controller.signal })) {
      followed.push(...batch.map((row) => row.seq));
      if (followed.length >= 3) controller.abort();
    }
    expect(followed).toEqual([5, 6, 7]);
  });
});

describe('followChanges', () => {
  it('tails rows that another process appends (WAL), in seq order, from sinceSeq', async () => {
    await insertChanges(mirror.connection, 3);
    const reader = (await mirror.connect());
    const controller = new AbortController();
    const seen: ChangeEvent[] = [];
    const child = spawn(process.execPath, [fileURLToPath(new URL('./fixtures/append-changes.ts', import.meta.url)), mirror.path, '12', '15'], { env: fixtureEnv(), stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    for await (const event of followChanges(reader, { sinceSeq: 2, pollMs: 20, signal: controller.signal })) {
      seen.push(event);
      if (seen.length === 13) controller.abort();
    }
    expect(await exited).toBe(0);
    expect(seen.map((e) => e.seq)).toEqual(Array.from({ length: 13 }, (_, index) => index + 3));
    expect(seen.slice(1).every((e) => e.type === 'transaction.created')).toBe(true);
  });

  it('starts at the end of the changelog by default and ends when aborted', async () => {
    await insertChanges(mirror.connection, 4);
    const controller = new AbortController();
    const seen: number[] = [];
    const writer = await mirror.connect();
    setTimeout(() => void insertChanges(writer, 2), 30);
    // Aborted once both new events arrived: the loop must then end (the test's own timeout catches a hang).
    for await (const event of followChanges(mirror.connection, { pollMs: 10, signal: controller.signal })) {
      seen.push(event.seq);
      if (seen.length === 2) controller.abort();
    }
    expect(seen).toEqual([5, 6]);
  });
});

describe('iterateChanges', () => {
  it('yields the same events as readChanges, across query batches, with the type filter and an exclusive cursor', async () => {
    await insertChanges(mirror.connection, 25, { types: ['deal.won', 'transaction.created'] });
    const all = await readChanges(mirror.connection, { limit: 100 });
    expect(await collect(iterateChanges(mirror.connection, { batchSize: 4 }))).toEqual(all);
    expect((await collect(iterateChanges(mirror.connection, { sinceSeq: 20, batchSize: 2 }))).map((e) => e.seq)).toEqual([21, 22, 23, 24, 25]);
    expect(await collect(iterateChanges(mirror.connection, { types: ['deal.*'], batchSize: 3 }))).toEqual(all.filter((e) => e.type === 'deal.won'));
    await expect(collect(iterateChanges(mirror.connection, { batchSize: 0 }))).rejects.toThrow(/^batchSize: must be an integer/);
  });

  it('reads the next query only when the consumer asks for more, and holds no transaction between queries', async () => {
    await insertChanges(mirror.connection, 5);
    const events = iterateChanges(mirror.connection, { batchSize: 2 });
    expect((await events.next()).value).toMatchObject({ seq: 1 });
    const writer = await mirror.connect();
    // SQLite: the paused reader holds no read snapshot: a checkpoint that must wait for every reader
    // is not busy. (PostgreSQL has no such check from outside; the rows appended below show each
    // query sees the latest commit there too.)
    if (writer instanceof SqliteConnection) expect(writer.sqlite.pragma('wal_checkpoint(TRUNCATE)')).toEqual([expect.objectContaining({ busy: 0 })]);
    // Rows appended while the reader pauses are read by a later query (each query sees the latest commit).
    await insertChanges(writer, 2);
    const rest = await collect(events);
    expect(rest.map((e) => e.seq)).toEqual([2, 3, 4, 5, 6, 7]);
  });
});
