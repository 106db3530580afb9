/**
 * Two connections run by one real `bizops-sync daemon` process: each syncs its own
 * company into its own mirror file with its own cursors; `status` shows each, `/metrics` labels every
 * per-connection series with the connection, `/readyz` lists each; a write posted to
 * `/connections/{name}/writes` reaches that company only; SIGTERM stops them all. And the CLI's
 * `--connection` errors.
 */
import { writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '@bizops-sync/simulator';
import { STREAM_NAMES, STREAMS } from '../../src/streams/definitions.ts';
import { cliEnv, parsePrometheusText, sampleValue, spawnDaemon, terminate, type DaemonProcess } from '../daemon/helpers.ts';
import { runCli, tempDir, waitFor, type TempDir } from '../helpers.ts';
import { requireRedis } from '../writes/support.ts';
import { readStatus } from '../../jobs/status.ts';

const SIZES = { transactions: 120, deals: 20, onboardings: 6, customers: 5 };
const WRITE_KEY = 'companies-write-key-0123456789';
const READ_KEY = 'companies-read-key-0123456789';

let sim: RunningSimulator | undefined;
let dir: TempDir | undefined;
let daemon: DaemonProcess | undefined;
afterEach(async () => {
  if (daemon) await terminate(daemon);
  await sim?.close();
  dir?.remove();
  daemon = sim = dir = undefined;
});

/** A configuration file of two connections, acme (company C1) and globex (company C2), and an environment naming it. */
function twoConnections(simulator: RunningSimulator, directory: TempDir, extra: Record<string, unknown> = {}): NodeJS.ProcessEnv {
  const [one, two] = [simulator.company(1), simulator.company(2)];
  writeFileSync(
    directory.file('config.json'),
    JSON.stringify({
      baseUrl: simulator.url,
      rateLimit: { perMinute: 50, windowMs: 1000 },
      sync: { schedule: '*/1 * * * * *' },
      http: { port: 0, readinessCacheSeconds: 1, writeApiKey: WRITE_KEY, readApiKey: READ_KEY },
      connections: {
        acme: { tokens: { default: one.token }, companyId: one.id, dbPath: directory.file('acme.db') },
        globex: { tokens: { default: two.token }, companyId: two.id, dbPath: directory.file('globex.db'), sync: { streams: ['transactions', 'deals'] } },
      },
      ...extra,
    }),
  );
  return cliEnv({ BIZOPS_CONFIG: directory.file('config.json') });
}

/** The ids of a stream's live rows in the mirror file at `path`. */
function mirroredIds(path: string, stream: (typeof STREAM_NAMES)[number]): string[] {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare(`SELECT id FROM ${STREAMS[stream].table} WHERE deleted_at IS NULL ORDER BY id`).all() as { id: string }[]).map((row) => row.id);
  } finally {
    db.close();
  }
}

function truthIds(simulator: RunningSimulator, k: number, stream: (typeof STREAM_NAMES)[number]): string[] {
  return simulator.company(k).world.groundTruth(stream).map((record) => String((record as { id: string }).id)).sort();
}

