/**
 * The kinds of sink, each one file behind the delivery core's seam (`SinkSender`,
 * src/notify/delivery/sink-kind.ts). A kind's module, with its client library, is loaded only when a
 * sink of that kind is configured. A new kind (Kafka, say) is one file exporting a sender factory,
 * its line here, and its name in src/config/schema.ts `SINK_KINDS` (with its keys).
 */
import type { SinkConfig, SinkKind } from '../../config/schema.ts';
import type { SinkSender } from '../delivery/sink-kind.ts';

/** Loads the sender factory of a kind. */
export const SINK_KIND_LOADERS: Record<SinkKind, () => Promise<(sink: SinkConfig) => SinkSender>> = {
  nats: async () => (await import('./nats-sink.ts')).natsSender,
  rabbitmq: async () => (await import('./rabbitmq-sink.ts')).rabbitmqSender,
  'redis-stream': async () => (await import('./redis-stream-sink.ts')).redisStreamSender,
};
