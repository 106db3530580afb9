/**
 * LeasedWebhookDelivery (src/daemon/leased-webhooks.ts): a dispatcher whose creation fails (its
 * endpoints cannot be registered while another connection holds the SQLite file busy, as after a
 * kill -9 during delivery) is created again until delivery runs, never left stopped for good.
 */
import { describe, expect, it } from 'vitest';
import { LeasedWebhookDelivery } from '../../src/daemon/leased-webhooks.ts';
import type { DeliveryDispatcher } from '../../src/notify/delivery/delivery-dispatcher.ts';
import { waitFor } from '../helpers.ts';

describe('webhook delivery under its lease', () => {
  it('a creation refused by a busy database is tried again until delivery starts', async () => {
    let attempts = 0;
    let started = 0;
    const delivery = new LeasedWebhookDelivery({
      create: () => {
        attempts += 1;
        if (attempts <= 2) return Promise.reject(new Error('database is locked'));
        // The dispatcher's face as the delivery drives it: started once, stopped at the end.
        return Promise.resolve({ start: () => Promise.resolve(void (started += 1)), stop: () => Promise.resolve(), notify: () => undefined, stats: () => Promise.resolve([]) } as unknown as DeliveryDispatcher);
      },
      confirm: () => Promise.resolve(),
    });
    await delivery.begin({ name: 'webhooks', holder: 'test', fence: 1 }, 10);
    await waitFor(() => delivery.delivering, 'delivery to start after two refused creations', 10_000);
    expect([attempts, started]).toEqual([3, 1]);
    await delivery.end();
    expect(delivery.delivering).toBe(false);
  });
});
