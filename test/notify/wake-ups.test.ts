/**
 * PostgreSQL wake-ups (docs/mirror.md "PostgreSQL"): a transaction that appended change rows sends
 * one `pg_notify('bizops_changes', <schema>)` with its COMMIT, and `changes --follow`
 * (`followChanges`) and the webhook dispatcher, waiting on a poll of ten minutes, wake on it. The
 * writer is always a connection of its own: what wakes the reader can only be the notification
 * (the test's timeout is far below the poll).
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { openMirrorConnection } from '../../src/mirror/open.ts';
import { CHANGES_CHANNEL, type SqlConnection } from '../../src/mirror/sql/executor.ts';
import { MirrorStore } from '../../src/mirror/mirror-store.ts';
import { followChanges, type ChangeEvent } from '../../src/notify/changelog-reader.ts';
import { WebhookDispatcher } from '../../src/notify/webhooks/dispatcher.ts';
import { transactionsStream } from '../../src/streams/definitions.ts';
import { waitFor } from '../helpers.ts';
import { removeTestMirrors, TEST_POSTGRES_URL, freshPostgresUrl } from '../sql-backends.ts';
import { newSecret, receiverFixture } from './helpers.ts';

/** Ten minutes: a reader woken within the test's timeout was woken by a notification. */
const LONG_POLL_MS = 600_000;

const receiver = receiverFixture();
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await removeTestMirrors();
});

/** Two connections to one fresh PostgreSQL mirror: a reader's and a writer's. */
async function twoConnections(): Promise<{ url: string; reader: SqlConnection; writer: SqlConnection }> {
  const url = await freshPostgresUrl();
  const writer = await openMirrorConnection(url);
  const reader = await openMirrorConnection(url, { readonly: true });
  cleanups.push(() => writer.close(), () => reader.close());
  return { url, reader, writer };
}

const listed = { id: 'txn_1', type: 'EXPENSE', status: 'PENDING', amount: -1250, description: 'Paper', date: '2026-11-20' };

describe('PostgreSQL change notifications', () => {
  it('a follower waiting on a ten-minute poll sees a change another connection appends', async () => {
    const { reader, writer } = await twoConnections();
    const store = new MirrorStore(writer);
    await store.applyRecords(transactionsStream, [listed]);
    const controller = new AbortController();
    const seen: ChangeEvent[] = [];
    for await (const event of followChanges(reader, { sinceSeq: 0, pollMs: LONG_POLL_MS, signal: controller.signal })) {
      seen.push(event);
      // Committed after the follower read the first: only a wake-up brings it before the poll.
      if (seen.length === 1) await store.applyRecords(transactionsStream, [{ ...listed, id: 'txn_2' }]);
      if (seen.length === 2) controller.abort();
    }
    expect(seen.map((event) => [event.type, event.recordId])).toEqual([
      ['transaction.created', 'txn_1'],
      ['transaction.created', 'txn_2'],
    ]);
  });

  it('the webhook dispatcher polling every ten minutes delivers a change another connection appends', async () => {
    const { url, writer } = await twoConnections();
    const target = await receiver();
    // The dispatcher writes its cursor: a read-write connection of its own, not the writer's.
    const dispatcherConnection = await openMirrorConnection(url);
    cleanups.push(() => dispatcherConnection.close());
    const dispatcher = new WebhookDispatcher({ connection: dispatcherConnection, endpoints: [{ name: 'crm', url: target.url, secret: newSecret(), events: ['*'] }], pollMs: LONG_POLL_MS, stopGraceMs: 100 });
    cleanups.push(() => dispatcher.stop());
    await dispatcher.start();
    await new MirrorStore(writer).applyRecords(transactionsStream, [listed]);
    await waitFor(() => target.requests.length === 1, 'the delivery woken by the notification');
    expect(JSON.parse(target.requests[0]!.body)).toMatchObject({ type: 'transaction.created', data: { record_id: 'txn_1' } });
  });

  it('sends one notification per committing transaction that appended changes, none on rollback, with the schema as payload', async () => {
    const { url, writer } = await twoConnections();
    const schema = new URL(url).searchParams.get('schema')!;
    const payloads: string[] = [];
    const listener = new pg.Client({ connectionString: TEST_POSTGRES_URL });
    await listener.connect();
    cleanups.push(() => listener.end());
    listener.on('notification', (message) => {
      if (message.payload === schema) payloads.push(message.channel);
    });
    await listener.query(`LISTEN ${CHANGES_CHANNEL}`);
    const store = new MirrorStore(writer);
    await expect(
      store.transaction(async (tx) => {
        await tx.applyRecords(transactionsStream, [listed]);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    await store.transaction(async (tx) => {
      await tx.applyRecords(transactionsStream, [listed]);
      await tx.applyRecords(transactionsStream, [{ ...listed, id: 'txn_2' }]);
    });
    await store.applyRecords(transactionsStream, [{ ...listed, id: 'txn_3' }]);
    // Notifications arrive in commit order: once the second is here, every earlier one is too.
    await waitFor(() => payloads.length >= 2, 'the notifications of two commits');
    expect(payloads).toEqual([CHANGES_CHANNEL, CHANGES_CHANNEL]);
  });
});

