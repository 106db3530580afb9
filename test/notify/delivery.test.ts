import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { deliverWebhook } from '../../src/notify/webhooks/delivery.ts';
import { DEFAULT_PROBE_INTERVALS, nextRetryDelayMs, probeDelayMs, STANDARD_RETRY_SCHEDULE_MS, type WebhookRetrySchedule } from '../../src/notify/delivery/retry-schedule.ts';
import { buildWebhookMessage, WebhookSigner } from '../../src/notify/webhooks/signing.ts';
import { newSecret, Receiver } from './helpers.ts';

const message = buildWebhookMessage({
  seq: 7,
  eventId: 'evt_delivery',
  type: 'transaction.created',
  stream: 'transactions',
  recordId: 'txn_1',
  occurredAt: '2025-03-01T10:00:00.000Z',
  data: { record: { id: 'txn_1', amount: 1250 }, changes: {} },
});

const receivers: Receiver[] = [];
async function receiver(): Promise<Receiver> {
  const started = await new Receiver().start();
  receivers.push(started);
  return started;
}
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});

describe('deliverWebhook', () => {
  it('POSTs the signed body; a 2xx is success and the receiver can verify it', async () => {
    const secret = newSecret();
    const target = await receiver();
    target.handler = (_request, response) => void response.writeHead(200).end('ok');
    const outcome = await deliverWebhook(target.url, message, new WebhookSigner(secret));
    expect(outcome).toMatchObject({ ok: true, status: 200 });
    const [request] = target.requests;
    expect(request?.method).toBe('POST');
    expect(request?.headers['content-type']).toBe('application/json');
    expect(request?.body).toBe(message.body);
    expect(new Webhook(secret).verify(request!.body, request!.headers as Record<string, string>)).toMatchObject({ type: 'transaction.created' });
  });

  it('does not follow a 302: the redirect target gets nothing and the attempt fails', async () => {
    const target = await receiver();
    const redirecting = await receiver();
    redirecting.handler = (_request, response) => void response.writeHead(302, { location: target.url }).end();
    const outcome = await deliverWebhook(redirecting.url, message, new WebhookSigner(newSecret()));
    expect(outcome).toMatchObject({ ok: false, status: 302, gone: false });
    expect(!outcome.ok && outcome.error).toMatch(/redirect 302 not followed/);
    expect(target.requests).toHaveLength(0);
  });

  it('410 Gone is reported as gone; 503 carries Retry-After; 400 is a plain failure', async () => {
    const target = await receiver();
    const signer = new WebhookSigner(newSecret());
    target.handler = (_request, response) => void response.writeHead(410).end();
    expect(await deliverWebhook(target.url, message, signer)).toMatchObject({ ok: false, status: 410, gone: true });
    target.handler = (_request, response) => void response.writeHead(503, { 'retry-after': '7' }).end();
    expect(await deliverWebhook(target.url, message, signer)).toMatchObject({ ok: false, status: 503, gone: false, retryAfterMs: 7000 });
    target.handler = (_request, response) => void response.writeHead(400).end('bad');
    expect(await deliverWebhook(target.url, message, signer)).toMatchObject({ ok: false, status: 400, gone: false, retryAfterMs: null });
  });

  it('times out a receiver that never answers', async () => {
    const target = await receiver();
    target.handler = () => 'handled'; // never answers
    const outcome = await deliverWebhook(target.url, message, new WebhookSigner(newSecret()), { timeoutMs: 200 });
    expect(outcome).toMatchObject({ ok: false, status: null, aborted: false });
    expect(!outcome.ok && outcome.error).toMatch(/timed out after 200 ms/);
  });

  it('reports a refused connection, and an abort as aborted', async () => {
    const target = await receiver();
    const url = target.url;
    await target.close();
    const refused = await deliverWebhook(url, message, new WebhookSigner(newSecret()));
    expect(refused).toMatchObject({ ok: false, status: null, aborted: false });
    expect(!refused.ok && refused.error).toMatch(/ECONNREFUSED/);

    const hanging = await receiver();
    hanging.handler = () => 'handled';
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const aborted = await deliverWebhook(hanging.url, message, new WebhookSigner(newSecret()), { signal: controller.signal });
    expect(aborted).toMatchObject({ ok: false, aborted: true });
  });
});

describe('retry schedule', () => {
  const schedule: WebhookRetrySchedule = { scheduleMs: STANDARD_RETRY_SCHEDULE_MS, jitterRatio: 0, maxRetryAfterMs: 86_400_000, random: () => 0.5 };

  it('follows the Standard Webhooks schedule and keeps the last interval once exhausted', () => {
    const delays = [1, 2, 3, 4, 5, 6, 7, 8, 20].map((failures) => nextRetryDelayMs(failures, null, schedule));
    expect(delays).toEqual([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000, 36_000_000, 36_000_000]);
  });

  it('jitters within ± jitterRatio', () => {
    const low = nextRetryDelayMs(1, null, { ...schedule, jitterRatio: 0.1, random: () => 0 });
    const high = nextRetryDelayMs(1, null, { ...schedule, jitterRatio: 0.1, random: () => 0.999999 });
    expect(low).toBe(4_500);
    expect(high).toBeGreaterThan(5_400);
    expect(high).toBeLessThanOrEqual(5_500);
  });

  it('takes the longer of the schedule and Retry-After, capped', () => {
    expect(nextRetryDelayMs(1, 60_000, schedule)).toBe(60_000);
    expect(nextRetryDelayMs(3, 60_000, schedule)).toBe(1_800_000);
    expect(nextRetryDelayMs(1, 10 * 86_400_000, schedule)).toBe(86_400_000);
  });

  it('pauses a target taken for down by how long it has been failing, 5 s to 30 s, whatever number of attempts failed', () => {
    const minute = 60_000;
    const pauses = [0, 30_000, minute, 5 * minute, 2 * 3_600_000, 5 * 86_400_000].map((failingFor) => probeDelayMs(failingFor, null, DEFAULT_PROBE_INTERVALS, schedule));
    expect(pauses).toEqual([5_000, 5_000, 6_000, 30_000, 30_000, 30_000]);
    // A Retry-After stretches the pause to at most a minute: a deploy answering 503 with Retry-After: 3600 is served again within it.
    expect(probeDelayMs(minute, 3_600_000, DEFAULT_PROBE_INTERVALS, schedule)).toBe(60_000);
    expect(probeDelayMs(5 * minute, 10_000, DEFAULT_PROBE_INTERVALS, schedule)).toBe(30_000);
  });
});
