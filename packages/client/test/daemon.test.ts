/**
 * `@bizops-sync/client` against the real `bizops-sync daemon` on the simulator: a webhook it sent
 * verified (and a tampered one refused), a write submitted twice with one idempotency key (one write,
 * sent once), a named consumer reading the whole changelog across a daemon killed and restarted in
 * the middle of a page (each event handled once: the page read again is deduplicated), then the same
 * consumer after the retention pruned past its cursor (a 410: reset to a snapshot of every record).
 * Conditions only, no time asserted.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { openMirrorConnection } from '../../../src/mirror/index.ts';
import { pruneChangelog } from '../../../src/notify/index.ts';
import { groundTruthTotal, simulator, tempDir, type TempDir, waitFor } from '../../../test/helpers.ts';
import { cliEnv, newWebhookSecret, spawnDaemon, type DaemonProcess, WebhookReceiver } from '../../../test/daemon/helpers.ts';
import { IdempotencyConflictError, PullConsumer, type PulledEvent, verifyWebhook, WebhookVerificationError, WriteRejectedError, WriteSubmitter } from '../src/index.ts';
import { freePort } from '../../../test/free-port.ts';

const READ_KEY = 'read-key-0123456789abcdef';
const WRITE_KEY = 'write-key-0123456789abcdef';
let sim: RunningSimulator | undefined;
let dir: TempDir | undefined;
let receiver: WebhookReceiver | undefined;
const daemons: DaemonProcess[] = [];

afterEach(async () => {
  for (const daemon of daemons.splice(0)) if (daemon.child.exitCode === null && daemon.child.signalCode === null) daemon.child.kill('SIGKILL');
  await receiver?.close();
  await sim?.close();
  dir?.remove();
  sim = dir = receiver = undefined;
});

describe('@bizops-sync/client on a real daemon', { timeout: 120_000 }, () => {
  it('verifies its webhooks, submits a write once per idempotency key, consumes across a restart and a pruned cursor', async () => {
    sim = await simulator({ size: { transactions: 30, deals: 12, onboardings: 4 } });
    dir = tempDir();
    receiver = await new WebhookReceiver().start();
    const secret = newWebhookSecret();
    const port = await freePort();
    const env = cliEnv({
      BIZOPS_BASE_URL: sim.url,
      BIZOPS_TOKEN: String(sim.tokens.admin),
      BIZOPS_DB: dir.file('mirror.db'),
      BIZOPS_HTTP_PORT: String(port),
      BIZOPS_HTTP_HOST: '127.0.0.1',
      BIZOPS_SCHEDULE: '*/1 * * * * *',
      BIZOPS_RATE_LIMIT_PER_MIN: '100000',
      BIZOPS_READ_API_KEY: READ_KEY,
      BIZOPS_WRITE_API_KEY: WRITE_KEY,
      BIZOPS_WEBHOOK_URL: receiver.url,
      BIZOPS_WEBHOOK_SECRET: secret,
      ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
    });
    const start = () => {
      const daemon = spawnDaemon(env);
      daemons.push(daemon);
      return daemon;
    };
    const first = start();
    const url = await first.url;
    const latestSeq = async () => ((await (await fetch(`${url}/changes?after=0&limit=1`, { headers: { authorization: `Bearer ${READ_KEY}` } })).json()) as { latestSeq: number }).latestSeq;
    await waitFor(async () => (await latestSeq()) >= groundTruthTotal(sim!), 'the backfill in the changelog', 60_000);

    // Webhooks: a delivered request verifies (as node:http parts and as a Fetch Request); a tampered
    // body, another secret or a missing header does not; during a rotation either secret does.
    const delivered = await waitFor(() => receiver!.received[0], 'a webhook delivery', 30_000);
    const event = await verifyWebhook({ headers: delivered.headers, body: delivered.body }, secret);
    expect(event).toMatchObject({ id: delivered.headers['webhook-id'], type: expect.stringMatching(/\.created$/), data: { seq: 1 } });
    const asRequest = new Request('http://receiver/hooks', { method: 'POST', headers: delivered.headers as Record<string, string>, body: delivered.body });
    expect((await verifyWebhook(asRequest, [newWebhookSecret(), secret])).id).toBe(event.id);
    await expect(verifyWebhook({ headers: delivered.headers, body: delivered.body.replace('"seq":1', '"seq":2') }, secret)).rejects.toBeInstanceOf(WebhookVerificationError);
    await expect(verifyWebhook({ headers: delivered.headers, body: delivered.body }, newWebhookSecret())).rejects.toBeInstanceOf(WebhookVerificationError);
    await expect(verifyWebhook({ headers: { ...delivered.headers, 'webhook-signature': undefined }, body: delivered.body }, secret)).rejects.toThrow(/webhook-signature/);

    // Writes: the same idempotency key twice is one write, sent to the API once; an invalid one and
    // a key reused for another write are refused with what is wrong.
    const writes = new WriteSubmitter({ url, key: WRITE_KEY });
    const payload = { type: 'INCOME', amount: 1250, description: 'Catering', date: '2026-11-21' };
    const submitted = await writes.submit('transaction.create', payload, { idempotencyKey: 'order-42' });
    expect(submitted).toMatchObject({ created: true, write: { idempotencyKey: 'order-42' } });
    const again = await writes.submit('transaction.create', payload, { idempotencyKey: 'order-42' });
    expect(again).toMatchObject({ created: false, write: { id: submitted.write.id } });
    await expect(writes.submit('transaction.create', { ...payload, amount: 99 }, { idempotencyKey: 'order-42' })).rejects.toBeInstanceOf(IdempotencyConflictError);
    await expect(writes.submit('transaction.create', { ...payload, amount: 0 })).rejects.toBeInstanceOf(WriteRejectedError);
    await waitFor(async () => (await writes.get(submitted.write.id))?.status === 'succeeded', 'the write sent', 30_000);
    expect(sim.requests.filter((request) => request.method === 'POST' && request.path === '/api/public/v1/transactions')).toHaveLength(1);
    expect(await writes.get('wr_missing')).toBeNull();
    // Its change and write.succeeded recorded: the changelog's end for the consumer below.
    const end = await waitFor(async () => {
      const latest = await latestSeq();
      return latest >= groundTruthTotal(sim!) + 1 ? latest : undefined; // the new record is in the ground truth already
    }, 'the write recorded', 30_000);

    // A consumer reads the whole changelog 10 at a time; in the middle of its first page the daemon
    // is killed, and restarted once the consumer's acknowledgement failed: the page is read again
    // from the restarted daemon, and its events, handled already, are skipped.
    const errors: Error[] = [];
    const consumer = new PullConsumer({ url, key: READ_KEY, name: 'erp', after: 0, limit: 10, waitSeconds: 5, backoff: { baseMs: 20, maxMs: 200 }, onError: (error) => errors.push(error) });
    const handled: PulledEvent[] = [];
    let restarted: Promise<unknown> | undefined;
    for await (const pulled of consumer.events()) {
      handled.push(pulled);
      if (handled.length === 5) {
        first.child.kill('SIGKILL');
        await first.exited;
        restarted = waitFor(() => errors.length > 0, 'the acknowledgement failing').then(() => start().url);
      }
      if (pulled.data.seq === end) break;
    }
    await restarted;
    expect(handled.map((one) => one.data.seq)).toEqual(Array.from({ length: end }, (_, index) => index + 1));
    expect(new Set(handled.map((one) => one.id)).size).toBe(end);
    expect(consumer.stats).toMatchObject({ handled: end - 1, duplicates: 10 });
    expect(errors.length).toBeGreaterThan(0);
    // Left on its last event: acknowledged through the one before (the last was not finished).
    const state = (await (await fetch(`${url}/consumers/erp`, { headers: { authorization: `Bearer ${READ_KEY}` } })).json()) as { consumer: { cursor: number } };
    expect(state.consumer.cursor).toBe(end - 1);

    // The retention prunes past the consumer's cursor (put back behind it, as a consumer left
    // stopped on a restored mirror would be): its next read is a 410, and it starts over from a
    // snapshot, one <stream>.snapshot event per record.
    const connection = await openMirrorConnection(dir.file('mirror.db'));
    let oldestSeq: number;
    try {
      oldestSeq = (await pruneChangelog(connection, { before: new Date(Date.now() + 60_000), endpoints: [] })).oldestSeq;
      expect(oldestSeq).toBe(end);
      await connection.run('UPDATE consumers SET cursor = 0 WHERE name = ?', ['erp']);
    } finally {
      await connection.close();
    }
    const strict = new PullConsumer({ url, key: READ_KEY, name: 'erp', onPruned: 'throw' });
    await expect(strict.events().next()).rejects.toMatchObject({ name: 'CursorPrunedError', oldestSeq, message: expect.stringMatching(/reset\?initial=snapshot/) });
    const resets: { oldestSeq: number | null; boundary: number }[] = [];
    const late = new PullConsumer({ url, key: READ_KEY, name: 'erp', limit: 50, waitSeconds: 5, onReset: (info) => resets.push(info) });
    const snapshot: PulledEvent[] = [];
    const records = groundTruthTotal(sim);
    for await (const pulled of late.events()) {
      snapshot.push(pulled);
      if (snapshot.length === records) break;
    }
    expect(resets).toEqual([{ oldestSeq, boundary: end }]);
    expect(snapshot.every((one) => one.type.endsWith('.snapshot') && one.data.seq === end)).toBe(true);
    expect(new Set(snapshot.map((one) => `${one.data.stream}/${one.data.record_id}`)).size).toBe(records);
  });
});
