/**
 * Sinks as delivery targets of the delivery core (src/notify/delivery/): each configured sink with
 * the sender of its kind (sink-kinds.ts), and the listing `sinks list` shows.
 */
import type { SinkConfig } from '../../config/schema.ts';
import type { SqlExecutor } from '../../mirror/sql/executor.ts';
import type { DeliveryTarget } from '../delivery/delivery-dispatcher.ts';
import { tracedSender, type SinkSender } from '../delivery/sink-kind.ts';
import { listDeliveryTargets, replayFailedDeliveries, type FailedReplayOutcome, type ListWebhookEndpointsOptions, type WebhookEndpointListing } from '../delivery/target-admin.ts';
import { SINK_KIND_LOADERS } from './sink-kinds.ts';

/**
 * The sender of one sink (its kind's module loaded on first use), each publish a trace of its own
 * (`sink.deliver`, naming the sink and its kind, never its URL: `tracedSender`).
 */
export async function sinkSender(sink: SinkConfig): Promise<SinkSender> {
  const create = await SINK_KIND_LOADERS[sink.kind]();
  return tracedSender(create(sink), 'sink.deliver', { 'bizops.sink': sink.name, 'bizops.sink_kind': sink.kind });
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
