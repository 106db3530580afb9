/**
 * The changelog's stored format (docs/mirror.md "Change data format"): a created change carries the
 * record once (version 2), and rows of either version read the same through `readChanges` and
 * webhook delivery; the `changes` command prints each row's data as stored (`--expand-created`: as
 * `readChanges` reads it).
 */
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { openMirror, type MirrorDatabase } from '../../src/mirror/database.ts';
import { sqliteConnection } from '../../src/mirror/sql/sqlite.ts';
import { MirrorStore } from '../../src/mirror/mirror-store.ts';
import { readChanges } from '../../src/notify/changelog-reader.ts';
import { WebhookDispatcher } from '../../src/notify/webhooks/dispatcher.ts';
import { onboardingsStream, transactionsStream } from '../../src/streams/definitions.ts';
import { runCli, tempDir, waitFor, type TempDir } from '../helpers.ts';
import { newSecret, receiverFixture } from '../notify/helpers.ts';

let dir: TempDir | undefined;
let db: MirrorDatabase | undefined;
const dispatchers: WebhookDispatcher[] = [];
const receiver = receiverFixture();
afterEach(async () => {
  await Promise.all(dispatchers.splice(0).map((d) => d.stop()));
  if (db) await sqliteConnection(db).close();
  dir?.remove();
  db = dir = undefined;
});

function store(): MirrorStore {
  dir = tempDir();
  db = openMirror(dir.file('mirror.db'));
  return new MirrorStore(sqliteConnection(db));
}

const listed = { id: 'txn_1', type: 'EXPENSE', status: 'PENDING', amount: -1250, description: 'Paper', date: '2026-11-20' };
/** What version 1 stored, and what readers get for a created transaction of either version. */
const fullCreated = (record: Record<string, unknown>) => ({
  record,
  changes: Object.fromEntries(transactionsStream.listedFields.map((field) => [field, { old: null, new: record[field] ?? null }])),
});

/** A created change as version 1 stored it: every field again as `{ old: null, new }`. */
function insertVersion1Row(record: Record<string, unknown>): void {
  db!
    .prepare("INSERT INTO changes (event_id, type, stream, record_id, occurred_at, data) VALUES (?, 'transaction.created', 'transactions', ?, '2026-11-20T10:00:00.000Z', ?)")
    .run(`evt_v1_${String(record.id)}`, record.id, JSON.stringify(fullCreated(record)));
}

function storedData(seq: number): string {
  return (db!.prepare('SELECT data FROM changes WHERE seq = ?').get(seq) as { data: string }).data;
}

