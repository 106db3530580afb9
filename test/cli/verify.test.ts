/**
 * `bizops-sync verify` as an operator runs it (docs/sync.md "Verify"): real processes against a
 * real simulator and a mirror file. Exit 0 when the mirror equals the API, 1 on drift (the --json
 * report naming what differs), 2 for bad usage; --repair fixes the mirror and a second run exits 0.
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

describe('bizops-sync verify', () => {
  it('exit 0 on an equal mirror, 1 with a --json report on drift, 0 again after --repair; 2 for an unknown stream', async () => {
    sim = await simulator({ size: { transactions: 30, deals: 12, onboardings: 3 } });
    dir = tempDir();
    const env = cliEnv({ BIZOPS_BASE_URL: sim.url, BIZOPS_TOKEN: String(sim.tokens.admin), BIZOPS_DB: dir.file('mirror.db'), BIZOPS_CONFIG: '', BIZOPS_LOG_LEVEL: 'warn' });
    expect((await runCli(['backfill', '--stream', 'deals'], env)).code).toBe(0);

    const equal = await runCli(['verify', '--stream', 'deals'], env);
    expect(equal.code, equal.stderr).toBe(0);
    expect(equal.stdout).toMatch(/^deals: equal \(12 listed of 12, 1 page\)\n$/);

    const [first, second] = (sim.world.groundTruth('deals') as { id: string; title: string }[]).slice(0, 2);
    const db = new Database(dir.file('mirror.db'));
    db.prepare('DELETE FROM deals WHERE id = ?').run(first!.id);
    db.prepare('UPDATE deals SET title = ? WHERE id = ?').run('edited downstream', second!.id);
    db.close();

    const drift = await runCli(['verify', '--stream', 'deals', '--json'], env);
    expect(drift.code, drift.stderr).toBe(1);
    const report = JSON.parse(drift.stdout) as { equal: boolean; repaired: boolean; streams: Record<string, unknown>[] };
    expect(report).toEqual({
      equal: false,
      repaired: false,
      streams: [
        {
          stream: 'deals',
          status: 'drift',
          total: 12,
          listed: 12,
          pages: 1,
          missing: { count: 1, ids: [first!.id] },
          extra: { count: 0, ids: [] },
          unconfirmed: { count: 0, ids: [] },
          outside: null,
          stale: { count: 1, fields: { title: 1 }, records: [{ id: second!.id, fields: ['title'] }] },
          invalid: 0,
        },
      ],
    });
    const line = await runCli(['verify', '--stream', 'deals'], env);
    expect(line.code).toBe(1);
    expect(line.stdout).toBe(`deals: DRIFT: 1 missing (${first!.id}); 0 extra; 1 stale: title 1 (${second!.id}: title); 12 listed of 12, 1 page\n`);

    const repair = await runCli(['verify', '--stream', 'deals', '--repair'], env);
    expect(repair.code, repair.stderr).toBe(1);
    // The deleted record comes back with its created change; the typed column edited alone (its raw
    // as the API says) is rewritten without one, as change detection rewrites a row whose fields agree.
    expect(repair.stdout).toMatch(/; repaired: 1 change recorded \(0 tombstones\)\n$/);
    expect((await runCli(['verify', '--stream', 'deals'], env)).code).toBe(0);

    const unknown = await runCli(['verify', '--stream', 'nope'], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/--stream: unknown stream "nope"/);
  });
});
