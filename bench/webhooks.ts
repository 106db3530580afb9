/**
 * Benchmark: webhook delivery, through the real WebhookDispatcher on a real SQLite mirror in a temp
 * dir, signed (Standard Webhooks HMAC-SHA256), to local node:http receivers on 127.0.0.1.
 *
 * 1. Rate against a receiver answering in 100 ms: a backlog of 3,000 events of 3,000 records with
 *    the default 16 requests in flight, as a ratio of the bound `maxInFlight / latency` (160/s);
 *    and strict per-endpoint order (`ordering: 'endpoint'`, one in flight) on 100 events, whose
 *    bound is `1 / latency` (10/s).
 * 2. Poison delay: the same 100 ms receiver rejects (422) every event of one record; the seconds
 *    the other records' 1,000 events take with the poison, minus the seconds they take without it
 *    (the delay the poison adds to them: about 0). With strict order the poison holds them for
 *    its whole retry schedule instead (the schedule's sum, not waited for).
 * 3. Dispatcher overhead: 5,000 events to a receiver answering at once (the cursor and the
 *    attempts written as the answers come), events per second.
 *
 * Run alone: `node bench/webhooks.ts` (prints JSON); in the suite: `npm run bench -- webhooks`.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WebhookEndpointConfig } from '../src/config/schema.ts';
import { openMirror } from '../src/mirror/database.ts';
import { sqliteConnection } from '../src/mirror/sql/sqlite.ts';
import { DEFAULT_MAX_IN_FLIGHT } from '../src/notify/delivery/delivery-dispatcher.ts';
import { WebhookDispatcher } from '../src/notify/webhooks/dispatcher.ts';
import { STANDARD_RETRY_SCHEDULE_MS } from '../src/notify/delivery/retry-schedule.ts';

const LATENCY_MS = 100;

interface Receiver {
  url: string;
  /** Arrival time (performance.now()) of the first 2xx of each record's events, by record id. */
  deliveredAt: Map<string, number>;
  delivered: number;
  close(): Promise<void>;
}

/** A receiver answering after `latencyMs`: 422 for the record `poison`, 204 otherwise. */
async function startReceiver(latencyMs: number, poison?: string): Promise<Receiver> {
  const deliveredAt = new Map<string, number>();
  const receiver: Receiver = { url: '', deliveredAt, delivered: 0, close: async () => undefined };
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const recordId = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data: { record_id: string } }).data.record_id;
      const answer = () => {
        if (recordId === poison) {
          response.writeHead(422).end('{"error":"cannot process"}');
          return;
        }
        receiver.delivered += 1;
        deliveredAt.set(recordId, performance.now());
        response.writeHead(204).end();
      };
      if (latencyMs > 0) setTimeout(answer, latencyMs);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return receiver;
}

/**
 * Delivers `records.length` events (one per entry, `records[i]` its record id) through a fresh
 * mirror and dispatcher to `receiver`, until `done(receiver)`.
 * @returns seconds from the dispatcher's wake-up until `done`
 */
