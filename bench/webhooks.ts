/**
 * Benchmark: webhook delivery throughput. 5000 changelog events delivered, signed (Standard
 * Webhooks HMAC-SHA256 via the standardwebhooks library), one at a time in order, to a local
 * node:http receiver on 127.0.0.1 answering 204, through the real WebhookDispatcher and a real
 * SQLite mirror in a temp dir (the cursor is committed after every 2xx).
 *
 * The receiver runs in the same process, so the figure is a lower bound for one endpoint.
 * Run alone: `node bench/webhooks.ts` (prints JSON).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openMirror } from '../src/mirror/database.ts';
import { sqliteConnection } from '../src/mirror/sql/sqlite.ts';
import { WebhookDispatcher } from '../src/notify/webhooks/dispatcher.ts';
import { loadEndpoint } from '../src/notify/webhooks/endpoint-store.ts';

const EVENTS = 5000;

export async function run(): Promise<Record<string, number | string>> {
  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-webhooks-'));
  const db = openMirror(join(dir, 'mirror.db'));
  const connection = sqliteConnection(db);
  let received = 0;
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      received += 1;
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  const attemptMs: number[] = [];
  const dispatcher = new WebhookDispatcher({
    connection,
    endpoints: [{ name: 'bench', url, secret: `whsec_${randomBytes(32).toString('base64')}`, events: ['*'] }],
    pollMs: 1000,
    onAttempt: (attempt) => attemptMs.push(attempt.durationMs),
  });
  try {
    await dispatcher.start();
    const insert = db.prepare('INSERT INTO changes (event_id, type, stream, record_id, occurred_at, data) VALUES (?, ?, ?, ?, ?, ?)');
    db.transaction(() => {
      for (let index = 0; index < EVENTS; index += 1) {
        const record = { id: `deal_${index}`, title: `Deal ${index}`, status: 'WON', value: 125_000, currency: 'USD', ownerId: 'emp_1' };
        const data = { record, changes: { status: { old: 'OPEN', new: 'WON' } } };
        insert.run(`evt_${randomUUID()}`, 'deal.won', 'deals', record.id, new Date().toISOString(), JSON.stringify(data));
      }
    })();
    const started = performance.now();
    dispatcher.notify();
    while ((await loadEndpoint(connection, 'bench'))!.deliveredSeq < EVENTS) await new Promise((resolve) => setTimeout(resolve, 5));
    const seconds = (performance.now() - started) / 1000;
    attemptMs.sort((a, b) => a - b);
    const percentile = (p: number) => attemptMs[Math.min(attemptMs.length - 1, Math.floor(p * attemptMs.length))] ?? 0;
    return {
      events: EVENTS,
      received,
      seconds: Math.round(seconds * 1000) / 1000,
      eventsPerSecond: Math.round(EVENTS / seconds),
      attemptP50Ms: percentile(0.5),
      attemptP99Ms: percentile(0.99),
      signing: 'standardwebhooks v1 HMAC-SHA256',
    };
  } finally {
    await dispatcher.stop();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await connection.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await run(), null, 2));
}
