/**
 * Benchmark: the polling budget at rest, a rested stream's first change, and change-to-notification
 * latency of a busy stream.
 *
 * 1. At rest (adaptive polling and the change probe, docs/sync.md "Adaptive polling", "Change
 *    probe"). The scheduler driven tick by tick (no clock: one tick stands for one tick of the
 *    default 30-second schedule, so 120 ticks are an hour; the simulator's clock, its records'
 *    stamps and its `Date` header, moves 30 s per tick), the real sync engine against the simulator
 *    over HTTP, a SQLite mirror, every stream backfilled first.
 *    a. Requests at rest: nothing changing; the list requests of that hour, as a share of the spec's
 *       60/min budget (3,600 an hour), with 250 and 1,000 open onboardings (a complete scan: 3 and
 *       10 pages). The defaults (`sync.maxPollFactor` 4, `sync.maxScanFactor` 16), every tick
 *       (1), and without the probe (`maxScanFactor` 1) at factor 16 (the defaults before) and 4.
 *       Goal: <= 5% with 250.
 *    b. A rested stream's first change to its webhook: the real daemon (jobs/daemon.ts, its
 *       schedules never firing: `scheduler.tick` drives them) with a webhook endpoint on 127.0.0.1.
 *       For each kind of change (a deal updated, a transaction created, one confirmed, an
 *       onboarding started, one's step changed, one completed) and each phase 0..15 (ticks after
 *       one of the stream's resting polls, so every phase of the poll interval and of the scan
 *       interval), the stream is brought to rest (its interval at `maxPollFactor`), the change is
 *       made `phase` ticks after a poll, and the ticks are counted until its event reached the
 *       webhook endpoint (one tick: the change was made just after a tick and found by the next;
 *       counted from the tick before the change, so a change at a random moment waits up to a tick
 *       less). p50, p95 and worst in ticks and minutes (x 0.5 on the default schedule), over all
 *       kinds, and p95 and worst per kind. Goal: p95 <= 4 ticks (2 min).
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
 * Run alone: `node bench/latency.ts` (prints JSON). `BENCH_LATENCY_ONLY=busy` skips part 1;
 * `BENCH_LATENCY_ONLY=rest` skips part 2.
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
import { DEFAULT_MAX_POLL_FACTOR, DEFAULT_MAX_SCAN_FACTOR } from '../src/daemon/poll-backoff.ts';
import { StreamScheduler } from '../src/daemon/scheduler.ts';
import { changelogActivity } from '../src/mirror/changelog-activity.ts';
import type { StreamName } from '../src/streams/definitions.ts';
import { silentLogger } from '../src/logging/logger.ts';
import { startSimulator, type RunningSimulator } from '@bizops-sync/simulator';

const CHANGES = 120;
const SPACING_MS = 50;
const POLL_INTERVAL_MS = 1_000;
const BOUND_MS = POLL_INTERVAL_MS + 2_000;

const TICKS_PER_HOUR = 120;
/** One tick of the default schedule, ms. */
const TICK_MS = 30_000;
const HOURLY_BUDGET = 3_600;
const NEVER = '0 0 1 1 *';

/** A simulator clock that moves one tick of the default schedule each time `advance` is called. */
function tickClock(): { clock: () => number; advance: () => void } {
  let ticks = 0;
  return { clock: () => Date.now() + ticks * TICK_MS, advance: () => void (ticks += 1) };
}

/** The polling settings compared at rest. */
interface PollSettings {
  maxPollFactor: number;
  maxScanFactor: number;
}

