import { Webhook } from 'standardwebhooks';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { WebhookEndpointConfig } from '../../src/config/schema.ts';
import { WebhookDispatcher, type WebhookDispatcherOptions } from '../../src/notify/webhooks/dispatcher.ts';
import { loadEndpoint } from '../../src/notify/delivery/endpoint-store.ts';
import { loadHeldEvents } from '../../src/notify/delivery/held-events.ts';
import { enableWebhookEndpoint, replayWebhooks } from '../../src/notify/delivery/target-admin.ts';
import { replayFailedWebhooks } from '../../src/notify/webhooks/admin.ts';
import { listFailedDeliveries } from '../../src/notify/delivery/failed-deliveries.ts';
import { DaemonMetrics } from '../../src/daemon/metrics.ts';
import { confirmLease, Leases, WEBHOOKS_LEASE } from '../../src/mirror/leases.ts';
import { capturingLogger, insertChanges, newSecret, receiverFixture, seqOf, sleep, tempMirror, type Receiver, type TempMirror } from './helpers.ts';
import { waitFor } from '../helpers.ts';

let mirror: TempMirror;
const receiver = receiverFixture();
const dispatchers: WebhookDispatcher[] = [];

beforeEach(async () => {
  mirror = await tempMirror();
});
afterEach(async () => {
  await Promise.all(dispatchers.splice(0).map((d) => d.stop()));
  await mirror.cleanup();
});

function endpoint(name: string, target: Receiver, events: string[] = ['*'], options: Pick<WebhookEndpointConfig, 'ordering' | 'maxInFlight'> = {}): WebhookEndpointConfig {
  return { name, url: target.url, secret: newSecret(), events, ...options };
}

/** The endpoint's held-back events' seqs. */
async function heldSeqs(name: string): Promise<number[]> {
  return (await loadHeldEvents(mirror.connection, name)).map((held) => held.seq);
}

/**
 * A dispatcher with time scaled down: poll 30 ms, retries after 20, 40, 80 ms, no jitter; it gives
 * up on an event only after 1000 attempts unless the test sets `maxAttempts`.
 */
function dispatcher(options: Partial<WebhookDispatcherOptions> & Pick<WebhookDispatcherOptions, 'endpoints'>): WebhookDispatcher {
  const created = new WebhookDispatcher({ connection: mirror.connection, pollMs: 30, scheduleMs: [0, 20, 40, 80], maxAttempts: 1000, jitterRatio: 0, timeoutMs: 2000, stopGraceMs: 100, ...options });
  dispatchers.push(created);
  return created;
}

