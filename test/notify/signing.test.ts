import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import type { ChangeEvent } from '../../src/notify/changelog-reader.ts';
import { buildTestWebhookMessage, buildWebhookMessage, signerForEndpoint, WebhookSigner } from '../../src/notify/webhooks/signing.ts';
import { newSecret } from './helpers.ts';

const event: ChangeEvent = {
  seq: 42,
  eventId: 'evt_0b7c',
  type: 'deal.won',
  stream: 'deals',
  recordId: 'deal_1',
  occurredAt: '2025-03-01T10:00:00.000Z',
  data: { record: { id: 'deal_1', status: 'WON' }, changes: { status: { old: 'OPEN', new: 'WON' } } },
};

describe('webhook signing (Standard Webhooks)', () => {
  it('builds the Standard Webhooks payload with the event_id as webhook-id', () => {
    const message = buildWebhookMessage(event);
    expect(message.id).toBe('evt_0b7c');
    expect(JSON.parse(message.body)).toEqual({
      type: 'deal.won',
      timestamp: '2025-03-01T10:00:00.000Z',
      data: { seq: 42, stream: 'deals', record_id: 'deal_1', record: { id: 'deal_1', status: 'WON' }, changes: { status: { old: 'OPEN', new: 'WON' } } },
    });
  });

  it('produces headers that the standardwebhooks library verifies', () => {
    const secret = newSecret();
    const message = buildWebhookMessage(event);
    const signedAt = new Date();
    const headers = new WebhookSigner(secret).sign(message, signedAt);
    expect(headers['content-type']).toBe('application/json');
    expect(headers['webhook-id']).toBe(event.eventId);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    // The signing time in whole seconds (compared with the time given, not a later clock reading).
    expect(Number(headers['webhook-timestamp'])).toBe(Math.floor(signedAt.getTime() / 1000));
    const payload = new Webhook(secret).verify(message.body, headers);
    expect(payload).toEqual(JSON.parse(message.body));
  });

  it('a tampered body, a wrong secret or a stale timestamp fails verification', () => {
    const secret = newSecret();
    const message = buildWebhookMessage(event);
    const signer = new WebhookSigner(secret);
    const headers = signer.sign(message, new Date());
    const tampered = message.body.replace('"WON"', '"LOST"');
    expect(() => new Webhook(secret).verify(tampered, headers)).toThrow(WebhookVerificationError);
    expect(() => new Webhook(newSecret()).verify(message.body, headers)).toThrow(WebhookVerificationError);

    const sixMinutesAgo = new Date(Date.now() - 6 * 60_000);
    const stale = signer.sign(message, sixMinutesAgo);
    expect(() => new Webhook(secret).verify(message.body, stale)).toThrow(/too old/);
    // Four minutes is within the 5-minute tolerance.
    const recent = signer.sign(message, new Date(Date.now() - 4 * 60_000));
    expect(new Webhook(secret).verify(message.body, recent)).toBeTruthy();
  });

  it('retries keep the same id and body; only timestamp and signature change', () => {
    const signer = new WebhookSigner(newSecret());
    const message = buildWebhookMessage(event);
    const first = signer.sign(message, new Date(Date.now() - 10_000));
    const second = signer.sign(buildWebhookMessage(event), new Date());
    expect(second['webhook-id']).toBe(first['webhook-id']);
    expect(second['webhook-timestamp']).not.toBe(first['webhook-timestamp']);
    expect(second['webhook-signature']).not.toBe(first['webhook-signature']);
  });

  it('a bad secret is refused with the endpoint name and without the secret', () => {
    expect(() => new WebhookSigner('whsec_', 'crm')).toThrow(/webhooks\.crm\.secret/);
    try {
      new WebhookSigner('whsec_not*base64!', 'crm');
      expect.unreachable();
    } catch (error) {
      expect((error as Error).message).toMatch(/webhooks\.crm\.secret/);
      expect((error as Error).message).not.toContain('not*base64');
    }
  });

  it('secret rotation: until the previous secret expires both signatures are sent and a receiver with either secret verifies; after, only the new one', () => {
    const secret = newSecret();
    const previousSecret = newSecret();
    const expiresAt = new Date(Date.now() + 60_000);
    const signer = signerForEndpoint({ name: 'crm', secret, previousSecret, previousSecretExpiresAt: expiresAt.toISOString() });
    const message = buildWebhookMessage(event);

    const during = signer.sign(message, new Date());
    expect(during['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=* v1,[A-Za-z0-9+/]+=*$/);
    expect(new Webhook(secret).verify(message.body, during)).toEqual(JSON.parse(message.body));
    expect(new Webhook(previousSecret).verify(message.body, during)).toEqual(JSON.parse(message.body));
    expect(() => new Webhook(newSecret()).verify(message.body, during)).toThrow(WebhookVerificationError);

    // Signed at the expiry instant (verification allows 5 minutes of skew, so 1 minute later still verifies the time).
    const after = signer.sign(message, expiresAt);
    expect(after['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(new Webhook(secret).verify(message.body, after)).toBeTruthy();
    expect(() => new Webhook(previousSecret).verify(message.body, after)).toThrow(WebhookVerificationError);
  });

  it('test messages are webhook.test with a fresh id', () => {
    const a = buildTestWebhookMessage('crm');
    const b = buildTestWebhookMessage('crm');
    expect(a.id).not.toBe(b.id);
    expect(JSON.parse(a.body)).toMatchObject({ type: 'webhook.test', data: { endpoint: 'crm' } });
  });
});