/** List requests of an hour of 30-second ticks at rest, every stream backfilled first. */
async function requestsAtRest(onboardings: number, settings: PollSettings): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-rest-'));
  const time = tickClock();
  const simulator = await startSimulator({ rateLimit: false, clock: time.clock, size: { transactions: 200, deals: 50, onboardings } });
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
    ...settings,
    activity: changelogActivity(context.connection),
  });
  try {
    for (const stream of streams) await context.engine.run(stream, 'backfill');
    scheduler.start();
    const before = simulator.requests.length;
    for (let tick = 0; tick < TICKS_PER_HOUR; tick++) {
      time.advance();
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

/**
 * A kind of change a rested stream sees first: its stream, its event, and how the simulator makes
 * it to the `sample`-th record of its kind (each sample a record of its own: its event is new);
 * returns the record's id.
 */
interface ChangeKind {
  name: string;
  stream: StreamName;
  event: string;
  make(world: RunningSimulator['world'], sample: number): string;
}

const CHANGE_KINDS: readonly ChangeKind[] = [
  { name: 'deal updated', stream: 'deals', event: 'deal.updated', make: (world, sample) => world.updateDeal(world.deals[sample]!.id, { title: `Rested change ${sample}` }).id },
  { name: 'transaction created', stream: 'transactions', event: 'transaction.created', make: (world) => world.createTransaction({ status: 'PENDING' }).id },
  { name: 'transaction confirmed', stream: 'transactions', event: 'transaction.confirmed', make: (world) => world.updateTransaction(pendingTransaction(world), { status: 'CONFIRMED' }).id },
  { name: 'onboarding started', stream: 'onboardings', event: 'onboarding.started', make: (world) => world.startOnboarding().id },
  { name: 'onboarding step changed', stream: 'onboardings', event: 'onboarding.step_changed', make: (world, sample) => world.advanceOnboarding(world.onboardings[100 + sample]!.id).id },
  { name: 'onboarding completed', stream: 'onboardings', event: 'onboarding.completed', make: (world) => world.completeOnboarding(world.onboardings[0]!.id).id },
];

/** A PENDING transaction's id that the mirror holds already (created in the seed data). */
function pendingTransaction(world: RunningSimulator['world']): string {
  const pending = world.transactions.find((transaction) => transaction.status === 'PENDING');
  if (!pending) throw new Error('the simulator holds no PENDING transaction left to confirm');
  return pending.id;
}

/** Phases measured: ticks after a resting poll (0..15 covers every phase of a 4-tick poll and a 16-tick scan interval). */
const PHASES = 16;

/** Most ticks a change may take before it counts as never delivered. */
const GIVE_UP_TICKS = 64;

/**
 * A rested stream's first change to its webhook, in ticks, for every kind and phase (module
 * comment, 1b): the real daemon, its schedules driven by `scheduler.tick`.
 */
async function restedFirstChange(settings: PollSettings): Promise<{ all: number[]; byKind: Record<string, number[]> }> {
  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-rested-'));
  const time = tickClock();
  const simulator = await startSimulator({ rateLimit: false, clock: time.clock, size: { transactions: 200, deals: 50, onboardings: 250 } });
  /** Webhook events received, as `type record_id`. */
  const arrived = new Set<string>();
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type: string; data: { record_id: string } };
      arrived.add(`${message.type} ${message.data.record_id}`);
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
    sync: { schedule: NEVER, reconcileSchedule: NEVER, streams: ['transactions', 'deals', 'onboardings'], ...settings },
    http: { port: 0 },
    webhooks: [{ name: 'bench', url, secret: `whsec_${randomBytes(32).toString('base64')}` }],
  });
  const daemon = await startDaemon(config, { logger: silentLogger, processMetrics: false });
  const { scheduler } = daemon;
  /** One tick of `stream`, its runs awaited; the outcome. */
  const tick = async (stream: StreamName) => {
    time.advance();
    const outcome = await scheduler.tick(stream);
    await scheduler.idle();
    return outcome;
  };
  const all: number[] = [];
  const byKind: Record<string, number[]> = {};
  try {
    // The start's backfills; then every stream's lease is held (a tick is not `standby`).
    await scheduler.idle();
    for (const stream of ['transactions', 'deals', 'onboardings'] as const) {
      for (let waited = 0; (await scheduler.tick(stream)) === 'standby'; waited++) {
        if (waited > 500) throw new Error(`the daemon did not take the lease of ${stream}`);
        await sleep(20);
      }
      await scheduler.idle();
    }
    for (const kind of CHANGE_KINDS) {
      const latencies: number[] = (byKind[kind.name] = []);
      for (let phase = 0; phase < PHASES; phase++) {
        // At rest: the interval at its largest, then right after a resting poll, then `phase` ticks.
        for (let ticks = 0; scheduler.pollFactor(kind.stream) < settings.maxPollFactor; ticks++) {
          if (ticks > 200) throw new Error(`${kind.stream} did not come to rest`);
          await tick(kind.stream);
        }
        for (let ticks = 0; (await tick(kind.stream)) !== 'started'; ticks++) if (ticks > settings.maxPollFactor) throw new Error(`${kind.stream} did not poll`);
        for (let ticks = 0; ticks < phase; ticks++) await tick(kind.stream);
        const id = kind.make(simulator.world, phase);
        const key = `${kind.event} ${id}`;
        if (arrived.has(key)) throw new Error(`${key} arrived before it was made: each sample needs a record of its own`);
        let ticks = 0;
        while (!arrived.has(key) && ticks < GIVE_UP_TICKS) {
          ticks += 1;
          await tick(kind.stream);
          // Found by this tick: wait for its delivery (the commit woke the dispatcher).
          const found = await daemon.context.connection.get('SELECT seq FROM changes WHERE type = ? AND record_id = ?', [kind.event, id]);
          for (let waited = 0; found && !arrived.has(key) && waited < 1_000; waited++) await sleep(10);
        }
        const latency = arrived.has(key) ? ticks : Number.POSITIVE_INFINITY;
        latencies.push(latency);
        all.push(latency);
      }
    }
    return { all, byKind };
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

/** The nearest-rank percentile `p` (0..1) of `values`. */
function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

/** `N ticks (M min)` on the default 30-second schedule. */
function inTicks(ticks: number): string {
  return Number.isFinite(ticks) ? `${ticks} ticks (${ticks / 2} min)` : 'never';
}

export async function run(): Promise<Record<string, number | string>> {
  const figures: Record<string, number | string> = {};
  const only = process.env.BENCH_LATENCY_ONLY;
  const compared: [string, PollSettings][] = [
    ['defaults (poll 4, scan 16)', { maxPollFactor: DEFAULT_MAX_POLL_FACTOR, maxScanFactor: DEFAULT_MAX_SCAN_FACTOR }],
    ['every tick', { maxPollFactor: 1, maxScanFactor: 1 }],
    ['poll 16, no probe (before)', { maxPollFactor: 16, maxScanFactor: 1 }],
    ['poll 4, no probe', { maxPollFactor: 4, maxScanFactor: 1 }],
  ];
  for (const onboardings of only === 'busy' ? [] : [250, 1_000]) {
    for (const [name, settings] of compared) {
      const requests = await requestsAtRest(onboardings, settings);
      figures[`at rest, ${onboardings} onboardings, ${name}: requests/h, share of 60/min (goal <= 0.05)`] = `${requests}, ${round(requests / HOURLY_BUDGET)}`;
    }
  }
  if (only !== 'busy') {
    for (const [name, settings] of [compared[0]!, compared[2]!]) {
      const { all, byKind } = await restedFirstChange(settings);
      figures[`rested first change, ${name}: p50 / p95 / worst (goal p95 <= 4 ticks, 2 min)`] = `${inTicks(percentile(all, 0.5))} / ${inTicks(percentile(all, 0.95))} / ${inTicks(Math.max(...all))}`;
      for (const [kind, latencies] of Object.entries(byKind)) {
        figures[`  ${name}, ${kind}: p95 / worst of ${latencies.length} phases`] = `${inTicks(percentile(latencies, 0.95))} / ${inTicks(Math.max(...latencies))}`;
      }
    }
  }
  if (only === 'rest') return figures;
  const floor = await busyStreamLatency(1);
  const adaptive = await busyStreamLatency(DEFAULT_MAX_POLL_FACTOR);
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
