/**
 * `status` of a deployment of two connections (docs/operations.md "Many companies") served by one
 * daemon, in this process: the daemon records one row per connection, each in that connection's
 * mirror, and `status` shows each connection's parts under its own connection (acme without webhook
 * delivery, globex with it), from `readStatus` and from the command line. Each step waits for a state.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { startDaemon, type RunningDaemon } from '../../jobs/daemon.ts';
import { readStatus } from '../../jobs/status.ts';
import { loadDeployment } from '../../src/config/load.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { runCli, simulator, tempDir, waitFor, type TempDir } from '../helpers.ts';
import { cliEnv, newWebhookSecret, WebhookReceiver } from './helpers.ts';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

let sim: RunningSimulator | undefined;
let dir: TempDir | undefined;
let daemon: RunningDaemon | undefined;
let receiver: WebhookReceiver | undefined;
let prefix: string | undefined;

afterEach(async () => {
  await daemon?.stop();
  await receiver?.close();
  await sim?.close();
  dir?.remove();
  if (prefix) {
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  }
  sim = dir = daemon = receiver = prefix = undefined;
});

describe('status of a daemon serving several connections', { timeout: 60_000 }, () => {
  it("shows each connection's parts under its connection, from the row the daemon recorded in that connection's mirror", async () => {
    sim = await simulator({ companies: 2, extraCompanySizes: { transactions: 2, deals: 2, onboardings: 2 } });
    dir = tempDir();
    receiver = await new WebhookReceiver().start();
    prefix = `bizops-test:status-connections:${randomUUID()}:`;
    const [one, two] = [sim.company(1), sim.company(2)];
    const paths = { acme: dir.file('acme.db'), globex: dir.file('globex.db') };
    writeFileSync(
      dir.file('config.json'),
      JSON.stringify({
        baseUrl: sim.url,
        redisUrl: REDIS_URL,
        rateLimit: { perMinute: 100_000, windowMs: 60_000 },
        sync: { schedule: '* * * * * *', streams: ['onboardings'], leaseSeconds: 3 },
        http: { port: 0 },
        connections: {
          acme: { tokens: { default: one.token }, companyId: one.id, dbPath: paths.acme },
          globex: { tokens: { default: two.token }, companyId: two.id, dbPath: paths.globex, webhooks: [{ name: 'hook', url: receiver.url, secret: newWebhookSecret() }] },
        },
      }),
    );
    const env = cliEnv({ BIZOPS_CONFIG: dir.file('config.json'), REDIS_URL });
    daemon = await startDaemon(loadDeployment({ env }), {
      logger: silentLogger,
      processMetrics: false,
      partRetry: { minDelayMs: 20, maxDelayMs: 200 },
      redisKeys: { budgetPrefix: `${prefix}rate`, queuePrefix: prefix, queueName: 'writes' },
    });
    const url = daemon.url;

    const shown = {} as Record<'acme' | 'globex', Awaited<ReturnType<typeof readStatus>>>;
    for (const name of ['acme', 'globex'] as const) {
      shown[name] = await waitFor(async () => {
        const status = await readStatus(paths[name]);
        return status.daemons.daemons.length === 1 && status.daemons.daemons[0]!.parts.every((part) => part.state === 'running') ? status : undefined;
      }, `${name}'s mirror to record the daemon, every part running`);
    }
    const [acme, globex] = [shown.acme.daemons.daemons[0]!, shown.globex.daemons.daemons[0]!];
    expect(acme).toMatchObject({ connection: 'acme', source: 'live', url, pid: process.pid, error: null });
    expect(globex).toMatchObject({ connection: 'globex', source: 'live', url, pid: process.pid, error: null });
    expect(globex.instance).toBe(acme.instance);
    // Each connection's own parts: only globex delivers webhooks.
    expect(acme.parts.map((part) => part.part).sort()).toEqual(['leases', 'retention', 'scheduler', 'stale-watch', 'writes']);
    expect(globex.parts.map((part) => part.part).sort()).toEqual(['leases', 'retention', 'scheduler', 'stale-watch', 'webhooks', 'writes']);

    // The command line: one section per connection, its daemon line naming the connection, its parts below.
    const cli = await runCli(['status'], env);
    expect(cli.code, cli.stderr).toBe(0);
    const sections = Object.fromEntries(
      cli.stdout
        .split(/^== connection /m)
        .slice(1)
        .map((section) => [section.slice(0, section.indexOf(' ')), section] as const),
    );
    expect(Object.keys(sections).sort()).toEqual(['acme', 'globex']);
    for (const name of ['acme', 'globex'] as const) {
      const lines = sections[name]!.split('\n');
      const head = lines.findIndex((line) => line.startsWith('daemon: '));
      expect(lines[head]).toContain(`connection ${name}: its parts now:`);
      const partLines = lines.slice(head + 2).filter((line) => /^ {2}\S/.test(line));
      const names = partLines.map((line) => line.trim().split(/\s+/)[0]);
      expect(names.slice(0, name === 'acme' ? 5 : 6).sort()).toEqual(name === 'acme' ? ['leases', 'retention', 'scheduler', 'stale-watch', 'writes'] : ['leases', 'retention', 'scheduler', 'stale-watch', 'webhooks', 'writes']);
      for (const line of partLines.slice(0, name === 'acme' ? 5 : 6)) expect(line).toMatch(/ running /);
    }
  });
});
