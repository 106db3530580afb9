/**
 * A wrong base URL does not switch a stream off for ever: a base URL that already
 * holds `/api/public/v1` is refused at start with a message; a stream marked `unsupported` by a 404
 * is asked again by a sync at most once per `sync.unsupportedProbeSeconds`, and `status` says why
 * it is skipped.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { readStatus } from '../../jobs/status.ts';
import { listRequests, runCli, simulator, syncFixtures, tempDir, type TempDir, testMirrorLocation } from '../helpers.ts';

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

describe('a base URL holding the API prefix', () => {
  it.each(['/api/public/v1', '/api/public/v1/', '/api/public', '/API/public/v1/deals'])('is refused by sync with exit 2 and a message naming the key and the rule (%s); nothing is sent', async (suffix) => {
    sim = await simulator({ size: { deals: 5, transactions: 5 } });
    dir = tempDir();
    const env = cliEnv({ BIZOPS_BASE_URL: `${sim.url}${suffix}`, BIZOPS_TOKEN: String(sim.tokens.admin), BIZOPS_DB: testMirrorLocation(dir.file('mirror.db')) });
    const result = await runCli(['sync'], env);
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toMatch(/^bizops-sync: configuration error: BIZOPS_BASE_URL \(baseUrl\): must be the API's \{base_url\} without \/api\/public\/v1/);
    expect(result.stderr).not.toContain(String(sim.tokens.admin));
    expect(sim.requests).toHaveLength(0);
    // The same URL without the prefix works.
    expect((await runCli(['sync'], { ...env, BIZOPS_BASE_URL: sim.url })).code).toBe(0);
  });
});

describe('an unsupported stream', () => {
  it('is skipped by syncs until its probe is due, status says why, and a due probe that succeeds brings it back', async () => {
    const { sim: world, context } = await fixtures.start({ size: { deals: 25, transactions: 5 } });
    world.faults.inject(DEALS_404);
    expect((await context.engine.run('deals', 'sync')).status).toBe('unsupported');
    const probes = listRequests(world, '/deals').length;
    expect(probes).toBe(1);

    // Within the hour: skipped without a request, and status says why.
    world.faults.clear();
    expect((await context.engine.run('deals', 'sync')).status).toBe('unsupported');
    expect(listRequests(world, '/deals')).toHaveLength(probes);
    const deals = (await readStatus(context.config.dbPath)).streams.find((s) => s.stream === 'deals')!;
    expect(deals.supported).toBe(false);
    expect(deals.skipped).toMatch(/unsupported since .*\/deals answered 404.*sync\.unsupportedProbeSeconds/);

    // The last probe an hour ago: the next sync asks again, finds the list, and mirrors it.
    await context.store.updateSyncState('deals', { last_run_started_at: new Date(Date.now() - 3_600_000).toISOString() });
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

  it('the CLI: sync after a 404 reports the stream unsupported, status shows the reason', async () => {
    sim = await simulator({ size: { deals: 5, transactions: 5, onboardings: 3 } });
    dir = tempDir();
    const env = cliEnv({ BIZOPS_BASE_URL: sim.url, BIZOPS_TOKEN: String(sim.tokens.admin), BIZOPS_DB: testMirrorLocation(dir.file('mirror.db')) });
    sim.faults.inject(DEALS_404);
    const sync = await runCli(['sync', '--stream', 'deals'], env);
    expect(sync.code).toBe(0);
    expect(sync.stdout).toMatch(/deals: unsupported/);
    const status = await runCli(['status'], env);
    expect(status.stdout).toMatch(/deals: skipped by syncs: unsupported since/);
  });
});