describe('the changelog format', () => {
  it('stores a created change with the record once and a version, an update with its changed fields only', async () => {
    const s = store();
    const [fieldAdded, created] = await s.applyRecords(transactionsStream, [{ ...listed, extra: 'kept in raw' }]);
    expect(JSON.parse(storedData(created!.seq))).toEqual({ version: 2, record: { ...listed, extra: 'kept in raw' } });
    // The field the definition does not declare is announced once, before the page's record changes.
    expect(JSON.parse(storedData(fieldAdded!.seq))).toEqual({
      version: 2,
      record: { stream: 'transactions', field: 'extra', exampleRecordId: listed.id, firstSeenAt: expect.any(String) },
      changes: {},
    });
    const [updated] = await s.applyRecords(transactionsStream, [{ ...listed, extra: 'kept in raw', status: 'CONFIRMED' }]);
    expect(JSON.parse(storedData(updated!.seq))).toEqual({
      version: 2,
      record: { ...listed, extra: 'kept in raw', status: 'CONFIRMED' },
      changes: { status: { old: 'PENDING', new: 'CONFIRMED' } },
    });
  });

  it('reads version 1 and version 2 rows of one mirror alike: a created change gets every listed field as { old: null, new }', async () => {
    const s = store();
    const old = { ...listed, id: 'txn_0', description: null };
    insertVersion1Row(old);
    await s.applyRecords(transactionsStream, [listed]);
    await s.applyRecords(onboardingsStream, [{ id: 'onb_1', onboardingStep: 2, user: { fullname: 'Ada' } }]);
    const events = await readChanges(sqliteConnection(db!));
    expect(events.map((e) => [e.version, e.recordId])).toEqual([
      [1, 'txn_0'],
      [2, 'txn_1'],
      [2, 'onb_1'],
    ]);
    expect(events[0]!.data).toEqual(fullCreated(old));
    expect(events[1]!.data).toEqual(fullCreated(listed));
    // Dot-path fields are derived from the nested record, as version 1 stored them.
    expect(events[2]!.data.changes).toEqual({ id: { old: null, new: 'onb_1' }, onboardingStep: { old: null, new: 2 }, 'user.fullname': { old: null, new: 'Ada' } });
  });

  it('`changes --since 0` prints each row\'s data as stored: a version-2 created event carries its record once (no { old: null, new } per field), other rows read as before; --expand-created derives the created changes as version 1 stored them', async () => {
    const s = store();
    insertVersion1Row({ ...listed, id: 'txn_0' });
    await s.applyRecords(transactionsStream, [listed]);
    await s.applyRecords(transactionsStream, [{ ...listed, status: 'VOIDED' }]);
    const cliEnv = { PATH: process.env.PATH, HOME: process.env.HOME };
    const result = await runCli(['changes', '--since', '0', '--db', dir!.file('mirror.db')], cliEnv);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.map((line) => [line.seq, line.version, line.type])).toEqual([
      [1, 1, 'transaction.created'],
      [2, 2, 'transaction.created'],
      [3, 2, 'transaction.voided'],
    ]);
    expect(Object.keys(lines[1]!)).toEqual(['seq', 'version', 'event_id', 'type', 'stream', 'record_id', 'occurred_at', 'data']);
    // Version 1 stored the created changes: printed as stored.
    expect(lines[0]!.data).toEqual(fullCreated({ ...listed, id: 'txn_0' }));
    // Version 2: the record once, as stored (the line's `version` says which).
    expect(lines[1]!.data).toEqual({ record: listed });
    expect(lines[2]!.data).toEqual({ record: { ...listed, status: 'VOIDED' }, changes: { status: { old: 'PENDING', new: 'VOIDED' } } });

    const expanded = await runCli(['changes', '--since', '0', '--expand-created', '--db', dir!.file('mirror.db')], cliEnv);
    expect(expanded.code).toBe(0);
    const expandedLines = expanded.stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(expandedLines.map((line) => line.data)).toEqual([fullCreated({ ...listed, id: 'txn_0' }), fullCreated(listed), lines[2]!.data]);
    // The rest of each line is the same either way.
    expect(expandedLines.map((line) => ({ ...line, data: null }))).toEqual(lines.map((line) => ({ ...line, data: null })));
  });

  it('webhook payloads of version 1 and version 2 created changes are the same shape', async () => {
    const s = store();
    const target = await receiver();
    const secret = newSecret();
    const dispatcher = new WebhookDispatcher({ connection: sqliteConnection(db!), endpoints: [{ name: 'crm', url: target.url, secret, events: ['*'] }], pollMs: 30, scheduleMs: [0, 20], jitterRatio: 0, timeoutMs: 2000, stopGraceMs: 100 });
    dispatchers.push(dispatcher);
    await dispatcher.start(); // a new endpoint starts at the end of the changelog: both rows come after it
    insertVersion1Row({ ...listed, id: 'txn_0' });
    await s.applyRecords(transactionsStream, [listed]);
    dispatcher.notify();
    await waitFor(() => target.requests.length === 2, 'two deliveries');
    const payloads = target.requests.map((request) => new Webhook(secret).verify(request.body, request.headers as Record<string, string>) as { data: Record<string, unknown> });
    expect(payloads[0]!.data).toEqual({ ...fullCreated({ ...listed, id: 'txn_0' }), seq: 1, stream: 'transactions', record_id: 'txn_0' });
    expect(payloads[1]!.data).toEqual({ ...fullCreated(listed), seq: 2, stream: 'transactions', record_id: 'txn_1' });
  });
});
