/**
 * Migration 17: sinks (docs/sinks.md) and readers that start from a snapshot.
 *
 * A sink (NATS JetStream, RabbitMQ, Redis Streams) is a delivery target like a webhook endpoint:
 * its row in `webhook_endpoints` (the delivery core's table of targets, src/notify/delivery/) holds
 * its cursor, streak and pause, its held events, attempts and events given up on live in the same
 * tables as an endpoint's. `kind` says which: `webhook` (every row before this migration) or the
 * sink's kind. Names are unique across endpoints and sinks.
 *
 * `snapshot` (targets and named consumers): while a reader that asked for `initial: "snapshot"`
 * receives the current rows of its streams, JSON `{"boundary": seq, "streams": [...], "stream":
 * name, "after": record id}`: the changelog seq the snapshot stands at (the cursor waits there),
 * and where the reading stands; null once it is done (docs/mirror.md "Starting from a snapshot").
 */
export const sql = `
ALTER TABLE webhook_endpoints ADD COLUMN kind TEXT NOT NULL DEFAULT 'webhook';
ALTER TABLE webhook_endpoints ADD COLUMN snapshot TEXT;
ALTER TABLE consumers ADD COLUMN snapshot TEXT;
`;
