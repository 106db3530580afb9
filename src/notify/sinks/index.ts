/**
 * Sinks (docs/sinks.md): the changelog published to NATS JetStream, RabbitMQ or Redis Streams by
 * the delivery core, each kind one file (sink-kinds.ts). The face of src/notify/sinks/ for jobs/ and
 * cli/; a kind's client library loads only when a sink of that kind is configured.
 */
export { listSinks, replayFailedSinks, sinkTargets } from './sink-targets.ts';
