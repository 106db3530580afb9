/**
 * Benchmark: what the changelog's retention saves after N days of churn (default 90; docs/mirror.md
 * "Retention").
 *
 * One simulator (5,000 transactions, 1,000 deals, 300 onboardings) churns `CHURN_PER_DAY` changes a
 * simulated day; two mirrors sync every stream after each day through the real engine: one keeps
 * every change (retainDays 0), the other prunes what is older than 30 days (the default
 * `changes.retainDays`) after each day, as the daemon's retention does (`pruneChangelog`, batches of
 * 1,000 rows). A day's change rows get that day's time (`occurred_at` set back by the bench: the
 * engine records the local clock), so the cut-off falls where it would after N real days.
 *
 * Printed: change rows, changelog bytes (the text of every column, as `pruneChangelog` counts it) and
 * the mirror file's size (after a WAL checkpoint, free pages included: SQLite reuses what was pruned,
 * it does not give it back), retention on over off; and the rows kept over the rows of the last 30
 * days (goal 1: nothing newer than the cut-off is pruned, nothing older kept).
 *
 * Run alone: `node bench/retention.ts` (prints JSON); in the suite: `npm run bench -- retention`.
 * `BENCH_RETENTION_DAYS` sets N.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSimulator, type RunningSimulator } from '@bizops-sync/simulator';
import { openContext, type Context } from '../jobs/context.ts';
import { configSchema } from '../src/config/schema.ts';
import { silentLogger } from '../src/logging/logger.ts';
import { lastChangeSeq } from '../src/mirror/changelog-format.ts';
import { pruneChangelog, retentionCutoff } from '../src/notify/retention.ts';
import { STREAM_NAMES } from '../src/streams/definitions.ts';

const DAYS = Number(process.env.BENCH_RETENTION_DAYS ?? 90);
const RETAIN_DAYS = 30;
const CHURN_PER_DAY = 150;
const DAY_MS = 86_400_000;

interface Mirror {
  context: Context;
  file: string;
}

async function openMirrorOn(simulator: RunningSimulator, dir: string, name: string): Promise<Mirror> {
  const file = join(dir, `${name}.db`);
  const config = configSchema.parse({ baseUrl: simulator.url, tokens: { default: String(simulator.tokens.admin) }, dbPath: file, rateLimit: { perMinute: 1_000_000, windowMs: 60_000 } });
  return { context: await openContext(config, { logger: silentLogger, rateBudget: 'local' }), file };
}

/** Syncs every stream, then stamps the rows it appended with the simulated day's time. */
async function syncDay(mirror: Mirror, reason: 'backfill' | 'sync', day: Date): Promise<void> {
  const before = await lastChangeSeq(mirror.context.connection);
  for (const stream of STREAM_NAMES) {
    const result = await mirror.context.engine.run(stream, reason);
    if (result.status !== 'succeeded') throw new Error(`${stream} ${reason} ended ${result.status}: ${result.error?.message ?? ''}`);
  }
  await mirror.context.connection.run('UPDATE changes SET occurred_at = ? WHERE seq > ?', [day.toISOString(), before]);
}

interface Size {
  rows: number;
  bytes: number;
  fileBytes: number;
}

async function sizeOf(mirror: Mirror): Promise<Size> {
  const sql = mirror.context.connection;
  const row = await sql.get<{ n: number; bytes: number | null }>(
    'SELECT COUNT(*) AS n, SUM(LENGTH(data) + LENGTH(event_id) + LENGTH(type) + LENGTH(stream) + LENGTH(record_id) + LENGTH(occurred_at)) AS bytes FROM changes',
  );
  await sql.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  return { rows: Number(row?.n ?? 0), bytes: Number(row?.bytes ?? 0), fileBytes: statSync(mirror.file).size };
}

const round = (value: number, digits = 3) => Number(value.toFixed(digits));
const mb = (bytes: number) => round(bytes / 1_048_576, 1);

export async function run(): Promise<Record<string, number | string>> {
  // The simulator's clock (its records' times, its Date header) runs DAYS days behind and jumps a day
  // at each simulated day, then two seconds after the day's churn: each day's runs start in a later
  // second than the churn they must see (a run lists only records created before its first page's
  // Date, to the second, and leaves later ones to the next run).
  let offsetMs = -DAYS * DAY_MS;
  const simulator = await startSimulator({ size: { transactions: 5000, deals: 1000, onboardings: 300 }, rateLimit: false, seed: 7, clock: () => Date.now() + offsetMs });
  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-retention-'));
  const keepAll = await openMirrorOn(simulator, dir, 'keep-all');
  const retained = await openMirrorOn(simulator, dir, 'retained');
  try {
    // Day 0 is DAYS days ago; the last day is today.
    const start = Date.now() - DAYS * DAY_MS;
    let prunedRows = 0;
    for (let day = 0; day <= DAYS; day += 1) {
      const at = new Date(start + day * DAY_MS);
      offsetMs = (day - DAYS) * DAY_MS;
      if (day > 0) simulator.world.churnTick(CHURN_PER_DAY);
      offsetMs += 2000;
      for (const mirror of [keepAll, retained]) await syncDay(mirror, day === 0 ? 'backfill' : 'sync', at);
      prunedRows += (await pruneChangelog(retained.context.connection, { before: retentionCutoff(RETAIN_DAYS, at)!, endpoints: [] })).rows;
    }
    const cutoff = retentionCutoff(RETAIN_DAYS, new Date(start + DAYS * DAY_MS))!.toISOString();
    const recent = Number((await keepAll.context.connection.get<{ n: number }>('SELECT COUNT(*) AS n FROM changes WHERE occurred_at >= ?', [cutoff]))?.n ?? 0);
    const off = await sizeOf(keepAll);
    const on = await sizeOf(retained);
    return {
      'days of churn, changes a day, retainDays': `${DAYS}, ${CHURN_PER_DAY}, ${RETAIN_DAYS}`,
      'change rows (retention off / on)': `${off.rows} / ${on.rows}`,
      'change rows pruned': prunedRows,
      'change rows, on over off': round(on.rows / off.rows),
      'changelog MB (off / on)': `${mb(off.bytes)} / ${mb(on.bytes)}`,
      'changelog bytes, on over off': round(on.bytes / off.bytes),
      'mirror file MB (off / on)': `${mb(off.fileBytes)} / ${mb(on.fileBytes)}`,
      'mirror file, on over off': round(on.fileBytes / off.fileBytes),
      'rows kept over rows of the last retainDays (goal 1)': round(on.rows / recent),
    };
  } finally {
    await keepAll.context.close();
    await retained.context.close();
    await simulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await run(), null, 2));
}
