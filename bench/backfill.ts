/**
 * Benchmark: backfill of 100,000 transactions (issue 2).
 *
 * 1. Over the network: the simulator (in this process) with a scaled rate limit, and the worker as
 *    a child process running `bizops-sync backfill --stream transactions`, as a user would.
 *    Prints requests sent / minimum possible, wall time / the time the rate limit allows, 429s.
 * 2. Memory (goal: flat, not growing with N): peak RSS of the worker process at N/2 and N, and the
 *    JavaScript heap after a full GC at the middle and at the end of one in-process backfill.
 * 3. With the network taken out: records per second through validation (zod), hashing and the
 *    SQLite commit (records, changelog, checkpoint per page), as a ratio to a plain better-sqlite3
 *    insert loop of the same rows in transactions of 100.
 *
 * Run alone: `node bench/backfill.ts` (prints JSON). `BENCH_BACKFILL_N` overrides 100000.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import Database from 'better-sqlite3';
import { configSchema } from '../src/config/schema.ts';
import { openContext } from '../jobs/context.ts';
import { silentLogger } from '../src/logging/logger.ts';
import { openMirror } from '../src/mirror/database.ts';
import { MirrorStore } from '../src/mirror/store.ts';
import { startSimulator } from '@bizops-sync/simulator';
import { transactionListItemSchema } from '../src/client/schemas.ts';
import { transactionsStream } from '../src/streams/definitions.ts';

const BIN = fileURLToPath(new URL('../bin/bizops-sync.js', import.meta.url));
const PAGE = 100;
/**
 * The scaled rate limit: the spec's 60 requests per minute (§8) with time compressed 60 times, so a
 * window is one second. The wall-time ratio then says how close a backfill comes to the limit; the
 * commit-rate figure says how much headroom the worker has beyond it.
 */
const LIMIT = 60;
const WINDOW_MS = 1000;

interface WorkerRun {
  wallMs: number;
  peakRssMb: number;
  requests: number;
  rateLimited: number;
}