describe('WebhookDispatcher', () => {
  it('delivers every event once, signed, with the event_id as webhook-id; a new endpoint starts at the end of the changelog', async () => {
    await insertChanges(mirror.connection, 3); // history before the endpoint exists: not delivered
    const target = await receiver();
    const config = endpoint('crm', target);
    const running = dispatcher({ endpoints: [config] });
    await running.start();
    expect((await loadEndpoint(mirror.connection, 'crm'))?.deliveredSeq).toBe(3);

    const events = await insertChanges(mirror.connection, 20, { types: ['deal.won', 'transaction.created'] });
    running.notify();
    await waitFor(() => target.requests.length === 20, '20 deliveries');
    // Twenty records: side by side, so arrivals need not follow the changelog; each exactly once.
    expect([...target.ids].sort()).toEqual(events.map((e) => e.eventId).sort());
    const verifier = new Webhook(config.secret);
    for (const request of target.requests) {
      const payload = verifier.verify(request.body, request.headers as Record<string, string>) as { type: string; data: { seq: number; record_id: string } };
      const event = events.find((candidate) => candidate.eventId === request.headers['webhook-id'])!;
      expect(payload.type).toBe(event.type);
      expect(payload.data.seq).toBe(event.seq);
      expect(payload.data.record_id).toBe(event.recordId);
    }
    await waitFor(async () => (await loadEndpoint(mirror.connection, 'crm'))?.deliveredSeq === 23, 'cursor at 23');
    expect((await running.stats())[0]).toMatchObject({ name: 'crm', enabled: true, deliveries: 20, failures: 0, deliveredSeq: 23, lagEvents: 0, lagSeconds: 0 });
  });

  it('notify() wakes the loops without waiting for the poll', async () => {
    const target = await receiver();
    // The poll is an hour: a delivery at all (the test times out long before) is the wake-up's doing.
    const running = dispatcher({ endpoints: [endpoint('crm', target)], pollMs: 3_600_000 });
    await running.start();
    await sleep(50); // most likely idle by now; if not, the event is delivered in the first round either way
    await insertChanges(mirror.connection, 1);
    running.notify();
    await waitFor(() => target.requests.length === 1, 'the delivery after notify');
  });

  it('webhook delivery stalled after a database error: the loop tries again within seconds though the changelog stays quiet', async () => {
    const { logger, lines } = capturingLogger();
    const target = await receiver();
    // The poll is an hour and nothing notifies again: only the error back-off brings the next round.
    const running = dispatcher({ endpoints: [endpoint('crm', target)], pollMs: 3_600_000, logger });
    await running.start();
    // The round reading the changelog fails (as while PostgreSQL restarts or SQLite is busy) ... The
    // event and the table's new name commit together: the loop's first round, which start() begins
    // and a loaded machine can delay, never finds the event under the old name.
    const other = await mirror.connect();
    const [event] = await other.transaction(async (tx) => {
      const inserted = await insertChanges(tx, 1); // joins the transaction
      await tx.run('ALTER TABLE changes RENAME TO changes_away');
      return inserted;
    });
    running.notify();
    await waitFor(() => lines.some((line) => line.includes('webhook delivery loop error')), 'the delivery loop error');
    expect(target.requests).toHaveLength(0);
    // ... and the database answers again: the event goes out without another change or notify().
    await other.exec('ALTER TABLE changes_away RENAME TO changes');
    await waitFor(() => target.requests.length === 1, 'the delivery after the database answered again (a first back-off of 1 s)', 20_000);
    expect(target.requests[0]!.headers['webhook-id']).toBe(event!.eventId);
  });

  it('strict order (ordering endpoint): a receiver down (refused, then 503) gets every event in order once back, same webhook-id on retries; other endpoints keep receiving; a hanging one holds nobody up', async () => {
    const flaky = await receiver();
    const steady = await receiver();
    const hanging = await receiver();
    let hangingClosed = false;
    hanging.handler = (_request, response) => {
      response.on('close', () => (hangingClosed = true));
      return 'handled'; // accepts the request and never answers
    };
    const flakyPort = flaky.port;
    const flakyConfig = endpoint('flaky', flaky, ['*'], { ordering: 'endpoint' });
    await flaky.close(); // down: connection refused

    const running = dispatcher({ endpoints: [flakyConfig, endpoint('steady', steady), endpoint('hanging', hanging)], timeoutMs: 3_600_000 });
    await running.start();
    const events = await insertChanges(mirror.connection, 30);
    running.notify();

    // While flaky is refusing connections and hanging never answers, steady receives everything.
    await waitFor(() => steady.requests.length === 30, 'steady to receive all 30');
    await waitFor(async () => ((await loadEndpoint(mirror.connection, 'flaky'))?.consecutiveFailures ?? 0) >= 2, 'flaky to fail twice');
    expect([...steady.ids].sort()).toEqual(events.map((e) => e.eventId).sort());
    expect(flaky.requests).toHaveLength(0);
    // Every hanging request holds a place of its own: the others go on (16 in flight at most).
    expect(hanging.requests.length).toBeGreaterThanOrEqual(1);
    expect(hanging.requests.length).toBeLessThanOrEqual(16);
    const whileDown = (await loadEndpoint(mirror.connection, 'flaky'))!;
    // The failing first event is held back; in strict order nothing after it goes out.
    expect(whileDown.deliveredSeq).toBe(1);
    expect(await heldSeqs('flaky')).toEqual([1]);
    expect(whileDown.consecutiveFailures).toBeGreaterThanOrEqual(2);
    expect(whileDown.lastError).toMatch(/ECONNREFUSED/);
    expect((await running.stats()).find((s) => s.name === 'flaky')).toMatchObject({ lagEvents: 30, enabled: true });

    // Back, but answering 503 to its first 3 requests.
    flaky.handler = (request, response) => {
      if (request.index < 3) response.writeHead(503).end();
    };
    await flaky.start(flakyPort);
    await waitFor(() => new Set(flaky.ids).size === 30, 'flaky to receive all 30');
    await waitFor(async () => (await loadEndpoint(mirror.connection, 'flaky'))?.deliveredSeq === 30, 'flaky cursor at 30');

    // The first event was retried with the same webhook-id; arrivals never go back in seq.
    expect(flaky.ids.slice(0, 4)).toEqual(Array(4).fill(events[0]!.eventId));
    const seqs = flaky.requests.map(seqOf);
    expect(seqs.every((seq, index) => index === 0 || seq >= seqs[index - 1]!)).toBe(true);
    expect([...new Set(flaky.ids)]).toEqual(events.map((e) => e.eventId));
    const verifier = new Webhook(flakyConfig.secret);
    for (const request of flaky.requests) expect(() => verifier.verify(request.body, request.headers as Record<string, string>)).not.toThrow();

    // Stopping aborts the request the hanging receiver holds (its timeout is an hour): stop() returning
    // at all, and the receiver seeing its connection closed, is the grace period at work.
    await running.stop();
    await waitFor(() => hanging.requests[0] && hangingClosed, 'the hanging request aborted');
    expect((await loadEndpoint(mirror.connection, 'hanging'))?.deliveredSeq).toBe(0);
  });

  it('410 Gone disables the endpoint at once, with a webhook.endpoint_disabled event, logs a warning without the secret, stops delivering; replay re-enables it', async () => {
    const target = await receiver();
    target.handler = (_request, response) => void response.writeHead(410).end();
    const { logger, lines } = capturingLogger();
    const config = endpoint('gone', target, ['*'], { ordering: 'endpoint' });
    // A second endpoint woken by the same notify(): once it has the new events, the disabled loop has had its turn too.
    const witness = await receiver();
    const running = dispatcher({ endpoints: [config, endpoint('witness', witness)], logger });
    await running.start();
    await insertChanges(mirror.connection, 3);
    running.notify();
    await waitFor(async () => (await loadEndpoint(mirror.connection, 'gone'))?.disabledAt !== null, 'the endpoint to be disabled');
    const state = (await loadEndpoint(mirror.connection, 'gone'))!;
    expect(state.disabledReason).toMatch(/410/);
    expect(state.disabledKind).toBe('gone');
    expect(state.deliveredSeq).toBe(0);
    expect(lines.some((line) => line.includes('"level":"warn"') && line.includes('410 Gone') && line.includes('"endpoint":"gone"'))).toBe(true);
    expect(lines.join('')).not.toContain(config.secret.slice(6));

    await insertChanges(mirror.connection, 2); // seq 5 and 6: seq 4 is the webhook.endpoint_disabled change
    running.notify();
    await waitFor(async () => (await loadEndpoint(mirror.connection, 'witness'))?.deliveredSeq === 6, 'the witness endpoint to get the new events');
    expect(witness.requests.map((request) => (JSON.parse(request.body) as { type: string }).type)).toContain('webhook.endpoint_disabled');
    expect(target.requests).toHaveLength(1);
    expect((await running.stats())[0]).toMatchObject({ enabled: false, disabledKind: 'gone', lagEvents: 6 });

    target.handler = () => undefined; // the receiver is back
    expect(await replayWebhooks(mirror.connection, 'gone', 0)).toMatchObject({ reenabled: true, previousDeliveredSeq: 0, deliveredSeq: 0, eventsToResend: 6 });
    await waitFor(async () => (await loadEndpoint(mirror.connection, 'gone'))?.deliveredSeq === 6, 'all 6 delivered after re-enabling');
    expect(target.requests.slice(1).map(seqOf)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('a 302 is not followed and counts as a failure', async () => {
    const target = await receiver();
    const redirecting = await receiver();
    redirecting.handler = (_request, response) => void response.writeHead(302, { location: target.url }).end();
    const running = dispatcher({ endpoints: [endpoint('moved', redirecting)] });
    await running.start();
    await insertChanges(mirror.connection, 1);
    running.notify();
    await waitFor(async () => ((await loadEndpoint(mirror.connection, 'moved'))?.failedCount ?? 0) >= 3, 'three failed attempts recorded');
    const state = (await loadEndpoint(mirror.connection, 'moved'))!;
    // Held back for its retries: the cursor passes it, the held events keep it.
    expect(await heldSeqs('moved')).toEqual([1]);
    expect(state.lastStatus).toBe(302);
    expect(state.lastError).toMatch(/redirect 302 not followed/);
    expect(target.requests).toHaveLength(0);
    expect((await running.stats())[0]!.failures).toBeGreaterThanOrEqual(3);
  });

  it("honours the receiver's Retry-After when it is longer than the schedule", async () => {
    const target = await receiver();
    target.handler = (request, response) => {
      if (request.index === 0) response.writeHead(503, { 'retry-after': '1' }).end();
    };
    const running = dispatcher({ endpoints: [endpoint('busy', target)] });
    await running.start();
    await insertChanges(mirror.connection, 1);
    running.notify();
    await waitFor(() => target.requests.length === 2, 'the retry', 20_000);
    // A lower bound only: a slow machine can only widen the gap. The schedule alone would retry after 20 ms.
    expect(target.requests[1]!.at - target.requests[0]!.at).toBeGreaterThanOrEqual(950);
  });

  it('gives up on an event after the last attempt of the schedule: records it as failed, the other records never wait for it; replay --failed re-sends it', async () => {
    const target = await receiver();
    let poisoned = '';
    target.handler = (request, response) => {
      if (request.headers['webhook-id'] === poisoned) response.writeHead(500).end();
    };
    const config = endpoint('stubborn', target);
    const running = dispatcher({ endpoints: [config], scheduleMs: [0, 10, 20], maxAttempts: 3 });
    await running.start();
    const events = await insertChanges(mirror.connection, 3);
    poisoned = events[0]!.eventId;
    running.notify();
    await waitFor(async () => (await listFailedDeliveries(mirror.connection)).length === 1 && (await loadEndpoint(mirror.connection, 'stubborn'))?.deliveredSeq === 3, 'the failing event given up');
    expect(target.ids.filter((id) => id === poisoned)).toHaveLength(3);
    // The other two records went out at once: before the poisoned event's second attempt.
    expect(target.ids.indexOf(events[1]!.eventId)).toBeLessThan(target.ids.lastIndexOf(poisoned));
    expect(target.ids.indexOf(events[2]!.eventId)).toBeLessThan(target.ids.lastIndexOf(poisoned));
    expect(target.ids).toHaveLength(5);
    expect(await loadEndpoint(mirror.connection, 'stubborn')).toMatchObject({ failedCount: 3, deliveredCount: 2, disabledAt: null });
    expect(await heldSeqs('stubborn')).toEqual([]);
    expect(await listFailedDeliveries(mirror.connection)).toEqual([
      { endpoint: 'stubborn', seq: 1, eventId: poisoned, type: 'deal.updated', attempts: 3, lastStatus: 500, lastError: 'HTTP 500', failedAt: expect.any(String) },
    ]);
    expect((await running.stats())[0]).toMatchObject({ enabled: true, failedEvents: 1, heldEvents: 0, lagEvents: 0 });

    // Still failing: the replay keeps the row and counts the attempt.
    expect(await replayFailedWebhooks(mirror.connection, [config])).toMatchObject([{ endpoint: 'stubborn', seq: 1, result: 'failed', status: 500 }]);
    expect((await listFailedDeliveries(mirror.connection, 'stubborn'))[0]!.attempts).toBe(4);
    // Fixed: delivered once, with the original webhook-id and a valid signature; the row is cleared.
    poisoned = '';
    expect(await replayFailedWebhooks(mirror.connection, [config], { endpoint: 'stubborn' })).toMatchObject([{ seq: 1, eventId: events[0]!.eventId, result: 'delivered', status: 204 }]);
    const replayed = target.requests.at(-1)!;
    expect(replayed.headers['webhook-id']).toBe(events[0]!.eventId);
    expect(new Webhook(config.secret).verify(replayed.body, replayed.headers as Record<string, string>)).toMatchObject({ data: { seq: 1 } });
    expect(await listFailedDeliveries(mirror.connection)).toEqual([]);
    await expect(replayFailedWebhooks(mirror.connection, [config], { endpoint: 'nobody' })).rejects.toThrow(/^endpoint: no configured endpoint named "nobody"/);
  });

  it('an endpoint failing for disableAfterDays is disabled: a webhook.endpoint_disabled event reaches the others, metrics show it; enable resumes where it stood', async () => {
    let offsetMs = 0;
    const now = () => new Date(Date.now() + offsetMs);
    const down = await receiver();
    down.handler = (_request, response) => void response.writeHead(503).end();
    const witness = await receiver();
    const running = dispatcher({
      endpoints: [{ ...endpoint('down', down, ['*'], { ordering: 'endpoint' }), disableAfterDays: 5 }, endpoint('witness', witness)],
      scheduleMs: [0, 10],
      maxAttempts: 2,
      now,
    });
    const metrics = new DaemonMetrics({ streams: [], store: {} as never, apiClients: [], budget: {} as never, webhooks: running, processMetrics: false });
    await running.start();
    const [first] = await insertChanges(mirror.connection, 1);
    running.notify();
    await waitFor(async () => (await listFailedDeliveries(mirror.connection, 'down'))[0]?.seq === first!.seq, 'the first event given up');
    const failingSince = (await loadEndpoint(mirror.connection, 'down'))!.failingSince;
    expect(failingSince).not.toBeNull();
    expect((await loadEndpoint(mirror.connection, 'down'))!.disabledAt).toBeNull();

    offsetMs = 5 * 86_400_000 + 60_000; // five days and a minute later, still failing
    const [second] = await insertChanges(mirror.connection, 1);
    running.notify();
    await waitFor(async () => (await loadEndpoint(mirror.connection, 'down'))?.disabledAt, 'the endpoint disabled');
    const state = (await loadEndpoint(mirror.connection, 'down'))!;
    // The event failing when it was disabled is held back (the cursor passes it): enable retries it first.
    expect(state).toMatchObject({ disabledKind: 'failing', deliveredSeq: second!.seq, failingSince });
    expect(await heldSeqs('down')).toEqual([second!.seq]);
    expect(state.disabledReason).toMatch(/^no 2xx for 5 days/);

    // The others receive the event (seq after the second change), signed like any other.
    await waitFor(() => witness.requests.length === 3, 'the witness to get both changes and the disabled event');
    const disabledEvent = JSON.parse(witness.requests.find((request) => seqOf(request) === second!.seq + 1)!.body) as { type: string; data: { seq: number; stream: string; record_id: string; record: Record<string, unknown> } };
    expect(disabledEvent).toMatchObject({
      type: 'webhook.endpoint_disabled',
      data: { seq: second!.seq + 1, stream: 'webhooks', record_id: 'down', record: { endpoint: 'down', url: down.url, kind: 'failing', failingSince } },
    });
    const attemptsWhenDisabled = down.requests.length;

    // Metrics: the disabled gauge by reason, the failed events gauge.
    const disabledGauge = await metrics.registry.getSingleMetric('bizops_webhook_endpoint_disabled')!.get();
    expect(disabledGauge.values).toEqual(
      expect.arrayContaining([
        { labels: { connection: 'default', endpoint: 'down', reason: 'failing' }, value: 1 },
        { labels: { connection: 'default', endpoint: 'witness', reason: 'none' }, value: 0 },
      ]),
    );
    const failedGauge = await metrics.registry.getSingleMetric('bizops_webhook_failed_events')!.get();
    expect(failedGauge.values).toEqual(expect.arrayContaining([{ labels: { connection: 'default', endpoint: 'down' }, value: 1 }]));

    // Nothing more is sent to it while disabled: once the witness has a later event, the disabled loop has had its turn.
    await insertChanges(mirror.connection, 1);
    running.notify();
    await waitFor(() => witness.requests.length === 4, 'the witness to get a later event');
    expect(down.requests).toHaveLength(attemptsWhenDisabled);

    // Enabled again (the receiver fixed): it resumes with the event that was failing, in order.
    down.handler = () => undefined;
    expect(await enableWebhookEndpoint(mirror.connection, 'down')).toMatchObject({ wasDisabled: true, deliveredSeq: second!.seq });
    await waitFor(async () => (await loadEndpoint(mirror.connection, 'down'))?.deliveredSeq === second!.seq + 2, 'down caught up');
    expect(down.requests.slice(attemptsWhenDisabled).map(seqOf)).toEqual([second!.seq, second!.seq + 1, second!.seq + 2]);
    expect(await loadEndpoint(mirror.connection, 'down')).toMatchObject({ disabledAt: null, disabledKind: null, failingSince: null });
    await expect(enableWebhookEndpoint(mirror.connection, 'nobody')).rejects.toThrow(/"nobody" is not registered/);
  });

  it("delivers only the event types the endpoint's filter selects and moves the cursor past the rest", async () => {
    const target = await receiver();
    const running = dispatcher({ endpoints: [endpoint('deals', target, ['deal.*', 'transaction.created'])] });
    await running.start();
    await insertChanges(mirror.connection, 12, { types: ['deal.won', 'onboarding.completed', 'transaction.created', 'transaction.updated'] });
    running.notify();
    await waitFor(async () => (await loadEndpoint(mirror.connection, 'deals'))?.deliveredSeq === 12, 'the cursor at the end');
    const types = target.requests.map((request) => (JSON.parse(request.body) as { type: string }).type);
    expect(types).toEqual(['deal.won', 'transaction.created', 'deal.won', 'transaction.created', 'deal.won', 'transaction.created']);
    expect(target.requests.map(seqOf)).toEqual([1, 3, 5, 7, 9, 11]);
  });

  it('replay re-sends from a seq with the same webhook-ids', async () => {
    const target = await receiver();
    const running = dispatcher({ endpoints: [endpoint('crm', target)] });
    await running.start();
    const events = await insertChanges(mirror.connection, 6);
    running.notify();
    await waitFor(async () => (await loadEndpoint(mirror.connection, 'crm'))?.deliveredSeq === 6, 'first delivery');
    expect(await replayWebhooks(mirror.connection, 'crm', 3)).toMatchObject({ previousDeliveredSeq: 6, deliveredSeq: 3, reenabled: false, eventsToResend: 3 });
    await waitFor(() => target.requests.length === 9, 'the replay');
    expect(target.ids.slice(6)).toEqual(events.slice(3).map((e) => e.eventId));
  });

  it('reports lag in events and seconds for an endpoint that is behind', async () => {
    const down = await receiver();
    down.handler = (_request, response) => void response.writeHead(503).end();
    const running = dispatcher({ endpoints: [endpoint('down', down)] });
    await running.start();
    const occurredAt = new Date(Date.now() - 90_000);
    await insertChanges(mirror.connection, 4, { occurredAt });
    running.notify();
    await waitFor(async () => ((await loadEndpoint(mirror.connection, 'down'))?.consecutiveFailures ?? 0) >= 1, 'a failed attempt recorded');
    // Measured at a given instant, so the figure does not depend on how long the test took.
    const [stats] = await running.stats(new Date(occurredAt.getTime() + 90_000));
    expect(stats).toMatchObject({ name: 'down', lagEvents: 4, enabled: true, lagSeconds: 90 });
    expect(stats!.consecutiveFailures).toBeGreaterThanOrEqual(1);
  });

  it('stop() while start() registers the endpoints: start() resolves without starting the loops, and the dispatcher stays stopped', async () => {
    const target = await receiver();
    const running = dispatcher({ endpoints: [endpoint('crm', target)] });
    const starting = running.start();
    await running.stop();
    await starting;
    // Had the loops started after stop(), the dispatcher would say "already running".
    await expect(running.start()).rejects.toThrow(/^WebhookDispatcher\.start: already stopped$/);
    expect(await loadEndpoint(mirror.connection, 'crm')).toMatchObject({ deliveredSeq: 0 });
  });

  it('refuses bad configuration with the field name', () => {
    const base = { name: 'crm', url: 'http://127.0.0.1:9/hooks', secret: newSecret(), events: ['*'] };
    expect(() => new WebhookDispatcher({ connection: mirror.connection, endpoints: [base, base] })).toThrow(/endpoint name "crm" appears twice/);
    expect(() => new WebhookDispatcher({ connection: mirror.connection, endpoints: [{ ...base, events: ['deal*'] }] })).toThrow(/webhooks\.crm\.events\[0\]/);
    expect(() => new WebhookDispatcher({ connection: mirror.connection, endpoints: [base], scheduleMs: [] })).toThrow(/^scheduleMs/);
    expect(() => new WebhookDispatcher({ connection: mirror.connection, endpoints: [base], pollMs: 0 })).toThrow(/^pollMs/);
  });
});

describe('WebhookDispatcher under the webhooks lease (fence)', () => {
  it('a dispatcher whose lease was taken over moves no cursor again: the event in flight may arrive once more, and its loop ends', async () => {
    const { logger, lines } = capturingLogger();
    const leases = new Leases(mirror.connection, 3600);
    const lease = (await leases.acquire(WEBHOOKS_LEASE, 'host-a:1:aa'))!.lease;
    const target = await receiver();
    const running = dispatcher({ endpoints: [endpoint('crm', target, ['*'], { ordering: 'endpoint' })], logger, fence: (tx) => confirmLease(tx, lease, 3600) });
    await running.start();
    const events = await insertChanges(mirror.connection, 5);
    // While the 2nd event is in flight, another process takes the lease over (ours had expired).
    target.handler = async (request) => {
      if (request.index !== 1) return;
      await mirror.connection.run("UPDATE leases SET expires_at = '2000-01-01T00:00:00.000Z' WHERE name = ?", [WEBHOOKS_LEASE]);
      await leases.acquire(WEBHOOKS_LEASE, 'host-b:2:bb');
    };
    running.notify();
    await waitFor(() => lines.some((line) => line.includes('webhook delivery stops: another process took over the webhooks lease')), 'the loop to end');
    // Delivered: events 1 and 2; the cursor moved past event 1 only (the 2nd's move was refused).
    expect(target.ids).toEqual([events[0]!.eventId, events[1]!.eventId]);
    expect((await loadEndpoint(mirror.connection, 'crm'))?.deliveredSeq).toBe(events[0]!.seq);
    expect(await leases.state(WEBHOOKS_LEASE)).toMatchObject({ holder: 'host-b:2:bb', fence: 2 });
  });
});
