/**
 * A wrong base URL does not switch a stream off for ever: a base URL that already
 * holds `/api/public/v1` is refused at start with a message; a base URL where every stream's list
 * answers 404 is a configuration error (exit 2, one line, nothing marked; the daemon refuses to
 * start); a stream marked `unsupported` by a 404 is asked again by a sync at most once per
 * `sync.unsupportedProbeSeconds`, and `status` says why it is skipped.
 */
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { describeOnSqlite, itOnSqlite } from '../sqlite-only.ts';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { readStatus } from '../../jobs/status.ts';
import { loadConfig } from '../../src/config/index.ts';
import { spawnDaemon } from '../daemon/helpers.ts';
import { listRequests, runCli, simulator, statusOutput, syncFixtures, tempDir, type TempDir, testMirrorLocation } from '../helpers.ts';

/** Tests of the command line and the configuration, not of the mirror: on SQLite only (the `postgres` project does not register them). */
const cliOnly = describeOnSqlite;

const fixtures = syncFixtures();
let sim: RunningSimulator | undefined;
let dir: TempDir | undefined;
afterEach(async () => {
  await sim?.close();
  dir?.remove();
  sim = undefined;
  dir = undefined;
});

const cliEnv = (extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv => ({ PATH: process.env.PATH, HOME: process.env.HOME, BIZOPS_LOG_FORMAT: 'json', ...extra });
const DEALS_404 = { match: { path: '/deals' }, kind: 'status', status: 404, body: { message: 'Not found' }, times: 100 } as const;

const PREFIX_REFUSED = /^BIZOPS_BASE_URL \(baseUrl\): must be the API's \{base_url\} without \/api\/public\/v1/;

cliOnly('a base URL holding the API prefix', () => {
  it('is refused by sync with exit 2 and a message naming the key and the rule; nothing is sent', async () => {
    sim = await simulator({ size: { deals: 5, transactions: 5 } });
    dir = tempDir();
    const env = cliEnv({ BIZOPS_BASE_URL: `${sim.url}/api/public/v1`, BIZOPS_TOKEN: String(sim.tokens.admin), BIZOPS_DB: testMirrorLocation(dir.file('mirror.db')) });
    const result = await runCli(['sync'], env);
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toMatch(/^bizops-sync: configuration error: BIZOPS_BASE_URL \(baseUrl\): must be the API's \{base_url\} without \/api\/public\/v1/);
    expect(result.stderr).not.toContain(String(sim.tokens.admin));
    expect(sim.requests).toHaveLength(0);
  });

  // The rule itself, for each form of the prefix, where the command above meets it: loading the configuration.
  it.each(['/api/public/v1', '/api/public/v1/', '/api/public', '/API/public/v1/deals'])('the configuration refuses %s after the host, and takes the same URL without it', (suffix) => {
    const env = { BIZOPS_TOKEN: 'tok_test_prefix_0123456789', BIZOPS_DB: '/tmp/unused-mirror.db' };
    expect(() => loadConfig({ env: { ...env, BIZOPS_BASE_URL: `http://127.0.0.1:4010${suffix}` } })).toThrow(PREFIX_REFUSED);
    expect(loadConfig({ env: { ...env, BIZOPS_BASE_URL: 'http://127.0.0.1:4010' } }).baseUrl).toBe('http://127.0.0.1:4010');
  });
});

describe('an unsupported stream', () => {
  it('is skipped by syncs until its probe is due, status says why, and a due probe that succeeds brings it back', async () => {
    const { sim: world, context } = await fixtures.start({ size: { deals: 25, transactions: 5 } });
    world.faults.inject(DEALS_404);
    expect((await context.engine.run('deals', 'sync')).status).toBe('unsupported');
    const probes = listRequests(world, '/deals').length;
    expect(probes).toBe(1);

    // Within 10 minutes (the default sync.unsupportedProbeSeconds): skipped without a request, and status says why.
    world.faults.clear();
    expect((await context.engine.run('deals', 'sync')).status).toBe('unsupported');
    expect(listRequests(world, '/deals')).toHaveLength(probes);
    const deals = (await readStatus(context.config.dbPath)).streams.find((s) => s.stream === 'deals')!;
    expect(deals.supported).toBe(false);
    expect(deals.skipped).toMatch(/unsupported since .*\/deals answered 404.*sync\.unsupportedProbeSeconds/);

    // The last probe 10 minutes ago: the next sync asks again, finds the list, and mirrors it.
    await context.store.updateSyncState('deals', { last_run_started_at: new Date(Date.now() - 600_000).toISOString() });
    const probed = await context.engine.run('deals', 'sync');
    expect(probed).toMatchObject({ status: 'succeeded', records: 25 });
    expect(listRequests(world, '/deals')).toHaveLength(probes + 1);
    const after = (await readStatus(context.config.dbPath)).streams.find((s) => s.stream === 'deals')!;
    expect(after).toMatchObject({ supported: true, skipped: null, records: 25, lastError: null });
  });

  it('a due probe that still gets a 404 keeps the stream unsupported and restarts the wait', async () => {
    const { sim: world, context } = await fixtures.start({ size: { deals: 5, transactions: 5 } }, { sync: { unsupportedProbeSeconds: 0 } });
    world.faults.inject(DEALS_404);
    expect((await context.engine.run('deals', 'backfill')).status).toBe('unsupported');
    // unsupportedProbeSeconds 0: every sync asks.
    expect((await context.engine.run('deals', 'sync')).status).toBe('unsupported');
    expect((await context.engine.run('deals', 'sync')).status).toBe('unsupported');
    expect(listRequests(world, '/deals')).toHaveLength(3);
    expect((await context.store.readSyncState('deals')).supported).toBe(false);
  });

  itOnSqlite('the CLI: sync after a 404 reports the stream unsupported, status shows the reason', async () => {
    sim = await simulator({ size: { deals: 5, transactions: 5, onboardings: 3 } });
    dir = tempDir();
    const env = cliEnv({ BIZOPS_BASE_URL: sim.url, BIZOPS_TOKEN: String(sim.tokens.admin), BIZOPS_DB: testMirrorLocation(dir.file('mirror.db')) });
    sim.faults.inject(DEALS_404);
    const sync = await runCli(['sync', '--stream', 'deals'], env);
    expect(sync.code).toBe(0);
    expect(sync.stdout).toMatch(/deals: unsupported/);
    expect(await statusOutput(env.BIZOPS_DB!)).toMatch(/deals: skipped by syncs: unsupported since/);
  });
});

describe('a base URL that answers 404 everywhere (a typo)', () => {
  it('sync: one line naming the URL, exit 2, nothing marked; then the right URL mirrors every stream, nothing missing', async () => {
    // Enough deals to name every location: the corrective actions are read per location the deals name.
    sim = await simulator({ size: { deals: 30, transactions: 5, onboardings: 3 } });
    dir = tempDir();
    const dbPath = testMirrorLocation(dir.file('mirror.db'));
    const env = cliEnv({ BIZOPS_BASE_URL: `${sim.url}/typo`, BIZOPS_TOKEN: String(sim.tokens.admin), BIZOPS_DB: dbPath });
    const wrong = await runCli(['sync'], env);
    expect(wrong.code, wrong.stderr).toBe(2);
    const lines = wrong.stderr.trim().split('\n');
    expect(lines, wrong.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/^bizops-sync: configuration error: BIZOPS_BASE_URL \(baseUrl\): http:\/\/127\.0\.0\.1:\d+\/typo is not the API's base URL: every stream's list answered 404 \(GET http:\/\/127\.0\.0\.1:\d+\/typo\/api\/public\/v1\/\S+\); nothing was marked unsupported$/);
    expect(wrong.stderr).not.toContain(String(sim.tokens.admin));
    // Nothing marked: every stream still supported.
    const marked = await readStatus(dbPath);
    expect(marked.unsupported).toEqual([]);
    expect(marked.streams.every((stream) => stream.supported)).toBe(true);

    const right = await runCli(['sync'], { ...env, BIZOPS_BASE_URL: sim.url });
    expect(right.code, right.stderr).toBe(0);
    const after = await readStatus(dbPath);
    expect(after.unsupported).toEqual([]);
    for (const stream of after.streams) {
      expect(stream, stream.stream).toMatchObject({ supported: true, skipped: null, lastError: null });
      expect(stream.records, stream.stream).toBe(sim.world.groundTruth(stream.stream).length);
    }
  });

  itOnSqlite('the daemon refuses to start: one line naming the URL, exit 2', async () => {
    sim = await simulator({ size: { deals: 2, transactions: 2, onboardings: 1 } });
    dir = tempDir();
    const env = cliEnv({ BIZOPS_BASE_URL: `${sim.url}/typo`, BIZOPS_TOKEN: String(sim.tokens.admin), BIZOPS_DB: testMirrorLocation(dir.file('mirror.db')), BIZOPS_HTTP_PORT: '0', BIZOPS_LOG_LEVEL: 'error' });
    // Killed if it outlives the test (it started: the bug is back).
    const daemon = spawnDaemon(env);
    onTestFinished(() => void daemon.child.kill('SIGKILL'));
    daemon.url.catch(() => undefined); // it never listens
    expect((await daemon.exited).code, daemon.stderr()).toBe(2);
    const lines = daemon.stderr().trim().split('\n');
    expect(lines, daemon.stderr()).toHaveLength(1);
    expect(lines[0]).toMatch(/^bizops-sync: configuration error: BIZOPS_BASE_URL \(baseUrl\): http:\/\/127\.0\.0\.1:\d+\/typo is not the API's base URL/);
  });

  it('a stream whose own list answers 404 while the others answer is still unsupported (one request to tell them apart)', async () => {
    const { sim: world, context } = await fixtures.start({ size: { deals: 3, transactions: 3 } });
    world.faults.inject(DEALS_404);
    expect((await context.engine.run('deals', 'backfill')).status).toBe('unsupported');
    expect(listRequests(world, '/transactions')).toHaveLength(1);
    expect((await readStatus(context.config.dbPath)).unsupported).toEqual(['deals']);
  });
});
