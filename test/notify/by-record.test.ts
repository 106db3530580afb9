/**
 * Delivery by record (docs/webhooks.md "Ordering"): several requests in flight per endpoint, the
 * events of one record in changelog order and never overtaking each other, a failing event holding
 * back only the later events of its own record; strict per-endpoint order as an option. Real
 * receivers on port 0; every assertion is on counts and order, none on time.
 */
import type { ServerResponse } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { WebhookEndpointConfig } from '../../src/config/schema.ts';
import { MirrorStore, type AppendedChange } from '../../src/mirror/mirror-store.ts';
import { enableWebhookEndpoint, retryTargetNow } from '../../src/notify/delivery/target-admin.ts';
import { STANDARD_RETRY_SCHEDULE_MS } from '../../src/notify/delivery/retry-schedule.ts';
import { listAttemptsOfEvent } from '../../src/notify/delivery/attempts.ts';
import { WebhookDispatcher, type WebhookDispatcherOptions } from '../../src/notify/webhooks/dispatcher.ts';
import { loadEndpoint } from '../../src/notify/delivery/endpoint-store.ts';
import { STALL_AFTER_FAILURES } from '../../src/notify/delivery/sink-delivery.ts';
import { loadHeldEvents } from '../../src/notify/delivery/held-events.ts';
import { waitFor } from '../helpers.ts';
import { newSecret, receiverFixture, seqOf, tempMirror, type ReceivedRequest, type Receiver, type TempMirror } from './helpers.ts';

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

/** A dispatcher with time scaled down: poll 30 ms, first retry after 20 ms, later ones after an hour (never, in a test). */
async function start(endpoint: WebhookEndpointConfig, options: Partial<WebhookDispatcherOptions> = {}): Promise<WebhookDispatcher> {
  const created = new WebhookDispatcher({ connection: mirror.connection, endpoints: [endpoint], pollMs: 30, scheduleMs: [0, 20, 3_600_000], maxAttempts: 8, jitterRatio: 0, timeoutMs: 5000, stopGraceMs: 100, ...options });
  dispatchers.push(created);
  await created.start();
  return created;
}

/** Appends one `deal.updated` change per record id, in the order given (as the sync would). */
async function appendFor(recordIds: readonly string[]): Promise<AppendedChange[]> {
  const store = new MirrorStore(mirror.connection);
  return store.transaction((tx) =>
    tx.appendChanges(recordIds.map((id, index) => ({ type: 'deal.updated', stream: 'deals', recordId: id, data: { record: { id, n: index }, changes: { n: { old: null, new: index } } } }))),
  );
}

function recordOf(request: ReceivedRequest): string {
  return (JSON.parse(request.body) as { data: { record_id: string } }).data.record_id;
}

