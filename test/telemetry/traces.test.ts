/**
 * A backfill's traces (docs/operations.md "Traces"), received through the SDK's in-memory exporter:
 * each stream's run is one trace, rooted at its `sync.run` span, holding an `api.page` span per page
 * request and a `mirror.commit` span per page commit; attributes name the stream, never a token or
 * a record's contents. Without OTEL_EXPORTER_OTLP_ENDPOINT tracing stays off.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { startTelemetry, type Telemetry } from '../../src/telemetry/index.ts';
import { Agent } from 'undici';
import { readChanges } from '../../src/notify/index.ts';
import { webhookSender } from '../../src/notify/webhooks/webhook-sender.ts';
import { newWebhookSecret, WebhookReceiver } from '../daemon/helpers.ts';
import { syncFixtures } from '../helpers.ts';
import { configSchema } from '../../src/config/schema.ts';
import { sinkSender } from '../../src/notify/sinks/sink-targets.ts';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
import { deleteKeys, requireRedis, writeStack } from '../writes/support.ts';

const fixtures = syncFixtures();
const exporter = new InMemorySpanExporter();
let telemetry: Telemetry | null = null;

beforeAll(async () => {
  expect(await startTelemetry({})).toBeNull();
  telemetry = await startTelemetry({}, { spanProcessors: [new SimpleSpanProcessor(exporter)] });
});
afterAll(async () => telemetry?.shutdown());

describe('traces', () => {
  it("a backfill's spans form one trace per run: its pages' requests and commits under its sync.run", async () => {
    const { context, sim } = await fixtures.start({ size: { transactions: 25, deals: 3, onboardings: 2 } });
    exporter.reset();
    const transactions = await context.engine.run('transactions', 'backfill');
    const deals = await context.engine.run('deals', 'backfill');
    expect([transactions.status, deals.status]).toEqual(['succeeded', 'succeeded']);
    const spans = exporter.getFinishedSpans();
    const runs = spans.filter((span) => span.name === 'sync.run');
    expect(runs.map((span) => span.attributes['bizops.stream'])).toEqual(['transactions', 'deals']);
    expect(new Set(runs.map((span) => span.spanContext().traceId)).size).toBe(2);
    for (const run of runs) {
      expect(run.parentSpanContext).toBeUndefined();
      expect(run.attributes).toMatchObject({ 'bizops.mode': 'complete', 'bizops.status': 'succeeded', 'bizops.company': context.config.companyId });
      const inTrace = spans.filter((span) => span.spanContext().traceId === run.spanContext().traceId);
      const pages = inTrace.filter((span) => span.name === 'api.page');
      const commits = inTrace.filter((span) => span.name === 'mirror.commit');
      expect(pages.length).toBeGreaterThan(0);
      expect(commits.length).toBe(pages.length);
      for (const span of [...pages, ...commits]) {
        expect(span.parentSpanContext?.spanId).toBe(run.spanContext().spanId);
        expect(span.attributes['bizops.stream']).toBe(run.attributes['bizops.stream']);
      }
    }
    // The page requests' records add up to the stream's: 25 transactions listed.
    const transactionPages = spans.filter((span) => span.name === 'api.page' && span.attributes['bizops.stream'] === 'transactions');
    expect(transactionPages.reduce((sum, span) => sum + Number(span.attributes['bizops.records']), 0)).toBe(25);
    // Names and counts only: no token, no record field.
    const text = JSON.stringify(spans.map((span) => [span.name, span.attributes, span.events]));
    expect(text).not.toContain(String(sim.tokens.admin));
    const firstTransaction = sim.world.groundTruth('transactions')[0] as { id: string };
    expect(text).not.toContain(firstTransaction.id);

    // A webhook delivery is a trace of its own naming the endpoint and the event, not its URL or secret.
    const receiver = await new WebhookReceiver().start();
    const http = new Agent();
    try {
      const [event] = await readChanges(context.connection, { limit: 1 });
      const secret = newWebhookSecret();
      const sender = webhookSender({ name: 'crm', url: receiver.url, secret, events: ['*'] } as Parameters<typeof webhookSender>[0], { timeoutMs: 5_000, http });
      exporter.reset();
      expect((await sender.send(event!, new AbortController().signal)).ok).toBe(true);
      const [delivery] = exporter.getFinishedSpans();
      expect(delivery).toMatchObject({ name: 'webhook.deliver', parentSpanContext: undefined, attributes: { 'bizops.endpoint': 'crm', 'bizops.event_id': event!.eventId, 'bizops.seq': event!.seq, 'bizops.stream': event!.stream } });
      expect(JSON.stringify(delivery!.attributes)).not.toContain(receiver.url);
      expect(JSON.stringify(delivery!.attributes)).not.toContain(secret);

      // A publish to a sink (Redis Streams here) is a trace of its own too, without the sink's URL.
      const key = `test-traces-sink-${Math.random().toString(36).slice(2, 10)}`;
      const [sink] = configSchema.parse({ baseUrl: 'http://127.0.0.1:9', tokens: { default: 'tok_default_0000' }, sinks: [{ name: 'feed', kind: 'redis-stream', url: REDIS_URL, key, events: ['*'] }] }).sinks;
      const publisher = await sinkSender(sink!);
      try {
        exporter.reset();
        expect((await publisher.send(event!, new AbortController().signal)).ok).toBe(true);
        const [published] = exporter.getFinishedSpans();
        expect(published).toMatchObject({
          name: 'sink.deliver',
          parentSpanContext: undefined,
          attributes: { 'bizops.sink': 'feed', 'bizops.sink_kind': 'redis-stream', 'bizops.event_id': event!.eventId, 'bizops.seq': event!.seq, 'bizops.delivered': true },
        });
        expect(JSON.stringify(published!.attributes)).not.toContain(REDIS_URL);
      } finally {
        await publisher.close();
        await deleteKeys(`${key}*`);
      }
    } finally {
      await http.close();
      await receiver.close();
    }
  });

  it("a write's send is a trace of its own naming the write, its kind and what was done, never its payload", async () => {
    await requireRedis();
    const fixture = await fixtures.start({ size: { transactions: 5, deals: 3, onboardings: 2 } });
    const id = Math.random().toString(36).slice(2, 10);
    const bed = { dir: fixture.dir.path, dbPath: '', connection: fixture.context.connection, prefix: `test-traces-${id}`, budgetPrefix: `test-traces-rate-${id}`, queueName: 'writes', cleanup: async () => {} };
    const stack = await writeStack(fixture.sim, bed, {});
    try {
      exporter.reset();
      const write = await stack.intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 4200, description: 'Traced payload text' });
      expect((await stack.finished(write.id)).status).toBe('succeeded');
      const sends = exporter.getFinishedSpans().filter((span) => span.name === 'write.send');
      expect(sends).toHaveLength(1);
      expect(sends[0]).toMatchObject({ parentSpanContext: undefined, attributes: { 'bizops.write_id': write.id, 'bizops.write_kind': 'transaction.create' } });
      expect(typeof sends[0]!.attributes['bizops.action']).toBe('string');
      expect(JSON.stringify(sends[0]!.attributes)).not.toContain('Traced payload text');
    } finally {
      await stack.close();
      await deleteKeys(`${bed.prefix}:*`);
      await deleteKeys(`${bed.budgetPrefix}:*`);
    }
  });
});
