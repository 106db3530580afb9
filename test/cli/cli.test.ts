import { readFileSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { openMirror } from '../../src/mirror/database.ts';
import { sqliteConnection } from '../../src/mirror/sql/sqlite.ts';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { STREAM_LIST, STREAM_NAMES } from '../../src/streams/definitions.ts';
import { BIN, createdEvent, expectMirrorEqualsGroundTruth, groundTruthTotal, listRequests, runCli, simulator, tempDir, type TempDir, waitFor } from '../helpers.ts';


let sim: RunningSimulator | undefined;
let dir: TempDir | undefined;

afterEach(async () => {
  await sim?.close();
  dir?.remove();
  sim = dir = undefined;
});

function cliEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, BIZOPS_LOG_FORMAT: 'json', ...extra };
  return env;
}

describe('command line', { timeout: 120_000 }, () => {
  it('--help explains every command', () => {
    const result = spawnSync(process.execPath, [BIN, '--help'], { env: cliEnv(), encoding: 'utf8' });
    expect(result.status).toBe(0);
    for (const command of ['backfill', 'sync', 'status', 'changes', 'simulate', 'demo']) expect(result.stdout).toContain(command);
    expect(result.stdout).toContain('BIZOPS_BASE_URL');
    const backfill = spawnSync(process.execPath, [BIN, 'backfill', '--help'], { env: cliEnv(), encoding: 'utf8' });
    expect(backfill.stdout).toContain('--stream');
  });

  it('--version prints the version of package.json and exits 0', () => {
    const result = spawnSync(process.execPath, [BIN, '--version'], { env: cliEnv(), encoding: 'utf8' });
    expect(result.status).toBe(0);
    expect(result.stdout.trim()).toBe(JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version);
  });

  it('a reader closing the pipe early (| head) ends the command quietly', () => {
    const result = spawnSync('bash', ['-c', `"${process.execPath}" "${BIN}" --help | head -1`], { env: cliEnv(), encoding: 'utf8' });
    expect(result.stdout.trim()).toBe('Usage: bizops-sync [options] [command]');
    expect(result.stderr).toBe('');
  });

  it('a missing or bad setting is one line naming it, not a stack trace', () => {
    const missing = spawnSync(process.execPath, [BIN, 'sync'], { env: cliEnv({ BIZOPS_TOKEN: 'x' }), encoding: 'utf8' });
    expect(missing.status).toBe(2);
    expect(missing.stderr.trim()).toBe('bizops-sync: configuration error: BIZOPS_BASE_URL (baseUrl): is required');
    const bad = spawnSync(process.execPath, [BIN, 'sync'], {
      env: cliEnv({ BIZOPS_BASE_URL: 'http://127.0.0.1:1', BIZOPS_TOKEN: 'x', BIZOPS_RATE_LIMIT_PER_MIN: 'fast' }),
      encoding: 'utf8',
    });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/^bizops-sync: configuration error: BIZOPS_RATE_LIMIT_PER_MIN/);
    expect(bad.stderr).not.toMatch(/\n\s+at /);
    const stream = spawnSync(process.execPath, [BIN, 'sync', '--stream', 'invoices'], {
      env: cliEnv({ BIZOPS_BASE_URL: 'http://127.0.0.1:1', BIZOPS_TOKEN: 'x' }),
      encoding: 'utf8',
    });
    expect(stream.status).toBe(2);
    expect(stream.stderr).toContain('--stream: unknown stream "invoices"');
  });

  it('SIGKILL in the middle of a backfill, then run again: the mirror equals the ground truth, no change twice, at most one page fetched twice', async () => {
    sim = await simulator({ size: { transactions: 4_000 } });
    // The first run's page at offset 1200 is held at the simulator until the run is killed: the kill
    // lands in the middle of the backfill however slowly the machine runs.
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    sim.faults.inject({ kind: 'hold', until: gate, match: { method: 'GET', path: '/transactions', query: { offset: '1200' } } });
    dir = tempDir();
    const env = cliEnv({
      BIZOPS_BASE_URL: sim.url,
      BIZOPS_TOKEN: String(sim.tokens.admin),
      BIZOPS_DB: dir.file('mirror.db'),
      BIZOPS_RATE_LIMIT_PER_MIN: '100000',
      // The killed run's stream lease lapses after 1 s (docs/sync.md "Resumable"): until then the stream is busy.
      BIZOPS_LEASE_SECONDS: '1',
    });
    const child = spawn(process.execPath, [BIN, 'backfill', '--stream', 'transactions', '--no-progress'], { env, stdio: 'ignore' });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    // Killed once the pages before the held one are committed (read from the file beside the run).
    await waitFor(() => listRequests(sim!, '/transactions').some((request) => new URLSearchParams(request.query).get('offset') === '1200'), 'the page at offset 1200 to be asked for', 60_000);
    await waitFor(() => {
      const reader = openMirror(dir!.file('mirror.db'), { readonly: true });
      try {
        return (reader.prepare('SELECT COUNT(*) AS n FROM transactions').get() as { n: number }).n === 1200;
      } finally {
        reader.close();
      }
    }, 'the 12 pages before it to be committed', 60_000);
    child.kill('SIGKILL');
    await exited;
    open();
    // The kill landed mid-backfill: the second run says it resumed (a finished first run would not leave a checkpoint).
    const second = await waitFor(async () => {
      const attempt = await runCli(['backfill', '--stream', 'transactions', '--no-progress'], env);
      return attempt.stdout.includes('transactions: busy') ? undefined : attempt;
    }, 'the killed run\'s lease to lapse', 60_000);
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(/transactions: succeeded \(backfill, complete scan, resumed\)/);
    const db = openMirror(dir.file('mirror.db'));
    try {
      await expectMirrorEqualsGroundTruth({ connection: sqliteConnection(db) }, sim, 'transactions');
      expect(db.prepare('SELECT COUNT(*) AS total, COUNT(DISTINCT record_id) AS records FROM changes').get()).toEqual({ total: 4_000, records: 4_000 });
    } finally {
      db.close();
    }
    const offsets = new Map<string, number>();
    for (const request of listRequests(sim, '/transactions')) {
      const offset = new URLSearchParams(request.query).get('offset') ?? '0';
      offsets.set(offset, (offsets.get(offset) ?? 0) + 1);
    }
    const twice = [...offsets.values()].filter((n) => n > 1);
    expect(twice.length).toBeLessThanOrEqual(1);
    expect(Math.max(...offsets.values())).toBeLessThanOrEqual(2);
    expect(offsets.size).toBe(40);
  });

  it('status --json and changes report what the backfill did', async () => {
    sim = await simulator({ size: { transactions: 150, deals: 30, onboardings: 5 } });
    dir = tempDir();
    const env = cliEnv({ BIZOPS_BASE_URL: sim.url, BIZOPS_TOKEN: String(sim.tokens.admin), BIZOPS_DB: dir.file('mirror.db') });
    const backfill = await runCli(['backfill', '--no-progress'], env);
    expect(backfill.code).toBe(0);
    expect(backfill.stdout).toContain('transactions: succeeded');
    const status = await runCli(['status', '--json'], env);
    expect(status.code).toBe(0);
    const parsed = JSON.parse(status.stdout) as { streams: { stream: string; records: number; cursor: string | null; lastError: string | null }[] };
    // Every registered stream, in registry order, with the records the simulator lists.
    expect(parsed.streams.map((s) => [s.stream, s.records])).toEqual(STREAM_NAMES.map((stream) => [stream, sim!.world.groundTruth(stream).length]));
    expect(parsed.streams.find((s) => s.stream === 'transactions')!.records).toBe(150);
    expect(parsed.streams.every((s) => s.cursor !== null && s.lastError === null)).toBe(true);
    expect((JSON.parse(status.stdout) as { writes: unknown }).writes).toEqual({});
    const table = await runCli(['status'], env);
    expect(table.stdout).toMatch(/transactions\s+150/);
    expect(table.stdout).toContain('writes: none');
    // The backfill ran the streams in registry order, one created change per record: the last 15 rows are the last 15 records'.
    const total = groundTruthTotal(sim);
    const changes = await runCli(['changes', '--since', String(total - 15)], env);
    const lines = changes.stdout.trim().split('\n').map((line) => JSON.parse(line) as { seq: number; type: string; stream: string; data: { record: Record<string, unknown> } });
    expect(lines).toHaveLength(15);
    expect(lines[0]!.seq).toBe(total - 14);
    const streamOfEachRecord = STREAM_NAMES.flatMap((stream) => sim!.world.groundTruth(stream).map(() => stream));
    expect(lines.map((l) => l.stream)).toEqual(streamOfEachRecord.slice(-15));
    expect(lines.every((l) => l.type === createdEvent(l.stream as (typeof STREAM_NAMES)[number], l.data.record))).toBe(true);
    // A well-formed pattern no event type has (the real one is `deal.*`): one line naming it and the known types, exit 2.
    const typo = await runCli(['changes', '--since', '0', '--type', 'deal.created', '--type', 'deals.*'], env);
    expect(typo.code).toBe(2);
    expect(typo.stdout).toBe('');
    expect(typo.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^bizops-sync: --type\[1\]: "deals\.\*" matches no event type \(did you mean "deal\.\*"\?\); the known types are transaction\.created, .*deal\.won/)]);
  });

  it('the demo shows mirrored counts and live change events', async () => {
    dir = tempDir();
    const demo = await runCli(['demo', '--duration', '6', '--poll', '1', '--db', dir.file('demo.db')], cliEnv());
    expect(demo.code).toBe(0);
    // Each registered stream's count, in registry order (the demo's simulator: 2000 transactions, 300 deals, 40 onboardings, the others their default size).
    expect(demo.stdout).toMatch(new RegExp(`mirrored: ${STREAM_NAMES.map((stream) => `\\d+ ${stream}`).join(', ')} \\(changelog at seq \\d+\\)`));
    expect(demo.stdout).toMatch(/mirrored: 2000 transactions, 300 deals, 40 onboardings/);
    const eventTypes = STREAM_LIST.flatMap((stream) => stream.changes.events).map((type) => type.replace('.', '\\.'));
    const events = demo.stdout.split('\n').filter((line) => new RegExp(`^\\d\\d:\\d\\d:\\d\\d\\s+#\\d+\\s+(${eventTypes.join('|')})\\s`).test(line));
    expect(events.length).toBeGreaterThan(0);
  }, 60_000);
});
