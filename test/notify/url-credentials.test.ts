/**
 * A webhook URL carrying credentials (`https://user:password@host/path?token=...`): delivery uses the
 * whole URL (the query as configured, the user and password as Basic authentication), while the
 * mirror's `webhook_endpoints.url`, `webhooks list --json` (`listWebhookEndpoints`), the kept
 * attempts (a receiver's answer echoing the token, a redirect's Location) and the configuration's
 * printed form hold it masked; a rotated credential is the same endpoint (its state kept), another
 * path a new one. Real receivers over HTTP, both back ends.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { deploymentSecrets, maskConfig } from '../../src/config/load.ts';
import { configSchema } from '../../src/config/schema.ts';
import { maskUrlCredentials, urlCredentials } from '../../src/logging/mask-url.ts';
import { maskSecrets } from '../../src/logging/mask.ts';
import { listWebhookEndpoints } from '../../src/notify/webhooks/admin.ts';
import { latestAttempts } from '../../src/notify/delivery/attempts.ts';
import { WebhookDispatcher } from '../../src/notify/webhooks/dispatcher.ts';
import { loadEndpoint } from '../../src/notify/delivery/endpoint-store.ts';
import { waitFor } from '../helpers.ts';
import { insertChanges, newSecret, receiverFixture, tempMirror, type TempMirror } from './helpers.ts';

const TOKEN = 'tok_live_5f2b9c8e71d04a6b';
const PASSWORD = 'hook-pass-93e1c7';

let mirror: TempMirror;
const receiver = receiverFixture();
const dispatchers: WebhookDispatcher[] = [];
beforeEach(async () => {
  mirror = await tempMirror();
});
afterEach(async () => {
  await Promise.all(dispatchers.splice(0).map((running) => running.stop()));
  await mirror.cleanup();
});

async function started(url: string, secret: string): Promise<WebhookDispatcher> {
  const running = new WebhookDispatcher({ connection: mirror.connection, endpoints: [{ name: 'crm', url, secret, events: ['*'] }], pollMs: 30, scheduleMs: [0, 20], maxAttempts: 1000, jitterRatio: 0, timeoutMs: 2000, stopGraceMs: 100 });
  dispatchers.push(running);
  await running.start();
  return running;
}

describe('maskUrlCredentials', () => {
  it('masks the user, the password, every query value and the fragment; keeps what names the receiver', () => {
    expect(maskUrlCredentials(`https://bot:${PASSWORD}@hooks.example:8443/in/crm?token=${TOKEN}&channel=ops#k`)).toBe('https://***:***@hooks.example:8443/in/crm?token=***&channel=***#***');
    expect(maskUrlCredentials('https://hooks.example/in')).toBe('https://hooks.example/in');
    expect(maskUrlCredentials(maskUrlCredentials(`https://bot:${PASSWORD}@hooks.example/in?token=${TOKEN}`))).toBe('https://***:***@hooks.example/in?token=***');
    expect(maskUrlCredentials(`not a url://x:${PASSWORD}@h/p?token=${TOKEN}`)).not.toMatch(new RegExp(`${PASSWORD}|${TOKEN}`));
    expect(urlCredentials('https://hooks.example/in')).toEqual([]);
    expect(urlCredentials(`https://bot:${PASSWORD}@hooks.example/in?token=${TOKEN}&x=1`)).toEqual(expect.arrayContaining([PASSWORD, TOKEN]));
  });

  it('config check output and every log or error line mask a webhook URL credential', () => {
    const config = configSchema.parse({ baseUrl: 'http://127.0.0.1:9', tokens: { default: 'tok_default_0000' }, webhooks: [{ name: 'crm', url: `https://bot:${PASSWORD}@hooks.example/in?token=${TOKEN}`, secret: newSecret(), events: ['*'] }] });
    const shown = JSON.stringify(maskConfig(config));
    expect(shown).toContain('"url":"https://***:***@hooks.example/in?token=***"');
    expect(shown).not.toMatch(new RegExp(`${PASSWORD}|${TOKEN}`));
    const line = maskSecrets(`POST https://hooks.example/in?token=${TOKEN} failed; retrying with ${PASSWORD}`, deploymentSecrets([config]));
    expect(line).not.toMatch(new RegExp(`${PASSWORD}|${TOKEN}`));
  });
});

describe('a webhook endpoint whose URL holds credentials', () => {
  it('is delivered to with them; stored, listed and its attempts kept without them', async () => {
    const target = await receiver();
    // The first answers carry the token (a redirect's Location, a body echoing it): what is kept of them must not.
    let delivered = 0;
    target.handler = (request, response) => {
      if (request.index === 0) response.writeHead(302, { location: `${target.url}?token=${TOKEN}` }).end();
      else if (request.index === 1) response.writeHead(401).end(`unknown token ${TOKEN}`);
      else {
        delivered += 1;
        return;
      }
      return 'handled';
    };
    const url = `http://bot:${PASSWORD}@127.0.0.1:${target.port}/hooks?token=${TOKEN}&channel=ops`;
    await started(url, newSecret());
    await insertChanges(mirror.connection, 2);
    await waitFor(() => delivered === 2, 'both events delivered after two refusals');

    // Delivery used the whole URL: the query as configured, the user and password as Basic authentication.
    for (const request of target.requests) {
      expect(request.url).toBe(`/hooks?token=${TOKEN}&channel=ops`);
      expect(request.headers.authorization).toBe(`Basic ${Buffer.from(`bot:${PASSWORD}`).toString('base64')}`);
    }
    const secret = new RegExp(`${PASSWORD}|${TOKEN}`);
    const stored = await mirror.connection.all<{ url: string }>('SELECT url FROM webhook_endpoints');
    expect(stored).toEqual([{ url: `http://***:***@127.0.0.1:${target.port}/hooks?token=***&channel=***` }]);
    const listing = JSON.stringify(await listWebhookEndpoints(mirror.connection, { webhooks: [{ name: 'crm', url, secret: newSecret(), events: ['*'] }] }, { attempts: 10 }));
    expect(listing).toContain('"url":"http://***:***@127.0.0.1:');
    expect(listing).not.toMatch(secret);
    const attempts = await latestAttempts(mirror.connection, 'crm', 10);
    expect(attempts.find((attempt) => attempt.status === 302)).toMatchObject({ error: expect.stringContaining('?token=[redacted]') });
    expect(attempts.find((attempt) => attempt.status === 401)).toMatchObject({ response: 'unknown token [redacted]' });
    expect(JSON.stringify(attempts)).not.toMatch(secret);
    expect(JSON.stringify(await mirror.connection.all('SELECT * FROM webhook_endpoints'))).not.toMatch(secret);
  });

  it('keeps its identity when the credential changes (a disabled endpoint stays disabled); another path is a new receiver', async () => {
    const target = await receiver();
    target.handler = (_request, response) => {
      response.writeHead(410).end();
      return 'handled';
    };
    const secret = newSecret();
    let running = await started(`${target.url}?token=${TOKEN}`, secret);
    await insertChanges(mirror.connection, 1);
    await waitFor(async () => (await loadEndpoint(mirror.connection, 'crm'))?.disabledAt != null, 'the endpoint disabled by 410 Gone');
    await running.stop();

    // The token rotated: same receiver, still disabled, cursor kept.
    const before = (await loadEndpoint(mirror.connection, 'crm'))!;
    running = await started(`${target.url}?token=tok_rotated_77aa01bc9e`, secret);
    expect(await loadEndpoint(mirror.connection, 'crm')).toMatchObject({ disabledAt: before.disabledAt, deliveredSeq: before.deliveredSeq, url: `${target.url}?token=***` });
    await running.stop();

    // A row still holding a full URL loses it at start, its state kept.
    await mirror.connection.run('UPDATE webhook_endpoints SET url = ? WHERE name = ?', [`${target.url}?token=${TOKEN}`, 'crm']);
    running = await started(`${target.url}?token=${TOKEN}`, secret);
    expect(await loadEndpoint(mirror.connection, 'crm')).toMatchObject({ disabledAt: before.disabledAt, url: `${target.url}?token=***` });
    await running.stop();

    // Another path: a new receiver, enabled again.
    await started(`http://127.0.0.1:${target.port}/other?token=${TOKEN}`, secret);
    expect(await loadEndpoint(mirror.connection, 'crm')).toMatchObject({ disabledAt: null, url: `http://127.0.0.1:${target.port}/other?token=***` });
  });
});
