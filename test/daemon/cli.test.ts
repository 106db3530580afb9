/**
 * `bizops-sync config check` and `bizops-sync webhooks list|send-test|replay|enable|retry`, as real processes.
 */
import { writeFileSync } from 'node:fs';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { openMirror } from '../../src/mirror/database.ts';
import { sqliteConnection } from '../../src/mirror/sql/sqlite.ts';
import { MirrorStore } from '../../src/mirror/mirror-store.ts';
import { STREAM_NAMES } from '../../src/streams/definitions.ts';
import { disableEndpoint, registerEndpoint, resetCursor } from '../../src/notify/delivery/endpoint-store.ts';
import { insertFailedDelivery } from '../../src/notify/delivery/failed-deliveries.ts';
import { runCli, tempDir, type TempDir } from '../helpers.ts';
import { cliEnv, newWebhookSecret, WebhookReceiver } from './helpers.ts';

let dir: TempDir | undefined;
let receiver: WebhookReceiver | undefined;

afterEach(async () => {
  await receiver?.close();
  dir?.remove();
  dir = receiver = undefined;
});

const TOKEN = 'live-token-0123456789abcdef';

describe('bizops-sync config check', { timeout: 120_000 }, () => {
  it('prints the effective configuration as JSON with every secret masked, exit 0', async () => {
    dir = tempDir();
    const secret = newWebhookSecret();
    const result = await runCli(['config', 'check'], {
      ...cliEnv({
        BIZOPS_BASE_URL: 'https://api.example.com/',
        BIZOPS_TOKEN: TOKEN,
        BIZOPS_WEBHOOK_URL: 'https://hooks.example.com/in',
        BIZOPS_WEBHOOK_SECRET: secret,
        BIZOPS_WRITE_API_KEY: 'write-key-0123456789abcdef',
        REDIS_URL: 'redis://default:redis-password-42@redis:6379',
        BIZOPS_DB: dir.file('mirror.db'),
        BIZOPS_SCHEDULE: '*/5 * * * * *',
        BIZOPS_HTTP_PORT: '9100',
      }),
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    for (const hidden of [TOKEN, secret, secret.slice(6), 'write-key-0123456789abcdef', 'redis-password-42']) expect(result.stdout).not.toContain(hidden);
    const effective = JSON.parse(result.stdout) as unknown;
    expect(effective).toMatchObject({
      baseUrl: 'https://api.example.com',
      tokens: { default: '***' },
      redisUrl: 'redis://default:***@redis:6379',
      dbPath: dir.file('mirror.db'),
      sync: { schedule: '*/5 * * * * *', reconcileSchedule: '0 17 */6 * * *', streams: [...STREAM_NAMES] },
      http: { host: '127.0.0.1', port: 9100, readinessCacheSeconds: 30, writeApiKey: '***' },
      webhooks: [{ name: 'env', url: 'https://hooks.example.com/in', secret: 'whsec_***', events: ['*'] }],
    });
  });

  it('a bad cron expression is one line naming the key, exit 2 (environment and config file)', async () => {
    dir = tempDir();
    const file = dir.file('bizops-sync.json');
    writeFileSync(file, JSON.stringify({ sync: { streamSchedules: { deals: '0 25 * * *' } } }));
    const patternFile = dir.file('patterns.json');
    writeFileSync(patternFile, JSON.stringify({ webhooks: [{ name: 'crm', url: 'https://crm.example.com/h', secret: newWebhookSecret(), events: ['deal won'] }] }));
    // Independent processes, started at once.
    const [fromEnv, fromFile, badPattern] = await Promise.all([
      runCli(['config', 'check'], cliEnv({ BIZOPS_BASE_URL: 'http://127.0.0.1:1', BIZOPS_TOKEN: TOKEN, BIZOPS_SCHEDULE: '*/30 * * * * * *' })),
      runCli(['config', 'check'], cliEnv({ BIZOPS_BASE_URL: 'http://127.0.0.1:1', BIZOPS_TOKEN: TOKEN, BIZOPS_CONFIG: file })),
      runCli(['config', 'check'], cliEnv({ BIZOPS_BASE_URL: 'http://127.0.0.1:1', BIZOPS_TOKEN: TOKEN, BIZOPS_CONFIG: patternFile })),
    ]);
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stdout).toBe('');
    expect(fromEnv.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(fromEnv.stderr).toMatch(/^bizops-sync: configuration error: BIZOPS_SCHEDULE \(sync\.schedule\): "\*\/30 \* \* \* \* \* \*" is not a valid cron expression \(expected 5 or 6 fields/);

    expect(fromFile.code).toBe(2);
    expect(fromFile.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(fromFile.stderr).toMatch(/^bizops-sync: configuration error: sync\.streamSchedules\.deals \(in .*bizops-sync\.json\): "0 25 \* \* \*" is not a valid cron expression \(hour/);

    expect(badPattern.code).toBe(2);
    expect(badPattern.stderr).toMatch(/^bizops-sync: configuration error: webhooks\.crm\.events\[0\]: "deal won" is not an event type pattern/);
  });

  it('the daemon refuses to start on a bad schedule: one line, exit 2', async () => {
    const result = await runCli(['daemon'], cliEnv({ BIZOPS_BASE_URL: 'http://127.0.0.1:1', BIZOPS_TOKEN: TOKEN, BIZOPS_RECONCILE_SCHEDULE: 'hourly' }));
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^bizops-sync: configuration error: BIZOPS_RECONCILE_SCHEDULE \(sync\.reconcileSchedule\): "hourly" is not a valid cron expression/);
    expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
  });
});

describe('bizops-sync webhooks', { timeout: 120_000 }, () => {
  it('send-test delivers a signed webhook.test; replay moves the cursor back; list shows cursor and lag', async () => {
    dir = tempDir();
    receiver = await new WebhookReceiver().start();
    const secret = newWebhookSecret();
    const dbPath = dir.file('mirror.db');
    const db = openMirror(dbPath);
    const store = new MirrorStore(sqliteConnection(db));
    for (let index = 0; index < 5; index += 1) await store.appendChange({ type: 'deal.updated', stream: 'deals', recordId: `deal_${index}`, data: { record: { id: `deal_${index}` }, changes: {} } });
    await sqliteConnection(db).close();
    const env = cliEnv({ BIZOPS_BASE_URL: 'http://127.0.0.1:1', BIZOPS_TOKEN: TOKEN, BIZOPS_DB: dbPath, BIZOPS_WEBHOOK_URL: receiver.url, BIZOPS_WEBHOOK_SECRET: secret });

    const [test, unknown] = await Promise.all([runCli(['webhooks', 'send-test'], env), runCli(['webhooks', 'send-test', '--endpoint', 'crm'], env)]);
    expect(test.stderr).toBe('');
    expect(test.code).toBe(0);
    expect(test.stdout).toMatch(/^env: ok \(HTTP 204\) in \d+ ms; webhook-id test_[0-9a-f-]+ to http:\/\/127\.0\.0\.1:\d+\/hooks\n$/);
    expect(receiver.received).toHaveLength(1);
    const payload = new Webhook(secret).verify(receiver.received[0]!.body, receiver.received[0]!.headers as Record<string, string>) as { type: string };
    expect(payload.type).toBe('webhook.test');

    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe('bizops-sync: --endpoint: no endpoint named "crm"; configured: env\n');

    const replay = await runCli(['webhooks', 'replay', '--endpoint', 'env', '--since', '2'], env);
    expect(replay.stderr).toBe('');
    expect(replay.code).toBe(0);
    expect(replay.stdout).toBe('env: cursor moved from 5 to 2; 3 events will be delivered again\n');
    // Read-only or refused: started at once.
    const [ahead, list, table] = await Promise.all([
      runCli(['webhooks', 'replay', '--endpoint', 'env', '--since', '9'], env),
      runCli(['webhooks', 'list', '--json'], env),
      runCli(['webhooks', 'list'], env),
    ]);
    expect(ahead.code).toBe(2);
    expect(ahead.stderr).toMatch(/^bizops-sync: --since: 9 is ahead of endpoint "env"'s cursor \(2\)/);

    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout)).toMatchObject([{ name: 'env', configured: true, registered: true, enabled: true, deliveredSeq: 2, lagEvents: 3 }]);
    expect(list.stdout).not.toContain(secret.slice(6));
    expect(table.code).toBe(0);
    expect(table.stdout.split('\n')[0]).toMatch(/^NAME\s+URL\s+STATE\s+CURSOR\s+LAG/);
    expect(table.stdout.split('\n')[1]).toMatch(/^env\s+http:\/\/127\.0\.0\.1:\d+\/hooks\s+enabled\s+2\s+3 events/);
  });

  it('replay --failed re-sends the events given up on (a 2xx clears them); enable re-enables a disabled endpoint', async () => {
    dir = tempDir();
    receiver = await new WebhookReceiver().start();
    const secret = newWebhookSecret();
    const dbPath = dir.file('mirror.db');
    const db = openMirror(dbPath);
    const connection = sqliteConnection(db);
    const store = new MirrorStore(connection);
    await registerEndpoint(connection, 'env', receiver.url);
    const changes = [];
    for (const index of [0, 1, 2]) changes.push(await store.appendChange({ type: 'deal.updated', stream: 'deals', recordId: `deal_${index}`, data: { record: { id: `deal_${index}` }, changes: {} } }));
    // The state a dispatcher leaves: seq 1 and 2 given up on after the schedule, then disabled while failing seq 3.
    const failedAt = new Date().toISOString();
    await insertFailedDelivery(connection, { endpoint: 'env', seq: 1, eventId: changes[0]!.eventId, type: 'deal.updated', attempts: 8, lastStatus: 503, lastError: 'HTTP 503', failedAt });
    await insertFailedDelivery(connection, { endpoint: 'env', seq: 2, eventId: changes[1]!.eventId, type: 'deal.updated', attempts: 8, lastStatus: 503, lastError: 'HTTP 503', failedAt });
    await resetCursor(connection, 'env', 2);
    await disableEndpoint(connection, 'env', 2, { kind: 'failing', reason: 'no 2xx for 5 days', goneStatus: null, safeUrl: receiver.url });
    await connection.close();
    const env = cliEnv({ BIZOPS_BASE_URL: 'http://127.0.0.1:1', BIZOPS_TOKEN: TOKEN, BIZOPS_DB: dbPath, BIZOPS_WEBHOOK_URL: receiver.url, BIZOPS_WEBHOOK_SECRET: secret });

    const [before, usage] = await Promise.all([runCli(['webhooks', 'list', '--json'], env), runCli(['webhooks', 'replay'], env)]);
    expect(JSON.parse(before.stdout)).toMatchObject([{ name: 'env', enabled: false, disabledKind: 'failing', failedEvents: 2, deliveredSeq: 2 }]);

    expect(usage.code).toBe(2);
    expect(usage.stderr).toBe('bizops-sync: replay needs --endpoint NAME --since SEQ, or --failed [--endpoint NAME]\n');

    const replayed = await runCli(['webhooks', 'replay', '--failed'], env);
    expect(replayed.stderr).toBe('');
    expect(replayed.code).toBe(0);
    expect(replayed.stdout.trimEnd().split('\n')).toEqual([
      `env: seq 1 (${changes[0]!.eventId}) delivered: HTTP 204`,
      `env: seq 2 (${changes[1]!.eventId}) delivered: HTTP 204`,
      '2 delivered, 0 failed again, 0 skipped',
    ]);
    expect(receiver.received.map((request) => request.headers['webhook-id'])).toEqual([changes[0]!.eventId, changes[1]!.eventId]);
    for (const request of receiver.received) expect(() => new Webhook(secret).verify(request.body, request.headers as Record<string, string>)).not.toThrow();

    const whileDisabled = await runCli(['webhooks', 'retry', 'env'], env);
    expect(whileDisabled.code).toBe(2);
    expect(whileDisabled.stderr).toBe('bizops-sync: "env" is disabled (no 2xx for 5 days): re-enable it with webhooks enable env\n');

    const enabled = await runCli(['webhooks', 'enable', 'env'], env);
    expect(enabled.stderr).toBe('');
    expect(enabled.stdout).toBe('env: enabled again (was disabled: no 2xx for 5 days); delivery resumes after seq 2\n');
    const [after, unknown] = await Promise.all([runCli(['webhooks', 'list', '--json'], env), runCli(['webhooks', 'enable', 'crm'], env)]);
    expect(JSON.parse(after.stdout)).toMatchObject([{ name: 'env', enabled: true, disabledKind: null, failedEvents: 0, deliveredSeq: 2 }]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/"crm" is not registered/);

    // Paused (taken for down): retry ends the pause now; the daemon's next round sends a probe.
    const pausedUntil = new Date(Date.now() + 3_600_000).toISOString();
    const reopened = sqliteConnection(openMirror(dbPath));
    await reopened.run('UPDATE webhook_endpoints SET attempts = 7, next_attempt_at = ? WHERE name = ?', [pausedUntil, 'env']);
    await reopened.close();
    const retried = await runCli(['webhooks', 'retry', 'env'], env);
    expect(retried.stderr).toBe('');
    expect(retried.stdout).toBe(`env: pause until ${pausedUntil} ended after 7 failed attempts in a row; its next event goes out now (a running daemon picks it up within a second)\n`);
    expect(JSON.parse((await runCli(['webhooks', 'list', '--json'], env)).stdout)).toMatchObject([{ name: 'env', pausedUntil: null, nextAttemptAt: null, consecutiveFailures: 7 }]);
  });
});
