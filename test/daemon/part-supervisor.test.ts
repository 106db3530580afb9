/**
 * The part supervisor (src/daemon/part-supervisor.ts), in-process: a part whose start fails is tried
 * again until it runs, showing `retrying` with the error's short form (secrets masked); a part stood
 * by or stopped while it retries is tried no more; `stopAll` stops each started part once, the last
 * added first; `partsReadiness` is not ready while a required part is not up. Nothing waits on time.
 */
import { describe, expect, it } from 'vitest';
import { PartSupervisor, partsReadiness, type PartRun } from '../../src/daemon/part-supervisor.ts';
import { combineReadiness } from '../../src/daemon/readiness.ts';
import { waitFor } from '../helpers.ts';

/** A part that fails its first `failures` starts, counting starts and stops. */
function flakyPart(name: string, failures: number, error = (attempt: number) => new Error(`database is locked (attempt ${attempt})`)) {
  const counts = { attempts: 0, stops: 0 };
  return {
    counts,
    definition: {
      name,
      start: () => {
        counts.attempts += 1;
        return counts.attempts <= failures ? Promise.reject(error(counts.attempts)) : Promise.resolve();
      },
      stop: () => Promise.resolve(void (counts.stops += 1)),
    },
  };
}

describe('the part supervisor', () => {
  it('tries a failing start again until it runs, and stops every started part once, the last added first', async () => {
    const stopOrder: string[] = [];
    const parts = new PartSupervisor({ minDelayMs: 1, maxDelayMs: 5, secrets: ['sekrit-token-123'] });
    // A TypeError is tried again too (p-retry alone would give up on one), its secret masked.
    const flaky = flakyPart('flaky', 3, (attempt) => (attempt === 1 ? new TypeError('cannot read sekrit-token-123') : new Error(`database is locked (attempt ${attempt})`)));
    const steady = flakyPart('steady', 0);
    parts.add({ ...steady.definition, stop: () => (stopOrder.push('steady'), steady.definition.stop()) });
    parts.add({ ...flaky.definition, stop: () => (stopOrder.push('flaky'), flaky.definition.stop()) });
    expect(parts.statuses().map((status) => status.state)).toEqual(['starting', 'starting']);

    await parts.start('steady');
    await parts.start('flaky');
    expect(parts.status('steady')).toMatchObject({ state: 'running', required: true });
    const first = parts.status('flaky')!;
    expect(first.state === 'retrying' || first.state === 'running').toBe(true);
    if (first.state === 'retrying' && first.failures === 1) expect(first.error).toBe('cannot read [redacted]');
    await waitFor(() => parts.status('flaky')?.state === 'running', 'the flaky part to run');
    expect(flaky.counts.attempts).toBe(4);
    expect(parts.status('flaky')).not.toHaveProperty('error');

    // Started again while running: nothing happens.
    await parts.start('flaky');
    expect(flaky.counts.attempts).toBe(4);
    await Promise.all([parts.stopAll(), parts.stopAll()]);
    expect(stopOrder).toEqual(['flaky', 'steady']);
    expect([flaky.counts.stops, steady.counts.stops]).toEqual([1, 1]);
    expect(parts.statuses().map((status) => status.state)).toEqual(['stopped', 'stopped']);
    // Nothing starts after stopAll.
    await parts.start('flaky');
    expect(parts.status('flaky')!.state).toBe('stopped');
  });

  it('a part stood by or stopped while it retries is tried no more, and its stop is not called', async () => {
    const parts = new PartSupervisor({ minDelayMs: 1, maxDelayMs: 2 });
    const never = flakyPart('never', Number.POSITIVE_INFINITY);
    parts.add(never.definition);
    await parts.start('never');
    await waitFor(() => never.counts.attempts >= 3, 'a few failed attempts');
    expect(parts.status('never')).toMatchObject({ state: 'retrying', error: expect.stringMatching(/^database is locked \(attempt \d+\)$/) });
    await parts.standBy('never', 'a replica holds its lease');
    const attempts = never.counts.attempts;
    expect(parts.status('never')).toMatchObject({ state: 'standby', reason: 'a replica holds its lease' });
    expect(parts.status('never')).not.toHaveProperty('error');
    // Started again (the lease came back), then the daemon stops: no further attempt after stopAll.
    await parts.start('never');
    await waitFor(() => never.counts.attempts > attempts, 'an attempt after the new start');
    await parts.stopAll();
    const atStop = never.counts.attempts;
    await parts.start('never');
    expect(never.counts.attempts).toBe(atStop);
    expect(never.counts.stops).toBe(0);
    expect(parts.status('never')!.state).toBe('stopped');
  });

  it('a part that retries its own rounds shows their failures, and readiness names a required part that is not up', async () => {
    const parts = new PartSupervisor({ minDelayMs: 1, maxDelayMs: 2 });
    let rounds: PartRun | undefined;
    parts.add({
      name: 'leases',
      start: (run) => {
        rounds = run;
        run.failing(new Error('stream:deals: database is locked'));
        return Promise.resolve();
      },
      stop: () => Promise.resolve(),
    });
    parts.add({ name: 'retention', required: false, start: () => Promise.reject(new Error('database is locked')), stop: () => Promise.resolve() }, 'its first pruning');
    await parts.start('leases');
    expect(parts.status('leases')).toMatchObject({ state: 'retrying', error: 'stream:deals: database is locked', failures: 1 });
    expect(parts.status('retention')).toMatchObject({ state: 'starting', reason: 'its first pruning' });
    const apiReady = { ready: true, reason: 'the API answered' };
    expect(partsReadiness(apiReady, parts.statuses())).toMatchObject({ ready: false, reason: 'not every part runs: leases retrying (stream:deals: database is locked)' });
    expect(partsReadiness({ ready: false, reason: 'the API is unreachable' }, parts.statuses()).reason).toBe('the API is unreachable; not every part runs: leases retrying (stream:deals: database is locked)');

    rounds!.failing(new Error('stream:deals: database is locked'));
    expect(parts.status('leases')!.failures).toBe(2);
    rounds!.working();
    expect(parts.status('leases')).toMatchObject({ state: 'running' });
    // A part not required (retention) shows, but does not make the daemon unready.
    await parts.start('retention');
    const verdict = partsReadiness(apiReady, parts.statuses());
    expect(verdict.ready).toBe(true);
    expect(verdict.parts.retention).toMatchObject({ state: 'retrying', required: false });

    // Several connections: each one's parts under `<connection>/<part>`, the one with a part down named.
    rounds!.failing(new Error('webhooks: database is locked'));
    const deployment = combineReadiness({
      acme: { ...partsReadiness({ ...apiReady, status: 200, checkedAt: null }, parts.statuses()) },
      globex: { ...partsReadiness({ ...apiReady, status: 200, checkedAt: null }, []) },
    });
    expect(deployment.ready).toBe(false);
    expect(deployment.reason).toBe('not ready: acme (not every part runs: leases retrying (webhooks: database is locked))');
    expect(Object.keys(deployment.parts ?? {}).sort()).toEqual(['acme/leases', 'acme/retention']);
    await parts.stopAll();
  });
});
