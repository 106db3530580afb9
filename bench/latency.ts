/**
 * Benchmark: the polling budget at rest, and change-to-notification latency of the daemon.
 *
 * 1. Poll requests at rest (adaptive polling, docs/sync.md "Adaptive polling"). The scheduler driven
 *    tick by tick (no clock: one tick stands for one tick of the default 30-second schedule, so 120
 *    ticks are an hour), the real sync engine against the simulator over HTTP, a SQLite mirror,
 *    every stream backfilled first and nothing changing; the list requests of that hour, as a share
 *    of the spec's 60/min budget (3,600 an hour), with 250 and 1,000 open onboardings (a complete
 *    scan each poll: 3 and 10 pages). Adaptive (`sync.maxPollFactor` 16) and every tick
 *    (`maxPollFactor` 1, the schedule as before). Goal: adaptive <= 5%.
 *
 * 2. Change-to-notification latency of a busy stream. The real daemon wiring (jobs/daemon.ts:
 * node-cron incremental syncs every second, the sync engine, the SQLite mirror in a temp dir, the
 * webhook dispatcher woken by the engine) against the simulator over HTTP; a node:http receiver on
 * 127.0.0.1 answers 204.
 *
 * After the start-up backfill has been delivered, the stream is made busy (a warm-up change every
 * 50 ms until one was delivered and the stream polls on every tick), then 120 deals are changed in
 * the simulator, one every 50 ms (so the changes land at every phase of the poll interval). For
 * each, the latency is the time from the change to the arrival of its `deal.updated` webhook (one
 * never delivered counts as infinite). The bound is one poll interval
 * plus 2 s (3 s); the ratios p50/bound and p95/bound must stay below 1. Run with adaptive polling
 * (the default) and with `sync.maxPollFactor` 1 (every tick: the polling floor); the ratio of their
 * p95s shows a changing stream keeps its latency at the floor (goal about 1).
 *
 * Run alone: `node bench/latency.ts` (prints JSON). `BENCH_LATENCY_ONLY=busy` skips part 1.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { configSchema } from '../src/config/schema.ts';
import { openContext } from '../jobs/context.ts';
import { startDaemon } from '../jobs/daemon.ts';
import { StreamScheduler } from '../src/daemon/scheduler.ts';
import { changelogActivity } from '../src/mirror/changelog-activity.ts';
import type { StreamName } from '../src/streams/definitions.ts';
import { silentLogger } from '../src/logging/logger.ts';
import { startSimulator } from '@bizops-sync/simulator';

const CHANGES = 120;
const SPACING_MS = 50;
const POLL_INTERVAL_MS = 1_000;
const BOUND_MS = POLL_INTERVAL_MS + 2_000;

const TICKS_PER_HOUR = 120;
const HOURLY_BUDGET = 3_600;
const NEVER = '0 0 1 1 *';

/** List requests of an hour of 30-second ticks at rest, every stream backfilled first. */
async function requestsAtRest(onboardings: number, maxPollFactor: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-rest-'));
  const simulator = await startSimulator({ rateLimit: false, size: { transactions: 200, deals: 50, onboardings } });
  const config = configSchema.parse({
    baseUrl: simulator.url,
    tokens: { default: String(simulator.tokens.admin) },
    dbPath: join(dir, 'mirror.db'),
    rateLimit: { perMinute: 100_000 },
  });
  const context = await openContext(config, { logger: silentLogger, rateBudget: 'local' });
  const streams: StreamName[] = ['transactions', 'deals', 'onboardings'];
  const scheduler = new StreamScheduler({
    engine: context.engine,
    streams,
    schedule: NEVER,
    reconcileSchedule: NEVER,
    hasCursor: () => true,
    runAtStart: false,
    maxPollFactor,
    activity: changelogActivity(context.connection),
  });
  try {
    for (const stream of streams) await context.engine.run(stream, 'backfill');
    scheduler.start();
    const before = simulator.requests.length;
    for (let tick = 0; tick < TICKS_PER_HOUR; tick++) {
      for (const stream of streams) await scheduler.tick(stream);
      await scheduler.idle();
    }
    return simulator.requests.slice(before).filter((request) => request.method === 'GET').length;
  } finally {
    await scheduler.stop();
    await context.close();
    await simulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(): Promise<Record<string, number | string>> {
  const figures: Record<string, number | string> = {};
  for (const onboardings of process.env.BENCH_LATENCY_ONLY === 'busy' ? [] : [250, 1_000]) {
    const everyTick = await requestsAtRest(onboardings, 1);
    const adaptive = await requestsAtRest(onboardings, 16);
    figures[`at rest, ${onboardings} onboardings: requests/h every tick, adaptive`] = `${everyTick}, ${adaptive}`;
    figures[`at rest, ${onboardings} onboardings: share of 60/min, every tick`] = round(everyTick / HOURLY_BUDGET);
    figures[`at rest, ${onboardings} onboardings: share of 60/min, adaptive (goal <= 0.05)`] = round(adaptive / HOURLY_BUDGET);
  }
  const floor = await busyStreamLatency(1);
  const adaptive = await busyStreamLatency(16);
  figures['busy stream: delivered (floor, adaptive)'] = `${floor.delivered}/${CHANGES}, ${adaptive.delivered}/${CHANGES}`;
  figures['busy stream: p50 / p95 ms at the floor (every tick)'] = `${floor.p50} / ${floor.p95}`;
  figures['busy stream: p50 / p95 ms adaptive'] = `${adaptive.p50} / ${adaptive.p95}`;
  figures['busy stream: adaptive p95 / floor p95 (goal ~1)'] = round(adaptive.p95 / floor.p95);
  figures['busy stream: adaptive p95 / bound (1 s poll + 2 s)'] = round(adaptive.p95 / BOUND_MS);
  figures.path = 'simulator change -> cron sync (1 s) -> SQLite changelog -> dispatcher -> signed webhook';
  return figures;
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

/** Change-to-webhook latency of 120 deal changes, one every 50 ms, through the daemon (module comment). */
async function busyStreamLatency(maxPollFactor: number): Promise<{ delivered: number; p50: number; p95: number; max: number }> {
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
    sync: { schedule: '*/1 * * * * *', reconcileSchedule: '0 0 1 1 *', maxPollFactor },
    http: { port: 0 },
    webhooks: [{ name: 'bench', url, secret: `whsec_${randomBytes(32).toString('base64')}` }],
  });
  const daemon = await startDaemon(config, { logger: silentLogger, processMetrics: false });
  try {
    const backfillEvents = 200 + CHANGES + 30 + 10;
    while (received < backfillEvents) await sleep(20);

    // The stream is busy: it changes (one warm-up change every 50 ms) until a warm-up change was
    // delivered and the stream polls on every tick; then the measured changes.
    const all = simulator.world.groundTruth('deals') as { id: string }[];
    const warmUp = all.slice(CHANGES);
    for (let index = 0; !(warmUp.some((deal) => arrivals.has(deal.id)) && daemon.scheduler.pollFactor('deals') === 1); index++) {
      simulator.world.updateDeal(warmUp[index % warmUp.length]!.id, { title: `Warm-up change #${index}` });
      await sleep(SPACING_MS);
    }
    const deals = all.slice(0, CHANGES);
    const changedAt = new Map<string, number>();
    for (const [index, deal] of deals.entries()) {
      simulator.world.updateDeal(deal.id, { title: `Changed for the latency benchmark #${index}` });
      changedAt.set(deal.id, Date.now());
      await sleep(SPACING_MS);
    }
    // Long enough for a delivery that had to be retried; one never delivered counts as infinite.
    // Waits on the measured deals themselves: `arrivals` also holds the warm-up deals, so counting
    // it stopped the daemon before the last measured changes had been synced.
    const deadline = Date.now() + BOUND_MS * 10;
    while (!deals.every((deal) => arrivals.has(deal.id)) && Date.now() < deadline) await sleep(20);

    const latencies = deals.map((deal) => (arrivals.get(deal.id) ?? Number.POSITIVE_INFINITY) - changedAt.get(deal.id)!).sort((a, b) => a - b);
    const percentile = (p: number) => latencies[Math.min(latencies.length - 1, Math.ceil(p * latencies.length) - 1)]!;
    const p50 = percentile(0.5);
    const p95 = percentile(0.95);
    return { delivered: deals.filter((deal) => arrivals.has(deal.id)).length, p50, p95, max: latencies.at(-1)! };
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
