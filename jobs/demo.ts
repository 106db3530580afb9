/**
 * Job: the demo. Starts the simulator with churn, backfills it into a fresh mirror (a SQLite file,
 * or a PostgreSQL schema when `--db` is a postgres:// URL), then polls every few seconds and prints
 * each change as it is recorded, until stopped.
 */
import { rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { configSchema } from '../src/config/index.ts';
import type { Logger } from '../src/logging/index.ts';
import { dropPostgresMirror, isPostgresUrl, type SqlExecutor, type AppendedChange } from '../src/mirror/index.ts';
import { readChanges } from '../src/notify/index.ts';
import { startSimulator } from '@bizops-sync/simulator';
import { STREAM_NAMES, STREAMS } from '../src/streams/index.ts';
import type { RunProgress } from '../src/sync/index.ts';
import { mirrorLocation, openContext } from './context.ts';
import { runStreams } from './run-streams.ts';

export interface DemoOptions {
  /** The mirror: a file (deleted first), or a PostgreSQL URL (its schema dropped first), so that every demo starts fresh. */
  dbPath: string;
  /** Seconds between polls. */
  pollSeconds: number;
  /** How long to poll after the backfill, seconds (0: until the signal). */
  durationSeconds: number;
  signal: AbortSignal;
  logger: Logger;
  /** Where the demo prints (stdout). */
  print: (line: string) => void;
  onProgress?: (progress: RunProgress) => void;
  /** Called when the backfill is done, before live changes print (e.g. to take progress bars down). */
  onBackfillDone?: () => void;
}

/** Runs the demo until `signal` aborts or the duration passes. */
export async function runDemo(options: DemoOptions): Promise<void> {
  await removeMirror(options.dbPath);
  const location = mirrorLocation(options.dbPath);
  const simulator = await startSimulator({
    size: { transactions: 2000, deals: 300, onboardings: 40 },
    rateLimit: { limit: 600, windowMs: 60_000 },
    churn: { intervalMs: 1500, perTick: 3 },
  });
  let live = false;
  let printed = 0;
  const config = configSchema.parse({
    baseUrl: simulator.url,
    tokens: { default: String(simulator.tokens.admin) },
    dbPath: options.dbPath,
    rateLimit: { perMinute: 600 },
    sync: { overlapSeconds: 5 },
  });
  const context = await openContext(config, { logger: options.logger, rateBudget: 'local' }).catch(async (error: unknown) => {
    await simulator.close();
    throw error;
  });
  // Each batch is described once the previous one printed: lines keep the changelog's order.
  let printing = Promise.resolve();
  context.onChanges((changes) => {
    if (!live) return;
    printing = printing
      .then(async () => {
        for (const change of changes) options.print(await describeChange(change, context.connection));
      })
      .catch((error: unknown) => options.logger.warn({ err: error }, 'demo: could not describe a change'));
    printed += changes.length;
  });
  let stop = options.signal;
  try {
    options.print(`simulator: ${simulator.url} (churn: 3 changes every 1.5 s)  mirror: ${location}`);
    options.print('backfilling...');
    await runStreams(context, STREAM_NAMES, 'backfill', { signal: stop, onProgress: options.onProgress });
    options.onBackfillDone?.();
    // `durationSeconds` bounds the live part, counted from the end of the backfill (however long that took).
    if (options.durationSeconds > 0) stop = AbortSignal.any([options.signal, AbortSignal.timeout(Math.min(2 ** 31 - 1, options.durationSeconds * 1000))]);
    const counts = (await Promise.all(STREAM_NAMES.map(async (name) => `${(await context.store.countRecords(STREAMS[name])).live} ${name}`))).join(', ');
    options.print(`mirrored: ${counts} (changelog at seq ${await context.store.lastSeq()})`);
    options.print(`polling every ${options.pollSeconds} s; each change prints below. Ctrl-C to stop.`);
    live = true;
    while (!stop.aborted) {
      await sleep(options.pollSeconds * 1000, undefined, { signal: stop }).catch(() => undefined);
      if (stop.aborted) break;
      await runStreams(context, STREAM_NAMES, 'sync', { signal: stop });
    }
    await printing;
    options.print(`stopped: ${printed} changes printed; the mirror stays at ${location} (try: npx bizops-sync status --db ${isPostgresUrl(options.dbPath) ? "'<the URL>'" : options.dbPath})`);
  } finally {
    await context.close();
    await simulator.close();
  }
}

/** `09:41:07  deal.won               deal_000042  status OPEN -> WON, closedAt null -> 2026-...`. */
async function describeChange(change: AppendedChange, executor: SqlExecutor): Promise<string> {
  const [event] = await readChanges(executor, { sinceSeq: change.seq - 1, limit: 1 });
  const fields = Object.entries(event?.data.changes ?? {});
  const isNew = fields.length > 0 && fields.every(([, value]) => value.old === null);
  const summary = isNew
    ? 'new'
    : fields
        .slice(0, 3)
        .map(([field, value]) => `${field} ${JSON.stringify(value.old)} -> ${JSON.stringify(value.new)}`)
        .join(', ');
  const clock = new Date().toISOString().slice(11, 19);
  return `${clock}  #${String(change.seq).padEnd(6)} ${change.type.padEnd(24)} ${change.recordId.padEnd(18)} ${summary}`;
}

/** Removes the demo's previous mirror: the SQLite file and its WAL, or the PostgreSQL schema with its tables. */
async function removeMirror(dbPath: string): Promise<void> {
  if (!isPostgresUrl(dbPath)) {
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${dbPath}${suffix}`, { force: true });
    return;
  }
  await dropPostgresMirror(dbPath);
}
