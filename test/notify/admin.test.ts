import { Webhook } from 'standardwebhooks';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { WebhookEndpointConfig } from '../../src/config/schema.ts';
import { openMirrorConnection } from '../../src/mirror/open.ts';
import { replayWebhooks } from '../../src/notify/delivery/target-admin.ts';
import { listWebhookEndpoints, sendTestEvent } from '../../src/notify/webhooks/admin.ts';
import { WebhookDispatcher } from '../../src/notify/webhooks/dispatcher.ts';
import { loadEndpoint, registerEndpoint } from '../../src/notify/delivery/endpoint-store.ts';
import { insertChanges, newSecret, receiverFixture, tempMirror, type TempMirror } from './helpers.ts';
import { waitFor } from '../helpers.ts';

let mirror: TempMirror;
const receiver = receiverFixture();
beforeEach(async () => {
  mirror = await tempMirror();
});
afterEach(async () => {
  await mirror.cleanup();
});

describe('listWebhookEndpoints', () => {
  it('shows configured endpoints with state, lag and last error, unregistered ones, and stored ones no longer configured', async () => {
    const ok = await receiver();
    const failing = await receiver();
    failing.handler = (_request, response) => void response.writeHead(500).end();
    const endpoints: WebhookEndpointConfig[] = [
      { name: 'ok', url: ok.url, secret: newSecret(), events: ['*'] },
      { name: 'failing', url: failing.url, secret: newSecret(), events: ['deal.*'], ordering: 'endpoint' },
    ];
    await registerEndpoint(mirror.connection, 'retired', 'http://127.0.0.1:9/old');
    const dispatcher = new WebhookDispatcher({ connection: mirror.connection, endpoints, pollMs: 20, scheduleMs: [0, 10, 10_000], jitterRatio: 0 });
    await dispatcher.start();
    await insertChanges(mirror.connection, 3, { types: ['deal.won'] });
    dispatcher.notify();
    await waitFor(
      async () => (await loadEndpoint(mirror.connection, 'ok'))?.deliveredSeq === 3 && (await loadEndpoint(mirror.connection, 'failing'))?.consecutiveFailures === 2,
      'deliveries and failures',
    );
    await dispatcher.stop();

    const readonly = await openMirrorConnection(mirror.path, { readonly: true });
    const listing = await listWebhookEndpoints(readonly, { webhooks: [...endpoints, { name: 'new', url: ok.url, secret: newSecret(), events: ['*'] }] });
    await readonly.close();
    expect(listing.map((l) => l.name)).toEqual(['ok', 'failing', 'new', 'retired']);
    expect(listing[0]).toMatchObject({ configured: true, registered: true, enabled: true, deliveredSeq: 3, lagEvents: 0, lastStatus: 204, deliveredCount: 3, lastError: null });
    // Strict order: the first event held back for its retries, the two after it waiting.
    expect(listing[1]).toMatchObject({ events: ['deal.*'], enabled: true, ordering: 'endpoint', maxInFlight: 1, deliveredSeq: 1, heldEvents: 1, lagEvents: 3, consecutiveFailures: 2, lastStatus: 500, lastError: 'HTTP 500', failedCount: 2 });
    expect(listing[1]!.nextAttemptAt).not.toBeNull();
    // Its attempts, newest first: when, status, latency, the answer's first bytes.
    expect(listing[1]!.recentAttempts).toMatchObject([
      { endpoint: 'failing', seq: 1, attempt: 2, outcome: 'failed', status: 500, error: 'HTTP 500' },
      { endpoint: 'failing', seq: 1, attempt: 1, outcome: 'failed', status: 500, error: 'HTTP 500' },
    ]);
    expect(listing[0]).toMatchObject({ ordering: 'record', maxInFlight: 16, heldEvents: 0 });
    expect(listing[0]!.recentAttempts).toHaveLength(3);
    expect(listing[2]).toMatchObject({ configured: true, registered: false, deliveredSeq: null, lagEvents: 0 });
    expect(listing[3]).toMatchObject({ configured: false, registered: true, url: 'http://127.0.0.1:9/old', events: null });
  });
});

describe('sendTestEvent', () => {
  it('sends a signed webhook.test and returns status and duration', async () => {
    const target = await receiver();
    target.handler = (_request, response) => void response.writeHead(202).end();
    const endpoint: WebhookEndpointConfig = { name: 'crm', url: target.url, secret: newSecret(), events: ['deal.won'] };
    const result = await sendTestEvent(endpoint);
    expect(result).toMatchObject({ ok: true, status: 202, error: null });
    expect(result.durationMs).toBeGreaterThan(0);
    const [request] = target.requests;
    expect(request!.headers['webhook-id']).toBe(result.webhookId);
    expect(new Webhook(endpoint.secret).verify(request!.body, request!.headers as Record<string, string>)).toMatchObject({ type: 'webhook.test', data: { endpoint: 'crm' } });
  });

  it('reports a failing receiver and an unreachable one', async () => {
    const target = await receiver();
    target.handler = (_request, response) => void response.writeHead(401).end();
    const endpoint: WebhookEndpointConfig = { name: 'crm', url: target.url, secret: newSecret(), events: ['*'] };
    expect(await sendTestEvent(endpoint)).toMatchObject({ ok: false, status: 401, error: 'HTTP 401' });
    await target.close();
    const unreachable = await sendTestEvent(endpoint);
    expect(unreachable).toMatchObject({ ok: false, status: null });
    expect(unreachable.error).toMatch(/ECONNREFUSED/);
  });
});

describe('replayWebhooks', () => {
  it('moves the cursor back, clears the backoff, and refuses bad input with the field', async () => {
    await insertChanges(mirror.connection, 8);
    await registerEndpoint(mirror.connection, 'crm', 'http://127.0.0.1:9/hooks');
    (await mirror.connection.run("UPDATE webhook_endpoints SET attempts = 4, next_attempt_at = '2999-01-01T00:00:00.000Z' WHERE name = 'crm'"));
    expect(await replayWebhooks(mirror.connection, 'crm', 2)).toEqual({ name: 'crm', previousDeliveredSeq: 8, deliveredSeq: 2, reenabled: false, eventsToResend: 6 });
    expect(await loadEndpoint(mirror.connection, 'crm')).toMatchObject({ deliveredSeq: 2, consecutiveFailures: 0, nextAttemptAt: null });
    await expect(replayWebhooks(mirror.connection, 'crm', 5)).rejects.toThrow(/^sinceSeq: 5 is ahead of endpoint "crm"'s cursor \(2\)/);
    await expect(replayWebhooks(mirror.connection, 'crm', -1)).rejects.toThrow(/^sinceSeq: must be a non-negative integer/);
    await expect(replayWebhooks(mirror.connection, 'nobody', 0)).rejects.toThrow(/"nobody" is not registered/);
    // The refused replays changed nothing (the check and the move are one transaction).
    expect(await loadEndpoint(mirror.connection, 'crm')).toMatchObject({ deliveredSeq: 2 });
  });

  it('registers a configured endpoint the daemon has not seen yet, so history can be delivered', async () => {
    await insertChanges(mirror.connection, 4);
    const endpoint: WebhookEndpointConfig = { name: 'late', url: 'http://127.0.0.1:9/hooks', secret: newSecret(), events: ['*'] };
    expect(await replayWebhooks(mirror.connection, endpoint, 0)).toMatchObject({ previousDeliveredSeq: 4, deliveredSeq: 0, eventsToResend: 4 });
  });
});
