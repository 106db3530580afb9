/**
 * Sinks as delivery targets of the delivery core (src/notify/delivery/): each configured sink with
 * the sender of its kind (sink-kinds.ts), and the listing `sinks list` shows.
 */
import type { SinkConfig } from '../../config/schema.ts';
import type { SqlExecutor } from '../../mirror/sql/executor.ts';
import type { DeliveryTarget } from '../delivery/delivery-dispatcher.ts';
import type { DeliveryOutcome, SinkSender } from '../delivery/sink-kind.ts';
import type { ChangeEvent } from '../changelog-reader.ts';
import { withSpan } from '../../telemetry/index.ts';
import { listDeliveryTargets, replayFailedDeliveries, type FailedReplayOutcome, type ListWebhookEndpointsOptions, type WebhookEndpointListing } from '../delivery/target-admin.ts';
import { SINK_KIND_LOADERS } from './sink-kinds.ts';

/**
 * The sender of one sink (its kind's module loaded on first use). Each publish is a trace of its own
 * (`sink.deliver`: the sink, its kind, the event's id, type, seq, stream and partition; never the URL,
 * which may hold credentials, nor the body), as a webhook delivery is (docs/operations.md "Traces").
 */
export async function sinkSender(sink: SinkConfig): Promise<SinkSender> {
  const create = await SINK_KIND_LOADERS[sink.kind]();
  const sender = create(sink);
  return {
    send(event: ChangeEvent, signal: AbortSignal): Promise<DeliveryOutcome> {
      const attributes = {
        'bizops.sink': sink.name,
        'bizops.sink_kind': sink.kind,
        'bizops.event_id': event.eventId,
        'bizops.event_type': event.type,
        'bizops.seq': event.seq,
        'bizops.stream': event.stream,
        'bizops.partition': event.partition ?? '',
      };
      return withSpan(
        'sink.deliver',
        attributes,
        async (span) => {
          const outcome = await sender.send(event, signal);
          span.setAttribute('bizops.delivered', outcome.ok);
          return outcome;
        },
        { root: true },
      );
    },
    close: () => sender.close(),
  };
}

/**
 * The delivery targets of `sinks` (docs/sinks.md "Configuration"): each with its kind's sender; no
 * connection is opened until the first event.
 */
export async function sinkTargets(sinks: readonly SinkConfig[]): Promise<DeliveryTarget[]> {
  const targets: DeliveryTarget[] = [];
  for (const sink of sinks) {
    targets.push({
      name: sink.name,
      kind: sink.kind,
      configKey: 'sinks',
      url: sink.url!,
      events: sink.events,
      disableAfterDays: sink.disableAfterDays,
      maxInFlight: sink.maxInFlight,
      ordering: sink.ordering,
      initial: sink.initial,
      sender: await sinkSender(sink),
    });
  }
  return targets;
}

/**
 * Every configured sink (in configuration order), then stored sinks no longer configured, each with
 * its latest attempts (`sinks list`, the console). Read-only.
 */
export function listSinks(executor: SqlExecutor, sinks: readonly SinkConfig[], options: ListWebhookEndpointsOptions = {}): Promise<WebhookEndpointListing[]> {
  const kinds = new Map(sinks.map((sink) => [sink.name, sink.kind]));
  return listDeliveryTargets(
    executor,
    'sinks',
    sinks.map((sink) => ({ name: sink.name, url: sink.url ?? '', events: sink.events, ordering: sink.ordering, maxInFlight: sink.maxInFlight })),
    (name) => kinds.get(name) ?? 'sink',
    options,
  );
}

/**
 * Re-publishes, once each, the events sinks gave up on (`sinks replay --failed`); a success clears one.
 * @throws Error when `only` names no configured sink
 */
export async function replayFailedSinks(executor: SqlExecutor, sinks: readonly SinkConfig[], only?: string): Promise<FailedReplayOutcome[]> {
  if (only !== undefined && !sinks.some((sink) => sink.name === only)) {
    throw new Error(`sink: no configured sink named "${only}"; configured: ${sinks.map((sink) => sink.name).join(', ') || 'none'}`);
  }
  const senders = new Map<string, SinkSender>();
  try {
    for (const sink of sinks) if (only === undefined || sink.name === only) senders.set(sink.name, await sinkSender(sink));
    return await replayFailedDeliveries(executor, 'sinks', senders, only);
  } finally {
    await Promise.allSettled([...senders.values()].map((sender) => sender.close()));
  }
}
