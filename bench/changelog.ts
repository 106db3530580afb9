/**
 * Benchmark: the changelog's size and the memory of reading it.
 *
 * 1. Bytes: a backfill of real simulator transactions into a fresh mirror; the mean length of a
 *    created change's `data` over the mean length of the record's `raw` (goal <= 1.5). The whole
 *    row (every column of `changes`) is printed beside it for information.
 * 2. Memory: `bizops-sync changes --since 0` over a mirror of N created events (default 1,000,000),
 *    its peak RSS over that of a plain reader (bench/plain-changes-reader.ts: one better-sqlite3
 *    iterate loop printing the rows), both as child processes under /usr/bin/time (goal <= 1.2);
 *    and its CPU time (user + system) over the plain reader's (goal <= 1.3).
 *
 * Each figure is min / median / max of 3 runs. `BENCH_CHANGELOG_EVENTS` overrides N (building the
 * 1M mirror took 68 s and each read 9 to 21 s on a shared 2-CPU machine at load 11; about 2.5 minutes in all).
 * Run alone: `node bench/changelog.ts`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSimulator } from '@bizops-sync/simulator';
import { openMirror } from '../src/mirror/database.ts';
import { sqliteConnection } from '../src/mirror/sql/sqlite.ts';
import { MirrorStore } from '../src/mirror/mirror-store.ts';
import type { ApiRecord } from '../src/streams/define-stream.ts';
import { transactionsStream } from '../src/streams/definitions.ts';
import { machineLoad, repeat, runMeasured, spread, type MeasuredRun } from './runs.ts';

const BIN = fileURLToPath(new URL('../bin/bizops-sync.js', import.meta.url));
const PLAIN_READER = fileURLToPath(new URL('./plain-changes-reader.ts', import.meta.url));
const RUNS = 3;
const PAGE = 100;

/** Mean `data` bytes of a created change and mean `raw` bytes, after backfilling `n` simulator transactions. */
async function bytesPerCreated(n: number): Promise<{ dataOverRaw: number; rowOverRaw: number; dataBytes: number; rawBytes: number }> {
  const simulator = await startSimulator({ size: { transactions: n, deals: 0, onboardings: 0 }, rateLimit: false });
  const records = simulator.world.groundTruth('transactions') as ApiRecord[];
  await simulator.close();
  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-bytes-'));
  try {
    const db = openMirror(join(dir, 'mirror.db'));
    const connection = sqliteConnection(db);
    const store = new MirrorStore(connection);
    for (let offset = 0; offset < records.length; offset += PAGE) await store.applyRecords(transactionsStream, records.slice(offset, offset + PAGE), { scanNumber: 1 });
    const changes = db
      .prepare(
        "SELECT AVG(length(data)) AS data, AVG(length(data) + length(event_id) + length(type) + length(stream) + length(record_id) + length(occurred_at) + 8) AS row FROM changes WHERE type = 'transaction.created'",
      )
      .get() as { data: number; row: number };
    const raw = (db.prepare('SELECT AVG(length(raw)) AS raw FROM transactions').get() as { raw: number }).raw;
    await connection.close();
    return { dataOverRaw: changes.data / raw, rowOverRaw: changes.row / raw, dataBytes: changes.data, rawBytes: raw };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A transaction list item shaped like the simulator's (about 150 bytes of JSON). */
function syntheticTransaction(index: number): ApiRecord {
  return {
    id: `txn_${index.toString(36).padStart(12, '0')}`,
    type: index % 3 === 0 ? 'INCOME' : 'EXPENSE',
    status: index % 5 === 0 ? 'PENDING' : 'CONFIRMED',
    amount: (index % 2 === 0 ? -1 : 1) * ((index * 7919) % 250_000),
    description: `Office supplies order ${index}`,
    date: new Date(Date.UTC(2026, 0, 1) + index * 1000).toISOString(),
  };
}

/** A mirror file holding `n` created transaction changes, written through the store. */
export async function buildMirror(path: string, n: number): Promise<void> {
  const db = openMirror(path);
  const connection = sqliteConnection(db);
  const store = new MirrorStore(connection);
  for (let offset = 0; offset < n; offset += 1000) {
    const page: ApiRecord[] = [];
    for (let index = offset; index < Math.min(n, offset + 1000); index += 1) page.push(syntheticTransaction(index));
    await store.applyRecords(transactionsStream, page, { scanNumber: 1 });
  }
  db.pragma('wal_checkpoint(TRUNCATE)');
  await connection.close();
}

/**
 * One round of `bizops-sync changes --since 0 --db PATH` and of the plain reader on the same mirror,
 * as child processes, the two in turn (which goes first alternates with `round`, so that load from
 * other processes falls on both alike). Each keeps Node's compile cache in a directory of its own, as
 * each program has on a user's machine: without one the plain reader stripped its TypeScript again
 * in every round, CPU the command (whose bin turns the cache on) does not pay.
 */
export async function readBoth(path: string, round: number): Promise<{ cli: MeasuredRun; plain: MeasuredRun }> {
  const compileCache = process.env.NODE_COMPILE_CACHE ?? join(tmpdir(), 'node-compile-cache');
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, BIZOPS_LOG_LEVEL: 'warn', NODE_COMPILE_CACHE: compileCache };
  // BIN itself, as a user runs it (its #! line sets the Node flags).
  const cli = () => runMeasured(BIN, ['changes', '--since', '0', '--db', path], env);
  const plain = () => runMeasured(process.execPath, [PLAIN_READER, path], { ...env, NODE_COMPILE_CACHE: `${compileCache}-plain-changes-reader` });
  if (round % 2 === 0) {
    const first = await cli();
    return { cli: first, plain: await plain() };
  }
  const first = await plain();
  return { cli: await cli(), plain: first };
}

export async function run(): Promise<Record<string, number | string>> {
  const events = Number(process.env.BENCH_CHANGELOG_EVENTS ?? 1_000_000);
  const bytes = await repeat(RUNS, () => bytesPerCreated(10_000));
  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-changes-'));
  try {
    const path = join(dir, 'mirror.db');
    const buildStarted = performance.now();
    await buildMirror(path, events);
    const buildSeconds = (performance.now() - buildStarted) / 1000;
    const loadBefore = machineLoad();
    const reads = await repeat(RUNS, (round) => readBoth(path, round));
    return {
      'created change data bytes / raw record bytes': spread(bytes.map((b) => b.dataOverRaw)),
      'created change row bytes / raw record bytes': spread(bytes.map((b) => b.rowOverRaw)),
      'mean data bytes, mean raw bytes': `${bytes[0]!.dataBytes.toFixed(0)}, ${bytes[0]!.rawBytes.toFixed(0)}`,
      events,
      'mirror built in, s': buildSeconds.toFixed(1),
      'changes --since 0 CPU / plain reader (goal <= 1.3)': spread(reads.map((r) => r.cli.cpuMs / r.plain.cpuMs)),
      'changes --since 0 CPU, s (changes, plain)': `${spread(reads.map((r) => r.cli.cpuMs / 1000), 1)}; ${spread(reads.map((r) => r.plain.cpuMs / 1000), 1)}`,
      'changes --since 0 peak RSS / plain reader': spread(reads.map((r) => r.cli.peakRssMb / r.plain.peakRssMb)),
      'changes --since 0 peak RSS, MB': spread(reads.map((r) => r.cli.peakRssMb), 1),
      'plain reader peak RSS, MB': spread(reads.map((r) => r.plain.peakRssMb), 1),
      'changes --since 0 wall, s': spread(reads.map((r) => r.cli.wallMs / 1000), 1),
      'plain reader wall, s': spread(reads.map((r) => r.plain.wallMs / 1000), 1),
      'output MB (changes, plain)': `${(reads[0]!.cli.stdoutBytes / 1e6).toFixed(0)}, ${(reads[0]!.plain.stdoutBytes / 1e6).toFixed(0)}`,
      'machine during reads': `${loadBefore} before, ${machineLoad()} after`,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await run(), null, 2));
}
