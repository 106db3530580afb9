import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { lastChangeSeq } from '../../src/mirror/changelog.ts';
import { followChanges, formatChangeLine, iterateChanges, readChanges, type ChangeEvent } from '../../src/notify/changelog.ts';
import { insertChanges, tempMirror, type TempMirror } from './helpers.ts';

let mirror: TempMirror;
beforeEach(() => {
  mirror = tempMirror();
});
afterEach(() => mirror.cleanup());

describe('readChanges', () => {
  it('returns typed rows with data parsed, after an exclusive sinceSeq, up to limit', () => {
    const inserted = insertChanges(mirror.db, 5);
    const events = readChanges(mirror.db, { sinceSeq: inserted[1]!.seq, limit: 2 });
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
    expect(lastChangeSeq(mirror.db)).toBe(inserted[4]!.seq);
  });

  it('filters by exact type, prefix wildcard and *', () => {
    insertChanges(mirror.db, 6, { types: ['deal.won', 'deal.lost', 'transaction.created'] });
    const types = (patterns: string[]) => readChanges(mirror.db, { types: patterns }).map((e) => e.type);
    expect(types(['deal.won'])).toEqual(['deal.won', 'deal.won']);
    expect(types(['deal.*'])).toEqual(['deal.won', 'deal.lost', 'deal.won', 'deal.lost']);
    expect(types(['transaction.created', 'deal.lost'])).toEqual(['deal.lost', 'transaction.created', 'deal.lost', 'transaction.created']);
    expect(types(['*'])).toHaveLength(6);
    // A prefix wildcard matches the dot boundary only.
    expect(types(['dea.*'])).toEqual([]);
  });

  it('limit applies to matching events', () => {
    insertChanges(mirror.db, 10, { types: ['deal.won', 'transaction.created'] });
    expect(readChanges(mirror.db, { limit: 3, types: ['transaction.*'] }).map((e) => e.type)).toEqual(['transaction.created', 'transaction.created', 'transaction.created']);
  });

  it('rejects bad options with the field name', () => {
    expect(() => readChanges(mirror.db, { limit: 0 })).toThrow(/^limit: must be an integer from 1 to 10000/);
    expect(() => readChanges(mirror.db, { sinceSeq: -1 })).toThrow(/^sinceSeq: must be a non-negative integer/);
    expect(() => readChanges(mirror.db, { types: ['de*l'] })).toThrow(/^types\[0\]: "de\*l" is not an event type pattern/);
  });

  it('names the seq of a row whose data is not JSON', () => {
    mirror.db.prepare("INSERT INTO changes (event_id, type, stream, record_id, occurred_at, data) VALUES ('evt_bad', 'deal.won', 'deals', 'd', '2025-01-01T00:00:00Z', '{oops')").run();
    expect(() => readChanges(mirror.db)).toThrow(/changes row seq 1 \(event evt_bad\): data is not valid JSON/);
  });
});

describe('formatChangeLine', () => {
  it('is one JSON line with the changelog column names', () => {
    const [inserted] = insertChanges(mirror.db, 1);
    const [event] = readChanges(mirror.db);
    const line = formatChangeLine(event!);
    expect(line).not.toContain('\n');
    expect(Object.keys(JSON.parse(line))).toEqual(['seq', 'version', 'event_id', 'type', 'stream', 'record_id', 'occurred_at', 'data']);
    expect(JSON.parse(line)).toMatchObject({ seq: 1, event_id: inserted!.eventId, data: inserted!.data });
  });
});

describe('followChanges', () => {
  it('tails rows that another process appends (WAL), in seq order, from sinceSeq', async () => {
    insertChanges(mirror.db, 3);
    const reader = mirror.connect();
    const controller = new AbortController();
    const seen: ChangeEvent[] = [];
    const child = spawn(process.execPath, [fileURLToPath(new URL('./fixtures/append-changes.ts', import.meta.url)), mirror.path, '12', '15'], { stdio: ['ignore', 'pipe', 'inherit'] });
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
    insertChanges(mirror.db, 4);
    const controller = new AbortController();
    const seen: number[] = [];
    setTimeout(() => insertChanges(mirror.connect(), 2), 30);
    // Aborted once both new events arrived: the loop must then end (the test's own timeout catches a hang).
    for await (const event of followChanges(mirror.db, { pollMs: 10, signal: controller.signal })) {
      seen.push(event.seq);
      if (seen.length === 2) controller.abort();
    }
    expect(seen).toEqual([5, 6]);
  });
});

describe('iterateChanges', () => {
  it('yields the same events as readChanges, across query batches, with the type filter and an exclusive cursor', () => {
    insertChanges(mirror.db, 25, { types: ['deal.won', 'transaction.created'] });
    const all = readChanges(mirror.db, { limit: 100 });
    expect([...iterateChanges(mirror.db, { batchSize: 4 })]).toEqual(all);
    expect([...iterateChanges(mirror.db, { sinceSeq: 20, batchSize: 2 })].map((e) => e.seq)).toEqual([21, 22, 23, 24, 25]);
    expect([...iterateChanges(mirror.db, { types: ['deal.*'], batchSize: 3 })]).toEqual(all.filter((e) => e.type === 'deal.won'));
    expect(() => [...iterateChanges(mirror.db, { batchSize: 0 })]).toThrow(/^batchSize: must be an integer/);
  });
});