async function deliver(records: readonly string[], receiver: Receiver, endpoint: Partial<WebhookEndpointConfig>, done: (receiver: Receiver) => boolean): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-webhooks-'));
  const db = openMirror(join(dir, 'mirror.db'));
  const connection = sqliteConnection(db);
  const dispatcher = new WebhookDispatcher({
    connection,
    endpoints: [{ name: 'bench', url: receiver.url, secret: `whsec_${randomBytes(32).toString('base64')}`, events: ['*'], ...endpoint }],
    pollMs: 1000,
  });
  try {
    await dispatcher.start();
    const insert = db.prepare('INSERT INTO changes (event_id, type, stream, record_id, occurred_at, data) VALUES (?, ?, ?, ?, ?, ?)');
    db.transaction(() => {
      records.forEach((id, index) => {
        const record = { id, title: `Deal ${index}`, status: 'WON', value: 125_000, currency: 'USD', ownerId: 'emp_1' };
        insert.run(`evt_${randomUUID()}`, 'deal.won', 'deals', id, new Date().toISOString(), JSON.stringify({ record, changes: { status: { old: 'OPEN', new: 'WON' } } }));
      });
    })();
    const started = performance.now();
    dispatcher.notify();
    while (!done(receiver)) await new Promise((resolve) => setTimeout(resolve, 5));
    return (performance.now() - started) / 1000;
  } finally {
    await dispatcher.stop();
    await connection.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const round = (value: number, digits = 3) => Number(value.toFixed(digits));

export async function run(): Promise<Record<string, number | string>> {
  const figures: Record<string, number | string> = {};

  // 1. Rate against a 100 ms receiver.
  const backlog = Array.from({ length: 3000 }, (_, index) => `deal_${index}`);
  let receiver = await startReceiver(LATENCY_MS);
  const parallelSeconds = await deliver(backlog, receiver, {}, (r) => r.delivered >= backlog.length);
  await receiver.close();
  const parallelRate = backlog.length / parallelSeconds;
  const bound = DEFAULT_MAX_IN_FLIGHT / (LATENCY_MS / 1000);
  figures['by record: events, receiver latency ms'] = `${backlog.length}, ${LATENCY_MS}`;
  figures['by record: maxInFlight (default)'] = DEFAULT_MAX_IN_FLIGHT;
  figures['by record: events/s'] = round(parallelRate, 1);
  figures['by record: events/s over maxInFlight/latency (goal >= 0.8)'] = round(parallelRate / bound);

  const strictBacklog = backlog.slice(0, 100);
  receiver = await startReceiver(LATENCY_MS);
  const strictSeconds = await deliver(strictBacklog, receiver, { ordering: 'endpoint' }, (r) => r.delivered >= strictBacklog.length);
  await receiver.close();
  const strictRate = strictBacklog.length / strictSeconds;
  figures['strict order: events/s (one in flight, 100 events)'] = round(strictRate, 1);
  figures['strict order: events/s over 1/latency'] = round(strictRate / (1000 / LATENCY_MS));
  figures['by record over strict order, events/s ratio'] = round(parallelRate / strictRate, 1);

  // 2. Poison delay: the other records' events with and without a record whose every event is rejected.
  const others = Array.from({ length: 1000 }, (_, index) => `deal_${index}`);
  const withPoison = others.flatMap((id, index) => (index % 100 === 0 ? ['deal_poison', id] : [id]));
  receiver = await startReceiver(LATENCY_MS);
  const cleanSeconds = await deliver(others, receiver, {}, (r) => r.delivered >= others.length);
  await receiver.close();
  receiver = await startReceiver(LATENCY_MS, 'deal_poison');
  const poisonedSeconds = await deliver(withPoison, receiver, {}, (r) => r.delivered >= others.length);
  await receiver.close();
  figures['poison: other events, poisoned events'] = `${others.length}, ${withPoison.length - others.length}`;
  figures['poison: others delivered in, s (clean / with poison)'] = `${round(cleanSeconds, 2)} / ${round(poisonedSeconds, 2)}`;
  const strictHoldMs = STANDARD_RETRY_SCHEDULE_MS.reduce((sum, ms) => sum + ms, 0);
  figures['poison: delay added to other records, s'] = round(Math.max(0, poisonedSeconds - cleanSeconds), 2);
  figures['poison: others delivered in, with over without (goal ~1)'] = round(poisonedSeconds / cleanSeconds);
  figures['poison: delay under strict order, h (retry schedule)'] = round(strictHoldMs / 3_600_000, 1);
  figures['poison: delay by record over delay under strict order'] = Number((Math.max(0, poisonedSeconds - cleanSeconds) / (strictHoldMs / 1000)).toExponential(1));

  // 3. Dispatcher overhead: a receiver answering at once.
  const many = Array.from({ length: 5000 }, (_, index) => `deal_${index}`);
  receiver = await startReceiver(0);
  const fastSeconds = await deliver(many, receiver, {}, (r) => r.delivered >= many.length);
  await receiver.close();
  figures['instant receiver: events/s (5,000 events)'] = Math.round(many.length / fastSeconds);
  figures.signing = 'standardwebhooks v1 HMAC-SHA256';
  return figures;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await run(), null, 2));
}
