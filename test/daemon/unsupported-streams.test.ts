/**
 * An unsupported stream in the daemon (the real `bizops-sync daemon` process against the simulator):
 * `/readyz` lists it (ready all the same), and each start of the daemon asks its list again whatever
 * `sync.unsupportedProbeSeconds` says, so a list that came back is mirrored at once.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { readStatus } from '../../jobs/status.ts';
import { listRequests, runCli, simulator, tempDir, type TempDir, waitFor } from '../helpers.ts';
import { cliEnv, spawnDaemon, terminate, type DaemonProcess } from './helpers.ts';

let sim: RunningSimulator | undefined;
let dir: TempDir | undefined;
const daemons: DaemonProcess[] = [];
afterEach(async () => {
  for (const daemon of daemons.splice(0)) if (daemon.child.exitCode === null && daemon.child.signalCode === null) daemon.child.kill('SIGKILL');
  await sim?.close();
  dir?.remove();
  sim = dir = undefined;
});

const DEALS_404 = { match: { path: '/deals' }, kind: 'status', status: 404, body: { message: 'Not found' }, times: 1000 } as const;

interface Readyz {
  ready: boolean;
  unsupported?: string[];
  connections: Record<string, { unsupported?: string[] }>;
}

describe('an unsupported stream and the daemon', () => {
  it('/readyz lists it; the next start asks its list again (not an hour later) and mirrors it once it answers', async () => {
    sim = await simulator({ size: { deals: 4, transactions: 3, onboardings: 2 } });
    dir = tempDir();
    const env = cliEnv({
      BIZOPS_BASE_URL: sim.url,
      BIZOPS_TOKEN: String(sim.tokens.admin),
      BIZOPS_DB: dir.file('mirror.db'),
      BIZOPS_HTTP_PORT: '0',
      BIZOPS_SCHEDULE: '*/1 * * * * *',
      BIZOPS_READINESS_CACHE_SECONDS: '1',
      BIZOPS_LOG_LEVEL: 'info',
    });
    sim.faults.inject(DEALS_404);
    expect((await runCli(['sync'], env)).code).toBe(0);
    expect((await readStatus(dir.file('mirror.db'))).unsupported).toEqual(['deals']);
    const askedBefore = listRequests(sim, '/deals').length;

    // Still 404: the daemon's start asks again (one request), and /readyz lists the stream.
    const first = spawnDaemon(env);
    daemons.push(first);
    const url = await first.url;
    await waitFor(() => listRequests(sim!, '/deals').length > askedBefore, 'the daemon to ask the deals list at its start');
    const readyz = (await (await fetch(`${url}/readyz`)).json()) as Readyz;
    expect(readyz).toMatchObject({ ready: true, unsupported: ['deals'], connections: { default: { unsupported: ['deals'] } } });
    expect((await terminate(first)).code).toBe(0);

    // The list answers again: the next start asks at once and mirrors it; /readyz lists nothing.
    sim.faults.clear();
    const second = spawnDaemon(env);
    daemons.push(second);
    const secondUrl = await second.url;
    await waitFor(async () => {
      const deals = (await readStatus(dir!.file('mirror.db'))).streams.find((stream) => stream.stream === 'deals')!;
      return deals.supported && deals.records === sim!.world.groundTruth('deals').length;
    }, 'deals to be mirrored after the start');
    const after = (await (await fetch(`${secondUrl}/readyz`)).json()) as Readyz;
    expect(after.unsupported).toEqual([]);
    expect((await terminate(second)).code).toBe(0);
  });
});
