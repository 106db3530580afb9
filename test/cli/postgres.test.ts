/**
 * The command line end to end on a PostgreSQL mirror (docs/mirror.md "PostgreSQL"): with
 * BIZOPS_DB=postgres://..., `backfill`, `sync`, `status` and `changes` work on a schema of the test
 * database against the simulator, and no output carries the URL's password.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { openMirrorConnection } from '../../src/mirror/open.ts';
import { STREAM_NAMES } from '../../src/streams/definitions.ts';
import { createdEvent, expectMirrorEqualsGroundTruth, runCli, simulator } from '../helpers.ts';
import { freshPostgresUrl, removeTestMirrors } from '../sql-backends.ts';

let sim: RunningSimulator | undefined;

afterEach(async () => {
  await sim?.close();
  sim = undefined;
  await removeTestMirrors();
});

/** The test server's URL for a fresh schema, with a password the server (trust auth) never asks for: it must never be shown. */
async function urlWithPassword(password: string): Promise<string> {
  const url = new URL(await freshPostgresUrl());
  url.password = password;
  return url.toString();
}

function cliEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, BIZOPS_LOG_FORMAT: 'json', ...extra };
}

describe('the command line on a PostgreSQL mirror', { timeout: 120_000 }, () => {
  it('backfill, sync, status and changes --since 0 with BIZOPS_DB=postgres://...', async () => {
    sim = await simulator({ size: { transactions: 250, deals: 40, onboardings: 12 } });
    const password = 'pw-never-shown-4217';
    const url = await urlWithPassword(password);
    const env = cliEnv({ BIZOPS_BASE_URL: sim.url, BIZOPS_TOKEN: String(sim.tokens.admin), BIZOPS_DB: url });
    const outputs: string[] = [];
    const run = async (args: string[]) => {
      const result = await runCli(args, env);
      outputs.push(result.stdout, result.stderr);
      return result;
    };

    const backfill = await run(['backfill', '--no-progress']);
    expect(backfill.stderr.split('\n').filter((line) => line.includes('"level":50'))).toEqual([]);
    expect(backfill.code).toBe(0);
    for (const stream of STREAM_NAMES) expect(backfill.stdout).toMatch(new RegExp(`${stream}: succeeded \\(backfill`));

    // Upstream changes, picked up by an incremental sync.
    const deal = sim.world.groundTruth('deals')[0] as { id: string };
    sim.world.closeDeal(deal.id, { status: 'WON', reason: 'signed' });
    const gone = sim.world.groundTruth('transactions')[0] as { id: string };
    sim.world.deleteRecord('transactions', gone.id);
    const sync = await run(['sync', '--stream', 'deals']);
    expect(sync.code).toBe(0);
    expect(sync.stdout).toMatch(/deals: succeeded \(sync/);

    const connection = await openMirrorConnection(url, { readonly: true });
    try {
      // Every stream but transactions (its deleted record is seen by the next complete scan only).
      for (const stream of STREAM_NAMES.filter((name) => name !== 'transactions')) await expectMirrorEqualsGroundTruth({ connection }, sim, stream);
      expect(await connection.get("SELECT status FROM deals WHERE id = ?", [deal.id])).toEqual({ status: 'WON' });
      const won = await connection.all<{ record_id: string }>("SELECT record_id FROM changes WHERE type = 'deal.won'");
      expect(won).toEqual([{ record_id: deal.id }]);
    } finally {
      await connection.close();
    }

    const status = await run(['status', '--json']);
    expect(status.code).toBe(0);
    const json = JSON.parse(status.stdout) as { database: string; backend: string; quickCheck: string; changelogSeq: number; streams: { stream: string; records: number; cursor: string | null }[] };
    expect(json.backend).toBe('postgres');
    expect(json.quickCheck).toBe('ok');
    expect(json.database).toBe(url.replace(password, '***'));
    const records = Object.fromEntries(json.streams.map((stream) => [stream.stream, stream.records]));
    // The deleted transaction is seen by the next complete scan only: the sync ran deals alone.
    expect(records).toEqual(Object.fromEntries(STREAM_NAMES.map((stream) => [stream, stream === 'transactions' ? 250 : sim!.world.groundTruth(stream).length])));
    expect(json.streams.every((stream) => stream.cursor !== null)).toBe(true);
    const table = await run(['status']);
    expect(table.stdout).toContain(`mirror: ${url.replace(password, '***')} (changelog at seq ${json.changelogSeq})`);
    expect(table.stdout).not.toContain('WARNING');

    const changes = await run(['changes', '--since', '0']);
    expect(changes.code).toBe(0);
    const lines = changes.stdout.trim().split('\n').map((line) => JSON.parse(line) as { seq: number; type: string; record_id: string });
    expect(lines).toHaveLength(json.changelogSeq);
    expect(lines.map((line) => line.seq)).toEqual(Array.from({ length: json.changelogSeq }, (_, index) => index + 1));
    const count = (type: string) => lines.filter((line) => line.type === type).length;
    for (const stream of STREAM_NAMES) expect(count(createdEvent(stream, {})), stream).toBe(records[stream]);
    expect(lines.at(-1)).toMatchObject({ type: 'deal.won', record_id: deal.id });

    for (const output of outputs) expect(output).not.toContain(password);
  });

  it('status and changes on a schema with no mirror yet: one line naming the URL with its password masked, exit 1', async () => {
    const password = 'pw-never-shown-9911';
    const url = await urlWithPassword(password);
    const env = cliEnv({ BIZOPS_DB: url });
    for (const args of [['status'], ['changes', '--since', '0']]) {
      const result = await runCli(args, env);
      expect(result.code).toBe(1);
      expect(result.stderr.trim()).toBe(`bizops-sync: no mirror at ${url.replace(password, '***')} yet: run \`bizops-sync backfill\` first`);
    }
  });
});