describe('delivery by record', () => {
  it('keeps up to maxInFlight requests open at once: a receiver that answers only once 8 are open gets every event', async () => {
    const target = await receiver();
    const waiting: ServerResponse[] = [];
    let open = 0;
    let mostOpen = 0;
    let released = false;
    target.handler = (_request, response) => {
      open += 1;
      mostOpen = Math.max(mostOpen, open);
      response.on('finish', () => (open -= 1));
      if (released) return;
      waiting.push(response);
      if (waiting.length === 8) {
        released = true;
        for (const held of waiting.splice(0)) held.writeHead(204).end();
      }
      return 'handled';
    };
    await start({ name: 'crm', url: target.url, secret: newSecret(), events: ['*'], maxInFlight: 8 });
    const events = await appendFor(Array.from({ length: 24 }, (_, index) => `deal_${index}`));
    await waitFor(async () => (await loadEndpoint(mirror.connection, 'crm'))?.deliveredSeq === events.at(-1)!.seq, 'every event delivered');
    expect(released).toBe(true);
    expect(mostOpen).toBe(8); // never more than maxInFlight
    expect(new Set(target.ids).size).toBe(24);
  });

  it('delivers the events of one record in changelog order, one at a time, while records go side by side', async () => {
    const target = await receiver();
    const openByRecord = new Map<string, number>();
    let overlapping = 0;
    target.handler = async (request, response) => {
      const record = recordOf(request);
      const open = (openByRecord.get(record) ?? 0) + 1;
      openByRecord.set(record, open);
      if (open > 1) overlapping += 1;
      // Answers come back in a shuffled order (no time is asserted).
      await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 8)));
      openByRecord.set(record, openByRecord.get(record)! - 1);
      response.writeHead(204).end();
      return 'handled' as const;
    };
    await start({ name: 'crm', url: target.url, secret: newSecret(), events: ['*'] });
    // Five records, six changes each, interleaved in the changelog.
    const order = Array.from({ length: 30 }, (_, index) => `deal_${index % 5}`);
    const events = await appendFor(order);
    await waitFor(() => target.requests.length === 30, 'every event delivered');
    expect(overlapping).toBe(0);
    for (const record of new Set(order)) {
      const arrived = target.requests.filter((request) => recordOf(request) === record).map(seqOf);
      expect(arrived).toEqual(events.filter((event) => event.recordId === record).map((event) => event.seq));
    }
  });

  it('an event the receiver rejects (422) holds back only the later events of its own record; enabling after the fix sends them in order', async () => {
    const target = await receiver();
    let rejecting = true;
    target.handler = (request, response) => {
      if (rejecting && recordOf(request) === 'deal_poison') response.writeHead(422, { 'content-type': 'application/json' }).end('{"error":"cannot process this deal"}');
    };
    const endpoint: WebhookEndpointConfig = { name: 'crm', url: target.url, secret: newSecret(), events: ['*'] };
    await start(endpoint);
    const order = ['deal_poison', 'deal_a', 'deal_b', 'deal_poison', 'deal_a', 'deal_c', 'deal_poison', 'deal_b', 'deal_a', 'deal_c'];
    const events = await appendFor(order);
    const poison = events.filter((event) => event.recordId === 'deal_poison');
    const others = events.filter((event) => event.recordId !== 'deal_poison');

    // Every other record's events arrive, though the poisoned one keeps failing (its next retry is an hour away).
    await waitFor(() => others.every((event) => target.ids.includes(event.eventId)), "the other records' events");
    await waitFor(async () => (await loadEndpoint(mirror.connection, 'crm'))?.deliveredSeq === events.at(-1)!.seq, 'the cursor past the held events');
    await waitFor(async () => (await loadHeldEvents(mirror.connection, 'crm'))[0]?.attempts === 2, "the schedule's first retry");
    expect((await loadHeldEvents(mirror.connection, 'crm')).map((held) => [held.seq, held.attempts])).toEqual([
      [poison[0]!.seq, 2],
      [poison[1]!.seq, 0],
      [poison[2]!.seq, 0],
    ]);
    // Only the first poisoned event was sent (twice: the schedule's first retry); the later ones waited behind it.
    expect(target.ids.filter((id) => poison.some((event) => event.eventId === id))).toEqual([poison[0]!.eventId, poison[0]!.eventId]);
    // Each attempt is kept, with the answer's status and first bytes.
    expect(await listAttemptsOfEvent(mirror.connection, poison[0]!.eventId)).toMatchObject([
      { endpoint: 'crm', attempt: 1, outcome: 'failed', status: 422, error: 'HTTP 422', response: '{"error":"cannot process this deal"}' },
      { endpoint: 'crm', attempt: 2, outcome: 'failed', status: 422, response: '{"error":"cannot process this deal"}' },
    ]);

    // The receiver is fixed; `webhooks enable` makes the held events due at once: the record's three, in order.
    rejecting = false;
    await enableWebhookEndpoint(mirror.connection, 'crm');
    await waitFor(async () => (await loadHeldEvents(mirror.connection, 'crm')).length === 0, 'the held events delivered');
    const poisonArrivals = target.requests.filter((request) => recordOf(request) === 'deal_poison').map(seqOf);
    expect(poisonArrivals).toEqual([poison[0]!.seq, poison[0]!.seq, poison[0]!.seq, poison[1]!.seq, poison[2]!.seq]);
    expect(await loadEndpoint(mirror.connection, 'crm')).toMatchObject({ consecutiveFailures: 0, failingSince: null, deliveredCount: 10, failedCount: 2 });
  });

  it('with ordering "endpoint" a rejected event holds back every later one, and one request at a time', async () => {
    const target = await receiver();
    let rejecting = true;
    target.handler = (request, response) => {
      if (rejecting && recordOf(request) === 'deal_poison') response.writeHead(422).end();
    };
    const endpoint: WebhookEndpointConfig = { name: 'strict', url: target.url, secret: newSecret(), events: ['*'], ordering: 'endpoint', maxInFlight: 16 };
    await start(endpoint, { scheduleMs: [0, 20, 40, 3_600_000] });
    const events = await appendFor(['deal_a', 'deal_poison', 'deal_b', 'deal_c']);
    await waitFor(async () => (await loadHeldEvents(mirror.connection, 'strict'))[0]?.attempts === 3, 'three attempts of the rejected event');
    expect(target.requests.map(seqOf)).toEqual([events[0]!.seq, events[1]!.seq, events[1]!.seq, events[1]!.seq]);

    rejecting = false;
    await enableWebhookEndpoint(mirror.connection, 'strict');
    await waitFor(() => target.requests.length === 7, 'the rest, in order');
    expect(target.requests.map(seqOf)).toEqual([1, 2, 2, 2, 2, 3, 4].map((n) => events[n - 1]!.seq));
  });

  it('an endpoint refusing every request pauses new events after a streak of failures instead of holding back the whole changelog', async () => {
    const down: Receiver = await receiver();
    down.handler = (_request, response) => void response.writeHead(503).end();
    await start({ name: 'down', url: down.url, secret: newSecret(), events: ['*'], maxInFlight: 4 }, { scheduleMs: [0, 3_600_000] });
    const events = await appendFor(Array.from({ length: 40 }, (_, index) => `deal_${index}`));
    // Settled: a streak of five or more, every request's event held back (none retried: the next retry is an hour away).
    await waitFor(
      async () => ((await loadEndpoint(mirror.connection, 'down'))?.consecutiveFailures ?? 0) >= 5 && (await loadHeldEvents(mirror.connection, 'down')).length === down.requests.length,
      'a streak of five failures, each held back',
    );
    const state = (await loadEndpoint(mirror.connection, 'down'))!;
    expect(state.nextAttemptAt).not.toBeNull(); // paused until the streak's retry time (an hour away)
    // At most the streak and the requests in flight when it reached five are held back; the rest wait after the cursor.
    const held = await loadHeldEvents(mirror.connection, 'down');
    expect(held.length).toBeLessThanOrEqual(STALL_AFTER_FAILURES + 4);
    expect(state.deliveredSeq).toBeLessThan(events.at(-1)!.seq);
  });

  it('a receiver down for five minutes, then back, gets new events within 60 s without a command: the pause follows how long it failed, not how many held retries failed', async () => {
    const target = await receiver();
    let down = true;
    const delivered = new Set<string>();
    target.handler = (request, response) => {
      if (down) response.writeHead(503).end();
      else delivered.add(String(request.headers['webhook-id']));
    };
    // The production schedule (5 s, 5 min, 30 min, ... per event) on a clock the test moves.
    let offsetMs = 0;
    const now = () => new Date(Date.now() + offsetMs);
    const stored = async () => (await loadEndpoint(mirror.connection, 'deploying'))!;
    await start({ name: 'deploying', url: target.url, secret: newSecret(), events: ['*'], maxInFlight: 4 }, { scheduleMs: STANDARD_RETRY_SCHEDULE_MS, now });
    const before = await appendFor(Array.from({ length: 8 }, (_, index) => `deal_${index}`));
    await waitFor(async () => (await stored()).consecutiveFailures >= STALL_AFTER_FAILURES, 'taken for down');
    // Five minutes of failure while changes go on: each time the pause ends the clock jumps there, and a probe
    // (a held event whose retry is due, or the new one) fails again. Every failed probe counts in the streak;
    // the pause must not grow with it.
    const failingSince = Date.parse((await stored()).failingSince!);
    while (now().getTime() - failingSince < 5 * 60_000) {
      const state = await stored();
      before.push(...(await appendFor([`deal_${before.length}`])));
      offsetMs += Math.max(0, Date.parse(state.nextAttemptAt!) - now().getTime()) + 1;
      await waitFor(async () => (await stored()).lastAttemptAt! > state.lastAttemptAt!, 'a probe after the pause');
    }
    const longDown = await stored();
    expect(longDown.consecutiveFailures).toBeGreaterThan(STALL_AFTER_FAILURES + 3);
    expect(Date.parse(longDown.nextAttemptAt!) - Date.parse(longDown.lastAttemptAt!)).toBeLessThanOrEqual(33_000); // 30 s ± jitter

    // Back. Sixty seconds later (on its clock) it has the new event and every held one, with no command run.
    down = false;
    const [fresh] = await appendFor(['deal_new']);
    offsetMs += 60_000;
    await waitFor(() => target.ids.includes(fresh!.eventId), 'the new event, within 60 s of the receiver answering again');
    await waitFor(async () => (await loadHeldEvents(mirror.connection, 'deploying')).length === 0 && (await stored()).deliveredSeq === fresh!.seq, 'every held event delivered');
    for (const event of [...before, fresh!]) expect(delivered.has(event.eventId)).toBe(true);
    expect((await stored()).consecutiveFailures).toBe(0);
  });

  it('retry now (webhooks retry, the console) ends a long pause at once, even over a failure written after it: the next event goes out as a probe', async () => {
    const target = await receiver();
    let down = true;
    let late: ServerResponse | undefined;
    target.handler = (request, response) => {
      if (!down) return;
      // The last record's first request is answered only after retry now was asked: its failure is written after it.
      if (recordOf(request) === 'deal_5' && !late) {
        late = response;
        return 'handled';
      }
      response.writeHead(503, { 'retry-after': '3600' }).end();
    };
    const stored = async () => (await loadEndpoint(mirror.connection, 'crm'))!;
    await start({ name: 'crm', url: target.url, secret: newSecret(), events: ['*'], maxInFlight: 6 }, { scheduleMs: STANDARD_RETRY_SCHEDULE_MS });
    await appendFor(Array.from({ length: 6 }, (_, index) => `deal_${index}`));
    await waitFor(async () => late !== undefined && (await stored()).consecutiveFailures === STALL_AFTER_FAILURES && (await stored()).nextAttemptAt !== null, 'paused, one request still open');
    const paused = await stored();
    expect(Date.parse(paused.nextAttemptAt!) - Date.now()).toBeGreaterThan(20_000); // the Retry-After keeps it a while
    down = false;
    const result = await retryTargetNow(mirror.connection, 'crm');
    expect(result).toMatchObject({ name: 'crm', pausedUntil: paused.nextAttemptAt, consecutiveFailures: STALL_AFTER_FAILURES });
    late!.writeHead(503, { 'retry-after': '3600' }).end(); // a failure after the retry was asked must not pause it again
    await waitFor(async () => (await stored()).consecutiveFailures === 0 && (await loadHeldEvents(mirror.connection, 'crm')).length === 0, 'delivered after retry now');
    await expect(retryTargetNow(mirror.connection, 'nobody')).rejects.toThrow(/"nobody" is not registered/);
  });
});