describe('one daemon, two connections', { timeout: 120_000 }, () => {
  it('syncs each company into its own file with its own cursors; status, metrics and readiness per connection; writes routed by connection; SIGTERM stops both', async () => {
    await requireRedis();
    sim = await startSimulator({ companies: 2, extraCompanySizes: SIZES, rateLimit: { limit: 50, windowMs: 1000 } });
    dir = tempDir('bizops-companies-');
    const env = twoConnections(sim, dir);
    daemon = spawnDaemon(env);
    const url = await daemon.url;

    // Both connections' streams get a cursor (the backfill at start, then syncs): waited on in this
    // process (`readStatus`, what the command prints), then shown once by the CLI.
    const cursored = async (name: string, streams: readonly string[]) =>
      (await readStatus(dir!.file(`${name}.db`))).streams.filter((s) => streams.includes(s.stream)).every((s) => s.cursor !== null);
    await waitFor(
      async () => (await cursored('acme', STREAM_NAMES)) && (await cursored('globex', ['transactions', 'deals'])),
      'both connections to have a cursor on each configured stream',
      60_000,
      200,
    );
    const [json, one, both] = await Promise.all([runCli(['status', '--json'], env), runCli(['status', '--connection', 'globex'], env), runCli(['status'], env)]);
    expect(json.code).toBe(0);
    const status = JSON.parse(json.stdout) as Record<string, { streams: { stream: string; cursor: string | null }[] }>;
    for (const [name, streams] of [['acme', STREAM_NAMES], ['globex', ['transactions', 'deals']]] as const) {
      expect(status[name]!.streams.filter((s) => streams.includes(s.stream as never)).every((s) => s.cursor !== null), name).toBe(true);
    }
    expect(Object.keys(status)).toEqual(['acme', 'globex']);
    // globex does not run onboardings: its own configuration, its own cursor.
    expect(status.globex!.streams.find((s) => s.stream === 'onboardings')!.cursor).toBeNull();
    for (const stream of STREAM_NAMES) expect(mirroredIds(dir.file('acme.db'), stream), `acme ${stream}`).toEqual(truthIds(sim, 1, stream));
    for (const stream of ['transactions', 'deals'] as const) expect(mirroredIds(dir.file('globex.db'), stream), `globex ${stream}`).toEqual(truthIds(sim, 2, stream));
    expect(mirroredIds(dir.file('globex.db'), 'onboardings')).toEqual([]);

    // status of one connection, as a table.
    expect(one.code).toBe(0);
    expect(one.stdout).toContain(`mirror: ${dir.file('globex.db')}`);
    expect(both.stdout).toContain('== connection acme ==');
    expect(both.stdout).toContain('== connection globex ==');

    // Metrics: every per-connection series has its connection.
    const metrics = parsePrometheusText(await (await fetch(`${url}/metrics`)).text()).samples;
    expect(sampleValue(metrics, 'bizops_stream_records', { connection: 'acme', stream: 'deals', state: 'live' })).toBe(truthIds(sim, 1, 'deals').length);
    expect(sampleValue(metrics, 'bizops_stream_records', { connection: 'globex', stream: 'transactions', state: 'live' })).toBe(truthIds(sim, 2, 'transactions').length);
    expect(sampleValue(metrics, 'bizops_stream_records', { connection: 'globex', stream: 'onboardings' })).toBeUndefined();
    expect(sampleValue(metrics, 'bizops_api_requests_total', { connection: 'acme' })).toBeGreaterThan(0);
    expect(sampleValue(metrics, 'bizops_api_rate_limited_total', { connection: 'globex' })).toBe(0);
    const unlabelled = metrics.filter((sample) => sample.name.startsWith('bizops_') && sample.labels.connection === undefined);
    expect(unlabelled.map((sample) => sample.name)).toEqual([]);

    // Readiness lists each connection.
    const ready = (await (await fetch(`${url}/readyz`)).json()) as { ready: boolean; connections: Record<string, { ready: boolean }> };
    expect(ready.ready).toBe(true);
    expect(Object.keys(ready.connections)).toEqual(['acme', 'globex']);

    // A write to globex reaches company C2 only, and lives in globex's mirror.
    const post = (path: string) =>
      fetch(`${url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${WRITE_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'transaction.create', payload: { type: 'INCOME', amount: 4321, description: 'globex sale' } }),
      });
    const ambiguous = await post('/writes');
    expect(ambiguous.status).toBe(404);
    expect(((await ambiguous.json()) as { error: string }).error).toBe('several connections are configured (acme, globex): use /connections/{name}/writes');
    expect((await post('/connections/initech/writes')).status).toBe(404);
    const accepted = await post('/connections/globex/writes');
    expect(accepted.status).toBe(202);
    const { write } = (await accepted.json()) as { write: { id: string } };
    await waitFor(() => sim!.company(2).world.transactions.some((record) => record.description === 'globex sale'), 'the write to reach company C2', 30_000);
    expect(sim.company(1).world.transactions.some((record) => record.description === 'globex sale')).toBe(false);
    const shown = await waitFor(
      async () => {
        const response = await fetch(`${url}/connections/globex/writes/${write.id}`, { headers: { authorization: `Bearer ${WRITE_KEY}` } });
        const body = (await response.json()) as { write?: { status: string } };
        return body.write?.status === 'succeeded' ? body : undefined;
      },
      'the write to succeed',
      30_000,
    );
    expect(shown.write!.status).toBe('succeeded');
    expect((await fetch(`${url}/connections/acme/writes/${write.id}`, { headers: { authorization: `Bearer ${WRITE_KEY}` } })).status).toBe(404);
    const fromCli = await runCli(['write', write.id, '--connection', 'globex', '--json'], env);
    expect(JSON.parse(fromCli.stdout)).toMatchObject({ id: write.id, status: 'succeeded' });

    // The operator console shows each connection in its own section, with its own streams and writes.
    const page = await (await fetch(url, { headers: { authorization: `Bearer ${READ_KEY}` } })).text();
    const sections = page.split('<section class="connection"').slice(1);
    expect(sections.map((section) => /<h2 id="connection-(\w+)">/.exec(section)?.[1])).toEqual(['acme', 'globex']);
    expect(sections[0]).toContain('<th scope="row">onboardings</th>');
    expect(sections[1]).not.toContain('<th scope="row">onboardings</th>');
    const consoleData = (await (await fetch(`${url}/console.json`, { headers: { authorization: `Bearer ${READ_KEY}` } })).json()) as {
      connections: { name: string; report: { writes: Record<string, number> } }[];
    };
    expect(consoleData.connections.map((connection) => [connection.name, connection.report.writes])).toEqual([
      ['acme', {}],
      ['globex', { succeeded: 1 }],
    ]);

    // Log lines carry their connection.
    expect(daemon.logs.some((line) => line.connection === 'acme' && line.msg === 'connection started')).toBe(true);
    expect(daemon.logs.some((line) => line.connection === 'globex' && line.msg === 'connection started')).toBe(true);
    const stopped = await terminate(daemon);
    expect(stopped.code).toBe(0);
    expect(daemon.stderr()).not.toContain(sim.company(1).token);
    expect(daemon.stderr()).not.toContain(sim.company(2).token);
  });
});

describe('--connection', () => {
  /** A simulator of two extra companies and the environment of a configuration naming them acme and globex. */
  async function twoCompanies(): Promise<{ sim: RunningSimulator; dir: TempDir; env: ReturnType<typeof twoConnections> }> {
    sim = await startSimulator({ companies: 2, extraCompanySizes: SIZES, rateLimit: false });
    dir = tempDir('bizops-companies-');
    return { sim, dir, env: twoConnections(sim, dir) };
  }

  it('is required among several (a one-line usage error listing them, exit 2) and must name a configured one', async () => {
    const { env } = await twoCompanies();
    // Independent processes, started at once.
    const perCommand = [['enqueue', 'transaction.create', '--data', '{}'], ['write', 'w_1'], ['changes'], ['webhooks', 'list']];
    const [missing, unknown, both, ...results] = await Promise.all([
      runCli(['sync'], env),
      runCli(['status', '--connection', 'initech'], env),
      runCli(['sync', '--all', '--connection', 'acme'], env),
      ...perCommand.map((args) => runCli(args, env)),
    ]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe('bizops-sync: several connections are configured (acme, globex): choose one with --connection NAME, or --all\n');
    perCommand.forEach((args, index) => {
      const result = results[index]!;
      expect({ args, code: result.code, stderr: result.stderr }).toEqual({ args, code: 2, stderr: 'bizops-sync: several connections are configured (acme, globex): choose one with --connection NAME\n' });
    });
    expect(unknown).toMatchObject({ code: 2, stderr: 'bizops-sync: --connection: no connection named "initech"; configured: acme, globex\n' });
    expect(both.stderr).toBe('bizops-sync: --all and --connection: use one of them\n');
  });

  it('syncs the named connection alone: only its file is written, and status shows the other as not synced yet', async () => {
    const { sim, dir, env } = await twoCompanies();
    const acme = await runCli(['sync', '--connection', 'acme', '--stream', 'deals'], env);
    expect(acme.code).toBe(0);
    expect(acme.stdout).toMatch(/^acme: deals: succeeded/);
    expect(mirroredIds(dir.file('acme.db'), 'deals')).toEqual(truthIds(sim, 1, 'deals'));
    const [changes, statuses] = await Promise.all([runCli(['changes', '--connection', 'acme', '--type', 'deal.*'], env), runCli(['status', '--json'], env)]);
    expect(changes.stdout.trim().split('\n')).toHaveLength(truthIds(sim, 1, 'deals').length);
    expect(statuses.code).toBe(1);
    expect(JSON.parse(statuses.stdout).globex.error).toMatch(/globex\.db/);
  });

  it('config check shows each connection with its secrets masked', async () => {
    const { sim, env } = await twoCompanies();
    const check = await runCli(['config', 'check'], env);
    expect(check.code).toBe(0);
    const shown = JSON.parse(check.stdout) as { connections: Record<string, { tokens: Record<string, string>; companyId: string }> };
    expect(Object.keys(shown.connections)).toEqual(['acme', 'globex']);
    expect(shown.connections.globex!.tokens.default).toBe('***');
    expect(check.stdout).not.toContain(sim.company(1).token);
  });
});
