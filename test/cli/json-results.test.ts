/**
 * `backfill --json`, `sync --json` and `verify [--repair] --json` for cron jobs: one JSON object on
 * stdout, with one result per stream and per partition of a partitioned stream (verify: `perPartition`), and the exit code
 * the command ends with. Real processes against the simulator and a mirror file.
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { runCli, simulator, tempDir, type TempDir } from '../helpers.ts';
import { cliEnv } from '../daemon/helpers.ts';

let dir: TempDir | undefined;
let sim: RunningSimulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
  dir?.remove();
  dir = undefined;
});

interface RunJson {
  command: string;
  exitCode: number;
  results: { connection: string; stream: string; partition: string | null; status: string; pages: number; records: number; changes: number; error: string | null }[];
}

describe('--json results', () => {
  it('backfill and sync print one object per stream and per partition with the exit code; a failed stream carries its error; verify --repair --json reports each stream', async () => {
    sim = await simulator({ size: { transactions: 12, deals: 6, onboardings: 2, customers: 3 } });
    dir = tempDir();
    const env = cliEnv({ BIZOPS_BASE_URL: sim.url, BIZOPS_TOKEN: String(sim.tokens.admin), BIZOPS_DB: dir.file('mirror.db'), BIZOPS_CONFIG: '', BIZOPS_LOG_LEVEL: 'warn', ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}) });

    const backfill = await runCli(['backfill', '--json'], env);
    expect(backfill.code, backfill.stderr).toBe(0);
    const backfilled = JSON.parse(backfill.stdout) as RunJson;
    expect(backfilled.command).toBe('backfill');
    expect(backfilled.exitCode).toBe(0);
    const streamRows = backfilled.results.filter((result) => result.partition === null);
    expect(streamRows.map((result) => result.stream).sort()).toEqual(['customers', 'deals', 'onboardings', 'qa_corrective_actions', 'transactions']);
    expect(streamRows.every((result) => result.status === 'succeeded' && result.connection === 'default' && result.error === null)).toBe(true);
    expect(streamRows.find((result) => result.stream === 'transactions')).toMatchObject({ pages: 1, records: 12, changes: 12 });
    // The partitioned stream: one object per location its deals name, their counts adding up to the stream's.
    const locations = [...new Set((sim.world.groundTruth('deals') as { locationId: string }[]).map((deal) => deal.locationId))].sort();
    const partitions = backfilled.results.filter((result) => result.partition !== null);
    expect(partitions.map((result) => result.partition).sort()).toEqual(locations);
    expect(partitions.every((result) => result.stream === 'qa_corrective_actions' && result.status === 'succeeded')).toBe(true);
    expect(partitions.reduce((sum, result) => sum + result.records, 0)).toBe(streamRows.find((result) => result.stream === 'qa_corrective_actions')!.records);

    // A list the API refuses: the stream failed, its error in one line with the HTTP status; exit 1 in the object too.
    sim.faults.inject({ kind: 'status', status: 400, match: { path: '/transactions' }, times: 100 });
    const sync = await runCli(['sync', '--stream', 'transactions', '--json'], env);
    expect(sync.code, sync.stderr).toBe(1);
    const synced = JSON.parse(sync.stdout) as RunJson;
    expect(synced).toMatchObject({ command: 'sync', exitCode: 1 });
    expect(synced.results).toEqual([expect.objectContaining({ stream: 'transactions', partition: null, status: 'failed', pages: 0, error: expect.stringMatching(/HTTP 400 .*GET \/transactions\?/) })]);
    sim.faults.clear();

    // verify --repair --json: one object per stream, what it found and what it repaired.
    const [gone] = sim.world.groundTruth('deals') as { id: string }[];
    const db = new Database(dir.file('mirror.db'));
    db.prepare('DELETE FROM deals WHERE id = ?').run(gone!.id);
    db.close();
    const repair = await runCli(['verify', '--stream', 'deals', '--repair', '--json'], env);
    expect(repair.code, repair.stderr).toBe(1);
    const repaired = JSON.parse(repair.stdout) as { equal: boolean; repaired: boolean; streams: { stream: string; status: string; missing: { count: number }; repaired: { changes: number } }[] };
    expect(repaired).toMatchObject({ equal: false, repaired: true, streams: [{ stream: 'deals', status: 'drift', missing: { count: 1 }, repaired: { changes: 1 } }] });

    // verify --json on a partitioned stream: one object per partition read, a row gone from the mirror
    // counted in its own partition's object.
    const actions = new Database(dir.file('mirror.db'));
    const lost = actions.prepare("SELECT id, json_extract(raw, '$.locationId') AS location FROM qa_corrective_actions WHERE deleted_at IS NULL LIMIT 1").get() as { id: string; location: string };
    actions.prepare('DELETE FROM qa_corrective_actions WHERE id = ?').run(lost.id);
    actions.close();
    const check = await runCli(['verify', '--stream', 'qa_corrective_actions', '--json'], env);
    expect(check.code, check.stderr).toBe(1);
    const [verified] = (JSON.parse(check.stdout) as { streams: { status: string; listed: number; missing: { count: number }; perPartition: { partition: string; complete: boolean; listed: number; missing: number; stale: number }[] }[] }).streams;
    expect(verified).toMatchObject({ status: 'drift', missing: { count: 1 } });
    expect(verified!.perPartition.map((scan) => scan.partition).sort()).toEqual(locations);
    expect(verified!.perPartition.every((scan) => scan.complete && scan.stale === 0)).toBe(true);
    expect(verified!.perPartition.reduce((sum, scan) => sum + scan.listed, 0)).toBe(verified!.listed);
    expect(verified!.perPartition.filter((scan) => scan.missing > 0)).toEqual([expect.objectContaining({ partition: lost.location, missing: 1 })]);
  });
});
