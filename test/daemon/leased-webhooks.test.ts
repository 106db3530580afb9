/**
 * LeasedWebhookDelivery (src/daemon/leased-webhooks.ts) started as the daemon starts it, through its
 * part supervisor (src/daemon/part-supervisor.ts): a dispatcher whose creation fails (its endpoints
 * cannot be registered while another connection holds the SQLite file busy, as after a kill -9
 * during delivery) is created again until delivery runs, never left stopped for good.
 */
import { describe, expect, it } from 'vitest';
import { LeasedWebhookDelivery } from '../../src/daemon/leased-webhooks.ts';
import { PartSupervisor, type PartStatus } from '../../src/daemon/part-supervisor.ts';
import type { DeliveryDispatcher } from '../../src/notify/delivery/delivery-dispatcher.ts';
import { waitFor } from '../helpers.ts';

describe('webhook delivery under its lease', () => {
  it('a creation refused by a busy database is tried again by its part until delivery starts', async () => {
    let attempts = 0;
    let started = 0;
    let stopped = 0;
    const delivery = new LeasedWebhookDelivery({
      create: () => {
        attempts += 1;
        if (attempts <= 2) return Promise.reject(new Error('database is locked'));
        // The dispatcher's face as the delivery drives it: started once, stopped at the end.
        return Promise.resolve({ start: () => Promise.resolve(void (started += 1)), stop: () => Promise.resolve(void (stopped += 1)), notify: () => undefined, stats: () => Promise.resolve([]) } as unknown as DeliveryDispatcher);
      },
      confirm: () => Promise.resolve(),
    });
    const parts = new PartSupervisor({ minDelayMs: 5, maxDelayMs: 20 });
    parts.add({ name: 'webhooks', start: () => delivery.begin({ name: 'webhooks', holder: 'test', fence: 1 }), stop: () => delivery.end() });
    await parts.start('webhooks');
    // The first attempt failed: the part says so, with the error, while it is tried again.
    const afterFirst = parts.status('webhooks')!;
    expect(afterFirst.state === 'retrying' || afterFirst.state === 'running').toBe(true);
    if (afterFirst.state === 'retrying') expect(afterFirst).toMatchObject<Partial<PartStatus>>({ error: 'database is locked', failures: 1 });
    await waitFor(() => delivery.delivering, 'delivery to start after two refused creations', 10_000);
    expect([attempts, started]).toEqual([3, 1]);
    expect(parts.status('webhooks')).toMatchObject({ state: 'running', required: true });
    await parts.stopAll();
    await parts.stopAll();
    expect(delivery.delivering).toBe(false);
    expect(stopped).toBe(1);
    expect(parts.status('webhooks')!.state).toBe('stopped');
  });
});
