/**
 * `bizops-sync backfill --stream NAME --created-after T --created-before T` as an operator runs it
 * (docs/sync.md "Range backfill"): bad usage is one line and exit 2; a range runs and says so.
 */
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

describe('backfill --created-after/--created-before', () => {
  it('bad usage exits 2 with one line naming the option; a range backfill runs only that range', async () => {
    sim = await simulator({ size: { transactions: 10, deals: 30, onboardings: 2 } });
    dir = tempDir();
    const env = cliEnv({ BIZOPS_BASE_URL: sim.url, BIZOPS_TOKEN: String(sim.tokens.admin), BIZOPS_DB: dir.file('mirror.db'), BIZOPS_CONFIG: '', BIZOPS_LOG_LEVEL: 'warn' });
    const usage: [string[], RegExp][] = [
      [['backfill', '--created-after', '2026-03-01'], /^bizops-sync: --created-after\/--created-before: a range backfill needs --stream NAME \(one stream\)/],
      [['backfill', '--stream', 'deals', '--created-after', 'March'], /^bizops-sync: --created-after: must be an ISO 8601 time/],
      [['backfill', '--stream', 'deals', '--created-after', '2026-04-01', '--created-before', '2026-03-01'], /must be earlier than --created-before/],
    ];
    for (const [args, message] of usage) {
      const result = await runCli(args, env);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toMatch(message);
    }
    const deals = (sim.world.groundTruth('deals') as { createdAt: string }[]).map((deal) => deal.createdAt).sort();
    const after = deals[9]!;
    const expected = deals.filter((createdAt) => createdAt > after).length;
    const ran = await runCli(['backfill', '--stream', 'deals', '--created-after', after], env);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toBe(`deals: succeeded (backfill, complete scan, created after ${after}), 1 page, ${expected} records, ${expected} changes\n`);
  });
});
