/**
 * Benchmark: change-to-notification latency of the daemon. The real daemon wiring (jobs/daemon.ts:
 * node-cron incremental syncs every second, the sync engine, the SQLite mirror in a temp dir, the
 * webhook dispatcher woken by the engine) against the simulator over HTTP; a node:http receiver on
 * 127.0.0.1 answers 204.
 *
 * After the start-up backfill has been delivered, 120 deals are changed in the simulator, one every
 * 50 ms (so the changes land at every phase of the poll interval). For each, the latency is the
 * time from the change to the arrival of its `deal.updated` webhook. The bound is one poll interval
 * plus 2 s (3 s); the ratios p50/bound and p95/bound must stay below 1.
 *
 * Run alone: `node bench/latency.ts` (prints JSON).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { configSchema } from '../src/config/schema.ts';
import { startDaemon } from '../jobs/daemon.ts';
import { silentLogger } from '../src/logging/logger.ts';
import { startSimulator } from '@bizops-sync/simulator';

const CHANGES = 120;
const SPACING_MS = 50;
const POLL_INTERVAL_MS = 1_000;
const BOUND_MS = POLL_INTERVAL_MS + 2_000;

export async function run(): Promise<Record<string, number | string>> {
  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-latency-'));
  const simulator = await startSimulator({ rateLimit: false, size: { transactions: 200, deals: CHANGES + 30, onboardings: 10 } });
  /** First arrival (Date.now()) of a deal.updated webhook, by deal id. */
  const arrivals = new Map<string, number>();
  let received = 0;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const at = Date.now();
      received += 1;
      const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type: string; data: { record_id: string } };
      if (message.type === 'deal.updated' && !arrivals.has(message.data.record_id)) arrivals.set(message.data.record_id, at);
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  const config = configSchema.parse({
    baseUrl: simulator.url,
    tokens: { default: String(simulator.tokens.admin) },
    dbPath: join(dir, 'mirror.db'),
    rateLimit: { perMinute: 100_000 },
    sync: { schedule: '*/1 * * * * *', reconcileSchedule: '0 0 1 1 *' },
    http: { port: 0 },
    webhooks: [{ name: 'bench', url, secret: `whsec_${randomBytes(32).toString('base64')}` }],
  });
  const daemon = await startDaemon(config, { logger: silentLogger, processMetrics: false });
  try {
    const backfillEvents = 200 + CHANGES + 30 + 10;
    while (received < backfillEvents) await sleep(20);

    const deals = (simulator.world.groundTruth('deals') as { id: string }[]).slice(0, CHANGES);
    const changedAt = new Map<string, number>();
    for (const [index, deal] of deals.entries()) {
      simulator.world.updateDeal(deal.id, { title: `Changed for the latency benchmark #${index}` });
      changedAt.set(deal.id, Date.now());
      await sleep(SPACING_MS);
    }
    const deadline = Date.now() + BOUND_MS * 3;
    while (arrivals.size < CHANGES && Date.now() < deadline) await sleep(20);

    const latencies = deals.map((deal) => (arrivals.get(deal.id) ?? Number.POSITIVE_INFINITY) - changedAt.get(deal.id)!).sort((a, b) => a - b);
    const percentile = (p: number) => latencies[Math.min(latencies.length - 1, Math.ceil(p * latencies.length) - 1)]!;
    const p50 = percentile(0.5);
    const p95 = percentile(0.95);
    return {
      changes: CHANGES,
      delivered: arrivals.size,
      pollIntervalMs: POLL_INTERVAL_MS,
      boundMs: BOUND_MS,
      p50Ms: p50,
      p95Ms: p95,
      maxMs: latencies.at(-1)!,
      p50OfBound: Math.round((p50 / BOUND_MS) * 1000) / 1000,
      p95OfBound: Math.round((p95 / BOUND_MS) * 1000) / 1000,
      path: 'simulator change -> cron sync (1 s) -> SQLite changelog -> dispatcher -> signed webhook',
    };
  } finally {
    await daemon.stop();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
    await simulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await run(), null, 2));
}