/** Backfills `n` transactions through the CLI in a child process, sampling its RSS. */
async function backfillThroughCli(n: number): Promise<WorkerRun> {
  const simulator = await startSimulator({ size: { transactions: n, deals: 0, onboardings: 0 }, rateLimit: { limit: LIMIT, windowMs: WINDOW_MS } });
  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-backfill-'));
  try {
    const started = performance.now();
    const child = spawn(process.execPath, [BIN, 'backfill', '--stream', 'transactions', '--no-progress'], {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        BIZOPS_BASE_URL: simulator.url,
        BIZOPS_TOKEN: String(simulator.tokens.admin),
        BIZOPS_DB: join(dir, 'mirror.db'),
        BIZOPS_RATE_LIMIT_PER_MIN: String(LIMIT),
        BIZOPS_RATE_WINDOW_MS: String(WINDOW_MS),
        BIZOPS_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    let peakKb = 0;
    const sample = () => {
      try {
        const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
        if (match) peakKb = Math.max(peakKb, Number(match[1]));
      } catch {
        // the process has exited
      }
    };
    const timer = setInterval(sample, 50);
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    clearInterval(timer);
    if (code !== 0) throw new Error(`backfill exited with ${String(code)}`);
    const requests = simulator.requests.filter((r) => r.path.endsWith('/transactions'));
    return {
      wallMs: performance.now() - started,
      peakRssMb: peakKb / 1024,
      requests: requests.length,
      rateLimited: requests.filter((r) => r.status === 429).length,
    };
  } finally {
    await simulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Records per second: validation + hashing + SQLite commit per page, versus a plain insert loop. */
async function commitThroughput(n: number): Promise<{ engineRecordsPerSecond: number; plainRecordsPerSecond: number }> {
  const simulator = await startSimulator({ size: { transactions: n, deals: 0, onboardings: 0 }, rateLimit: false });
  const records = simulator.world.groundTruth('transactions');
  await simulator.close();
  // The pages as JSON text, the way they arrive, so parsing is part of the measured work.
  const pages: string[] = [];
  for (let offset = 0; offset < records.length; offset += PAGE) pages.push(JSON.stringify(records.slice(offset, offset + PAGE)));
  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-commit-'));
  try {
    const db = openMirror(join(dir, 'engine.db'));
    const store = new MirrorStore(db);
    let started = performance.now();
    let offset = 0;
    for (const text of pages) {
      const items = (JSON.parse(text) as unknown[]).map((item) => transactionListItemSchema.parse(item));
      offset += items.length;
      store.transaction(() => {
        store.applyRecords(transactionsStream, items, { scanNumber: 1 });
        store.saveRun('transactions', { mode: 'complete', reason: 'backfill', startedAt: '', offset, pages: 0, records: offset, changes: offset });
      });
    }
    const engineSeconds = (performance.now() - started) / 1000;
    db.close();

    const plain = new Database(join(dir, 'plain.db'));
    plain.pragma('journal_mode = WAL');
    plain.pragma('synchronous = NORMAL');
    plain.exec('CREATE TABLE transactions (id TEXT PRIMARY KEY, type TEXT, status TEXT, amount INTEGER, description TEXT, date TEXT, raw TEXT)');
    const insert = plain.prepare('INSERT INTO transactions VALUES (?, ?, ?, ?, ?, ?, ?)');
    const insertPage = plain.transaction((rows: Record<string, unknown>[]) => {
      for (const row of rows) insert.run(row.id, row.type, row.status, row.amount, row.description, row.date, JSON.stringify(row));
    });
    started = performance.now();
    for (const text of pages) insertPage(JSON.parse(text) as Record<string, unknown>[]);
    const plainSeconds = (performance.now() - started) / 1000;
    plain.close();
    return { engineRecordsPerSecond: n / engineSeconds, plainRecordsPerSecond: n / plainSeconds };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Heap used after a full GC (MB) when a backfill of `n` is half done and when it is done. */
async function heapDuringBackfill(n: number): Promise<{ middleMb: number; endMb: number }> {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const heapMb = () => {
    gc();
    return process.memoryUsage().heapUsed / 1024 / 1024;
  };
  const simulator = await startSimulator({ size: { transactions: n, deals: 0, onboardings: 0 }, rateLimit: false });
  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-heap-'));
  const config = configSchema.parse({
    baseUrl: simulator.url,
    tokens: { default: String(simulator.tokens.admin) },
    dbPath: join(dir, 'mirror.db'),
    rateLimit: { perMinute: 1_000_000 },
  });
  const context = await openContext(config, { logger: silentLogger, rateBudget: 'local' });
  let middleMb = 0;
  try {
    await context.engine.run('transactions', 'backfill', {
      onProgress: (progress) => {
        if (middleMb === 0 && progress.records >= n / 2) middleMb = heapMb();
      },
    });
    return { middleMb, endMb: heapMb() };
  } finally {
    await context.close();
    await simulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(): Promise<Record<string, number | string>> {
  const n = Number(process.env.BENCH_BACKFILL_N ?? 100_000);
  // Half of N: the peak RSS of the two should match (memory flat, not growing with N).
  const small = Math.max(PAGE, Math.floor(n / 2));
  const large = await backfillThroughCli(n);
  const smallRun = await backfillThroughCli(small);
  const commit = await commitThroughput(n);
  const heap = await heapDuringBackfill(n);
  const minimumRequests = Math.ceil(n / PAGE);
  // The first window's LIMIT requests go at once; each further LIMIT needs one more window.
  const rateBoundMs = (Math.ceil(minimumRequests / LIMIT) - 1) * WINDOW_MS;
  const round = (value: number, digits = 3) => Number(value.toFixed(digits));
  return {
    records: n,
    scaledRateLimit: `${LIMIT} per ${WINDOW_MS} ms`,
    requestsSent: large.requests,
    'requests / minimum possible': round(large.requests / minimumRequests),
    wallSeconds: round(large.wallMs / 1000, 2),
    rateLimitBoundSeconds: round(rateBoundMs / 1000, 2),
    'wall time / rate-limit bound': round(large.wallMs / rateBoundMs),
    '429s received': large.rateLimited,
    engineRecordsPerSecond: Math.round(commit.engineRecordsPerSecond),
    plainInsertRecordsPerSecond: Math.round(commit.plainRecordsPerSecond),
    'engine commit rate / plain insert rate': round(commit.engineRecordsPerSecond / commit.plainRecordsPerSecond),
    [`peakRssMb at N=${small}`]: round(smallRun.peakRssMb, 1),
    [`peakRssMb at N=${n}`]: round(large.peakRssMb, 1),
    'peak RSS growth (large / small)': round(large.peakRssMb / smallRun.peakRssMb),
    'heap after GC at N/2, MB': round(heap.middleMb, 1),
    'heap after GC at N, MB': round(heap.endMb, 1),
    'heap growth (N / (N/2))': round(heap.endMb / heap.middleMb),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await run(), null, 2));
}
