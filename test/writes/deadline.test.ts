/**
 * Every client gets the configuration: `api.requestDeadlineSeconds` (BIZOPS_REQUEST_DEADLINE_SECONDS)
 * reaches the write worker's client and the webhook sender built by jobs/context.ts, as it reaches
 * the sync. An answer that trickles is cut at the deadline; a receiver that never answers times out
 * at it. Asserted on what was recorded (the write's error, the endpoint's last error), not on time.
 */
import { createServer, type Server } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { openContext, type Context } from '../../jobs/context.ts';
import { configSchema } from '../../src/config/schema.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { waitFor } from '../helpers.ts';
import { REDIS_URL, simulator, writeTestBed, type WriteTestBed } from './support.ts';

let sim: RunningSimulator;
let bed: WriteTestBed;
let context: Context | undefined;
let receiver: Server | undefined;

beforeEach(async () => {
  sim = await simulator();
  bed = await writeTestBed();
});

afterEach(async () => {
  await context?.close();
  context = undefined;
  await new Promise((resolve) => (receiver ? receiver.close(resolve) : resolve(undefined)));
  receiver?.closeAllConnections();
  receiver = undefined;
  await sim?.close();
  await bed?.cleanup();
});

function config(extra: Record<string, unknown> = {}) {
  return configSchema.parse({
    baseUrl: sim.url,
    tokens: { default: sim.tokens.admin },
    dbPath: bed.dbPath,
    redisUrl: REDIS_URL,
    rateLimit: { perMinute: 1000, windowMs: 1000 },
    api: { requestDeadlineSeconds: 0.5 },
    writes: { ledgerSettleSeconds: 0.2 },
    ...extra,
  });
}

describe('the request deadline', () => {
  it('reaches the write worker: an answer that trickles is cut at it, and the write is resolved from the ledger', async () => {
    context = await openContext(config(), { logger: silentLogger, redisKeys: { queuePrefix: bed.prefix, queueName: bed.queueName, budgetPrefix: bed.budgetPrefix } });
    const writes = await context.writeQueue();
    await writes.startWorker({ ambiguousSettleMs: 50 });
    // About 4 s of body, 100 ms between chunks: only a deadline on the whole request ends it.
    sim.faults.inject({ kind: 'trickle-body', chunkBytes: 10, intervalMs: 100, match: { method: 'POST', path: '/transactions' } });
    const description = `Trickled ${Date.now()}`;
    const { id } = await writes.enqueueWrite('transaction.create', { type: 'INCOME', amount: 4400, description });
    let status = '';
    await waitFor(async () => {
      status = (await writes.getWrite(id))!.status;
      return status !== 'queued' && status !== 'sending';
    }, 'the write to finish', 30_000);
    const write = (await writes.getWrite(id))!;
    // The reason names the deadline of 500 ms (the configured 0.5 s), not the client's 60 s default.
    expect(write).toMatchObject({ status: 'succeeded', outcome: expect.stringMatching(/found in the ledger after an ambiguous outcome .*deadline.*500 ms/) });
    expect(JSON.stringify(write.result)).toContain(description);
    expect(sim.world.transactions.filter((transaction) => transaction.description === description)).toHaveLength(1);
  });

  it('reaches the webhook sender: a receiver that never answers times out at the deadline', async () => {
    receiver = createServer(() => undefined); // takes the request, never answers
    await new Promise<void>((resolve) => receiver!.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
    context = await openContext(config({ webhooks: [{ name: 'slow', url, secret: `whsec_${Buffer.from('a'.repeat(32)).toString('base64')}`, events: ['*'] }] }), {
      logger: silentLogger,
      rateBudget: 'local',
    });
    const dispatcher = (await context.webhookDispatcher({ pollMs: 50 }))!;
    await dispatcher.start();
    await context.store.appendChange({ type: 'deal.won', stream: 'deals', recordId: 'deal_1', occurredAt: new Date().toISOString(), data: { record: { id: 'deal_1' }, changes: {} } });
    dispatcher.notify?.();
    const lastError = await waitFor(
      async () => (await context!.connection.get<{ last_error: string | null }>("SELECT last_error FROM webhook_endpoints WHERE name = 'slow'"))?.last_error,
      'a failed delivery attempt',
      30_000,
    );
    expect(lastError).toBe('timed out after 500 ms');
    await dispatcher.stop();
  });
});
