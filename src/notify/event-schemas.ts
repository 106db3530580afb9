/**
 * One JSON Schema (draft 2020-12) per event type (docs/events.md): the body webhooks send and the
 * pull API lists (event-payload.ts `webhookPayload`), `{ type, timestamp, data: { seq, stream,
 * record_id, record, changes, error? } }`, with `data.record` and `data.changes` described per type.
 *
 * Generated, not written per stream:
 *   - each registered stream's event types (src/streams/definitions.ts `changes.events`) get a record
 *     schema from the stream's typed columns (a `TEXT` column a string, `INTEGER` an integer, `REAL` a
 *     number; `notNull` columns required and never null, the others nullable and optional; dot paths
 *     nested objects) that admits any further field (the API may return fields the spec does not
 *     show: they reach `data.record` too), and a `changes` schema typing each column's `{ old, new }`;
 *     the stream's gone event (two complete scans without it) has `changes` `{ deletedAt }` only;
 *   - every other type is one entry of `OTHER_EVENT_TYPES` (what its `data.record` holds, which
 *     streams it comes from, what its `record_id` names): adding an event type is adding one entry;
 *     an event about a stream's state is `streamEvent(TYPE, description, { field: schema, ... })`.
 *     A type appended without an entry fails every sync test that emits it (test/helpers.ts
 *     `syncFixtures` validates each test's changelog) and docs/events.md lists only what has one.
 *
 * The envelope is closed (`additionalProperties: false` on the body and on `data`), so a payload that
 * grows a member the schemas do not describe fails the test that validates every emitted event
 * (test/notify/event-schemas.test.ts); the records of streams are open, the records this project
 * makes itself (writes, endpoints, holds, new fields) closed.
 */
import { FIELD_ADDED_EVENT } from '../mirror/field-registry.ts';
import { RECORD_REJECTED } from '../mirror/rejected-records.ts';
import type { ColumnDefinition, ColumnType } from '../streams/define-stream.ts';
import { STREAM_LIST, STREAM_NAMES, type RegisteredStream } from '../streams/definitions.ts';
import { MASS_DELETION_HELD, STREAM_FAILING, STREAM_RECOVERED, STREAM_STALE, STREAM_UNSUPPORTED } from '../sync/stream-conditions.ts';
import { STREAM_CONDITIONS } from '../mirror/stream-condition-store.ts';
import { WRITE_KIND_NAMES } from '../writes/kinds/index.ts';
import { WRITE_DUPLICATED, WRITE_EVENT_TYPES } from '../writes/write-store.ts';
import { ENDPOINT_DISABLED_EVENT, SINK_DISABLED_EVENT, SINK_FAILING_EVENT, SINK_RECOVERED_EVENT } from './delivery/endpoint-store.ts';
import { snapshotEventType } from './snapshot.ts';
import { TEST_EVENT_TYPE } from './event-payload.ts';

/** A JSON Schema as plain JSON (an object of keywords). */
export type JsonSchema = { [keyword: string]: unknown };

/** The dialect every event schema declares in `$schema`. */
export const JSON_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';

/** `$id` of an event type's schema: `urn:bizops-sync:event:deal.won`. */
export function eventSchemaId(type: string): string {
  return `urn:bizops-sync:event:${type}`;
}

const string: JsonSchema = { type: 'string' };
const nonEmptyString: JsonSchema = { type: 'string', minLength: 1 };
const dateTime: JsonSchema = { type: 'string', format: 'date-time' };
const nullable = (schema: JsonSchema): JsonSchema => ({ ...schema, type: [schema.type as string, 'null'] });
/** An object of exactly these members (all required unless listed in `optional`). */
const closedObject = (properties: Record<string, JsonSchema>, optional: readonly string[] = []): JsonSchema => ({
  type: 'object',
  properties,
  required: Object.keys(properties).filter((name) => !optional.includes(name)),
  additionalProperties: false,
});
/** `{ old, new }`: one changed field's value before and after (null when absent). */
const fieldChange = (old: JsonSchema = {}, next: JsonSchema = {}): JsonSchema => closedObject({ old, new: next });
/** `changes` of events that change no record field: always `{}`. */
const noChanges: JsonSchema = { type: 'object', maxProperties: 0 };
/** `changes` of any shape: each member a dot path with its `{ old, new }`. */
const anyChanges: JsonSchema = { type: 'object', additionalProperties: fieldChange() };

/** The JSON type of a column's declared SQL type. */
const COLUMN_JSON_TYPES: Record<ColumnType, string> = { TEXT: 'string', INTEGER: 'integer', REAL: 'number' };

/** A column's value: its JSON type, null allowed unless the column is `NOT NULL`; the docs' note (a unit) as its description. */
function columnValueSchema(column: ColumnDefinition): JsonSchema {
  const base: JsonSchema = { type: COLUMN_JSON_TYPES[column.type], ...(column.primaryKey ? { minLength: 1 } : {}) };
  const schema = column.notNull || column.primaryKey ? base : nullable(base);
  return column.note ? { ...schema, description: column.note } : schema;
}

/** A node of the record schema while dot paths are folded into nested objects. */
interface ObjectNode {
  properties: Map<string, ObjectNode | JsonSchema>;
  required: Set<string>;
}

function toObjectSchema(node: ObjectNode): JsonSchema {
  const properties = Object.fromEntries([...node.properties].map(([name, child]) => [name, isNode(child) ? toObjectSchema(child) : child]));
  return { type: 'object', properties, ...(node.required.size > 0 ? { required: [...node.required] } : {}), additionalProperties: true };
}

function isNode(value: unknown): value is ObjectNode {
  return typeof value === 'object' && value !== null && (value as ObjectNode).properties instanceof Map;
}

/**
 * A stream's record as its events carry it (the list item, a write response's record, or a
 * tombstone's last version): each typed column at its dot path, further fields admitted.
 */
export function streamRecordSchema(stream: Pick<RegisteredStream, 'columns'>): JsonSchema {
  const root: ObjectNode = { properties: new Map(), required: new Set() };
  for (const column of stream.columns) {
    const parts = column.field.split('.');
    let node = root;
    for (const [index, part] of parts.entries()) {
      const required = column.notNull || column.primaryKey;
      if (index === parts.length - 1) {
        node.properties.set(part, columnValueSchema(column));
        if (required) node.required.add(part);
        break;
      }
      const existing = node.properties.get(part);
      const child: ObjectNode = isNode(existing) ? existing : { properties: new Map(), required: new Set() };
      node.properties.set(part, child);
      if (required) node.required.add(part);
      node = child;
    }
  }
  return toObjectSchema(root);
}

/** `changes` of a stream's record events: each column's field (dot path) typed, any other field (one the spec does not show) `{ old, new }` of any value. */
export function streamChangesSchema(stream: Pick<RegisteredStream, 'columns'>): JsonSchema {
  const properties = Object.fromEntries(
    stream.columns.map((column) => {
      const value = nullable({ type: COLUMN_JSON_TYPES[column.type] });
      return [column.field, fieldChange(value, value)];
    }),
  );
  return { type: 'object', properties, additionalProperties: fieldChange() };
}

/** What an event type's `data` holds besides `seq`, `stream` and `record_id`, and where it comes from. */
export interface EventTypeEntry {
  type: string;
  /** One sentence for the docs and the schema's `description`. */
  description: string;
  /** The values of `data.stream`: a stream's name, or `writes`, `webhooks`, `sinks`. */
  streams: readonly string[];
  /** What `data.record_id` names, for the docs. */
  recordId: string;
  record: JsonSchema;
  changes: JsonSchema;
  /** `data.error` is present (a string naming the field and the rule). */
  error?: boolean;
}

/** A write as its events carry it (`GET /writes/{id}`, docs/writes.md "The mirror contract"). */
const writeRecord: JsonSchema = closedObject(
  {
    id: nonEmptyString,
    idempotencyKey: string,
    kind: { type: 'string', enum: [...WRITE_KIND_NAMES] },
    status: { type: 'string', enum: ['queued', 'sending', 'succeeded', 'failed', 'needs_review'] },
    payload: { type: 'object', description: "the write's validated payload" },
    actAs: { type: 'string', description: 'the token name the write acts as' },
    outcome: nullable(string),
    result: { description: "the response's content when it succeeded" },
    error: nullable(string),
    httpStatus: nullable({ type: 'integer' }),
    remoteId: { ...nullable(string), description: 'the id of the record created or changed' },
    attempts: { type: 'integer', minimum: 0, description: 'requests sent' },
    enqueueError: string,
    createdAt: dateTime,
    updatedAt: dateTime,
    finishedAt: nullable(dateTime),
  },
  ['enqueueError'],
);

/**
 * An event about a whole stream (its state, not a record): `data.stream` and `data.record_id` are the
 * stream's name, `data.record` is `{ stream, ...fields }` (exactly those, each required unless
 * listed in `optional`), `data.changes` is `{}`. E.g. `stream.mass_deletion_held`.
 */
export function streamEvent(type: string, description: string, fields: Record<string, JsonSchema>, optional: readonly string[] = []): EventTypeEntry {
  return { type, description, streams: STREAM_NAMES, recordId: 'the stream', record: closedObject({ stream: { enum: [...STREAM_NAMES] }, ...fields }, optional), changes: noChanges };
}

/** Every event type that is not a stream's record event: one entry each (module comment). */
export const OTHER_EVENT_TYPES: readonly EventTypeEntry[] = [
  ...Object.entries(WRITE_EVENT_TYPES).map(
    ([status, type]): EventTypeEntry => ({
      type,
      description: `A queued write ended ${status === 'needs_review' ? 'needing review (its outcome is unknown or needs a person)' : status}.`,
      streams: ['writes'],
      recordId: 'the write id',
      record: writeRecord,
      changes: closedObject({ status: fieldChange({ type: 'string', enum: ['queued', 'sending'] }, { const: status }) }),
    }),
  ),
  {
    type: WRITE_DUPLICATED,
    description: 'A write turned out to have been applied twice (beside its write.needs_review); result.ledgerIds names both records.',
    streams: ['writes'],
    recordId: 'the write id',
    record: writeRecord,
    changes: anyChanges,
  },
  {
    type: RECORD_REJECTED,
    description: "A list item failed its stream's schema and was quarantined.",
    streams: STREAM_NAMES,
    recordId: 'the item\'s id, or raw:<sha256> when it has none',
    record: { description: 'the item as received, secrets removed' },
    changes: noChanges,
    error: true,
  },
  {
    type: FIELD_ADDED_EVENT,
    description: "A stream's records carried, for the first time, a field its definition does not declare.",
    streams: STREAM_NAMES,
    recordId: "the field's dot path",
    record: closedObject({ stream: { enum: [...STREAM_NAMES] }, field: nonEmptyString, exampleRecordId: nonEmptyString, firstSeenAt: dateTime }),
    changes: noChanges,
  },
  streamEvent(MASS_DELETION_HELD, 'A complete scan would have tombstoned more than sync.massDeletionShare of the stream and tombstoned none.', {
    held: { type: 'integer', minimum: 0, description: 'records the scan did not list' },
    live: { type: 'integer', minimum: 0, description: "the stream's live records" },
    share: { type: 'number', minimum: 0, maximum: 1, description: 'sync.massDeletionShare' },
    scanNumber: { type: 'integer', minimum: 0 },
    partition: { type: 'string', minLength: 1, description: 'the partition whose scan held them (a partitioned stream)' },
  }, ['partition']),
  ...(
    [
      [STREAM_FAILING, 'failing', 'The stream failed sync.failingAfterRuns runs in a row (said once; stream.recovered follows its next success).'],
      [STREAM_STALE, 'stale', 'The stream had no successful run for sync.staleAfterSchedules of its schedule intervals, and at least sync.staleMinimumSeconds (said once).'],
      [STREAM_RECOVERED, 'ok', 'A run of the stream succeeded after it was failing, stale or unsupported.'],
      [STREAM_UNSUPPORTED, 'unsupported', "The stream's list answered 404 while the other lists answered: marked unsupported (its records arrive from write responses only)."],
    ] as const
  ).map(([type, condition, description]) =>
    streamEvent(type, description, {
      condition: { const: condition, description: 'the condition the stream entered' },
      previous: { enum: [...STREAM_CONDITIONS], description: 'the condition it left' },
      previousSince: { ...nullable(dateTime), description: 'when the condition it left began; null when it was ok from the start' },
      at: { ...dateTime, description: 'when the condition changed' },
      failedRuns: { type: 'integer', minimum: 0, description: 'failed runs in a row since the last success' },
      lastSuccessAt: { ...nullable(dateTime), description: "the last successful run's end" },
      lastError: { ...nullable(string), description: "the last run's error; null after a success" },
      partition: { type: 'string', minLength: 1, description: "the partition whose condition changed (a partitioned stream's partition: docs/sync.md \"Partitioned streams\"); absent for the stream's own" },
    }, ['partition']),
  ),
  {
    type: ENDPOINT_DISABLED_EVENT,
    description: 'A webhook endpoint was disabled (410 Gone, or no 2xx for disableAfterDays).',
    streams: ['webhooks'],
    recordId: "the endpoint's name",
    record: closedObject({
      endpoint: nonEmptyString,
      url: { type: 'string', description: 'without credentials or query' },
      kind: { enum: ['gone', 'failing'] },
      reason: string,
      failingSince: dateTime,
      disabledAt: dateTime,
    }),
    changes: closedObject({ enabled: fieldChange({ const: true }, { const: false }) }),
  },
  {
    type: SINK_DISABLED_EVENT,
    description: 'A sink (NATS JetStream, RabbitMQ, Redis Streams) was disabled: no acknowledgement for disableAfterDays.',
    streams: ['sinks'],
    recordId: "the sink's name",
    record: closedObject({
      sink: nonEmptyString,
      sinkKind: { enum: ['nats', 'rabbitmq', 'redis-stream'] },
      url: { type: 'string', description: 'without credentials' },
      kind: { enum: ['gone', 'failing'] },
      reason: string,
      failingSince: dateTime,
      disabledAt: dateTime,
    }),
    changes: closedObject({ enabled: fieldChange({ const: true }, { const: false }) }),
  },
  ...(
    [
      [SINK_FAILING_EVENT, 'failing', 'A sink was taken for down: 5 publishes in a row failed (its broker unreachable or refusing); said once, sink.recovered follows its next acknowledgement. Not sent to that sink.'],
      [SINK_RECOVERED_EVENT, 'ok', 'A sink that was taken for down acknowledged a publish again. Not sent to that sink.'],
    ] as const
  ).map(([type, condition, description]) => ({
    type,
    description,
    streams: ['sinks'],
    recordId: "the sink's name",
    record: closedObject({
      sink: nonEmptyString,
      sinkKind: { enum: ['nats', 'rabbitmq', 'redis-stream'] },
      url: { type: 'string', description: 'without credentials' },
      condition: { const: condition, description: 'the condition the sink entered' },
      failingSince: { ...dateTime, description: 'when its failed publishes in a row began' },
      consecutiveFailures: { type: 'integer', minimum: 1, description: 'its failed publishes in a row: so far (failing), or before the acknowledgement that ended them (ok)' },
      lastError: { ...nullable(string), description: 'the last failed publish\'s error (one line, no secret)' },
      at: { ...dateTime, description: 'when the condition changed' },
    }),
    changes: noChanges,
  })),
];

/** The record events of one stream: created, updated, the stream's own, and its gone event. */
export function streamEventTypes(stream: RegisteredStream): EventTypeEntry[] {
  const record = streamRecordSchema(stream);
  const changes = streamChangesSchema(stream);
  return stream.changes.events.map((type) => ({
    type,
    description:
      type === stream.changes.gone
        ? `A record of ${stream.name} gone from two consecutive complete scans (tombstoned); data.record is its last version.`
        : `A record of ${stream.name} created or changed; data.record is the record as the mirror stores it after the change (${stream.specSection === 'not shown' ? 'an endpoint the spec does not show' : `spec ${stream.specSection}`}).`,
    streams: [stream.name],
    recordId: `the record's ${stream.key}`,
    record,
    changes: type === stream.changes.gone ? closedObject({ deletedAt: fieldChange({ type: 'null' }, dateTime) }) : changes,
  }));
}

/**
 * A stream's snapshot event (`deals.snapshot`, src/notify/snapshot.ts): one per live record, sent to
 * a reader that starts from a snapshot; not in the changelog. `data.seq` is the snapshot's boundary.
 */
export function snapshotEventEntry(stream: RegisteredStream): EventTypeEntry {
  return {
    type: snapshotEventType(stream.name),
    description: `A live record of ${stream.name} as it stood at the snapshot's boundary (data.seq), sent to a reader starting from a snapshot before the changes after it; not in the changelog.`,
    streams: [stream.name],
    recordId: "the record's id",
    record: streamRecordSchema(stream),
    changes: noChanges,
  };
}

/** Every event type the changelog can hold, stream record events first (registry order), then `OTHER_EVENT_TYPES`. */
export function changelogEventTypes(streams: readonly RegisteredStream[] = STREAM_LIST): EventTypeEntry[] {
  return [...streams.flatMap(streamEventTypes), ...OTHER_EVENT_TYPES];
}

let knownTypes: readonly string[] | undefined;

/**
 * The type of every event the changelog can hold (`changelogEventTypes` of the registered streams),
 * in the order docs/events.md lists them: what a type pattern (`GET /changes?types=`, `changes
 * --type`) must match one of. Computed once.
 */
export function knownEventTypes(): readonly string[] {
  knownTypes ??= changelogEventTypes().map((entry) => entry.type);
  return knownTypes;
}

/** True when one of `streams` is a partitioned stream (its events may carry `data.partition`). */
function partitionedStreams(streams: readonly string[]): boolean {
  return STREAM_LIST.some((stream) => stream.partitions !== undefined && streams.includes(stream.name));
}

/** The JSON Schema of one changelog event type's body (module comment). */
export function eventSchema(entry: EventTypeEntry): JsonSchema {
  const streamSchema = entry.streams.length === 1 ? { const: entry.streams[0] } : { enum: [...entry.streams] };
  const data: Record<string, JsonSchema> = {
    seq: { type: 'integer', minimum: 1, description: "the event's position in the changelog (ascending; gaps are events an endpoint's filter skipped or the retention pruned)" },
    stream: streamSchema,
    record_id: { type: 'string', minLength: 1, description: entry.recordId },
    record: entry.record,
    changes: entry.changes,
    ...(entry.error ? { error: { type: 'string', description: 'why the item failed: the field and the rule' } } : {}),
    ...(partitionedStreams(entry.streams) ? { partition: { type: 'string', minLength: 1, description: 'the partition the record was listed in (a partitioned stream: docs/sync.md "Partitioned streams")' } } : {}),
  };
  return {
    $schema: JSON_SCHEMA_DIALECT,
    $id: eventSchemaId(entry.type),
    title: entry.type,
    description: entry.description,
    type: 'object',
    properties: {
      id: { type: 'string', pattern: '^evt_', description: "the event id (webhook-id); in the pull API's events only (webhooks send it as the webhook-id header)" },
      type: { const: entry.type },
      timestamp: { ...dateTime, description: 'when the mirror recorded the change' },
      data: closedObject(data, partitionedStreams(entry.streams) ? ['partition'] : []),
    },
    required: ['type', 'timestamp', 'data'],
    additionalProperties: false,
  };
}

/** The schema of `webhook.test` (`webhooks send-test`): outside the changelog, so no `seq`, `stream` or record. */
function testEventSchema(): JsonSchema {
  return {
    $schema: JSON_SCHEMA_DIALECT,
    $id: eventSchemaId(TEST_EVENT_TYPE),
    title: TEST_EVENT_TYPE,
    description: 'Sent by bizops-sync webhooks send-test to one endpoint; not in the changelog (a fresh id each time).',
    type: 'object',
    properties: {
      type: { const: TEST_EVENT_TYPE },
      timestamp: dateTime,
      data: closedObject({ endpoint: nonEmptyString, message: string }),
    },
    required: ['type', 'timestamp', 'data'],
    additionalProperties: false,
  };
}

/**
 * Every event type's schema by type: each stream's record events, the other changelog events, and
 * `webhook.test`. Built once per call; `GET /schemas` and docs/events.md show exactly this.
 */
export function eventSchemas(streams: readonly RegisteredStream[] = STREAM_LIST): Record<string, JsonSchema> {
  const schemas: Record<string, JsonSchema> = {};
  for (const entry of changelogEventTypes(streams)) schemas[entry.type] = eventSchema(entry);
  for (const stream of streams) schemas[snapshotEventType(stream.name)] = eventSchema(snapshotEventEntry(stream));
  schemas[TEST_EVENT_TYPE] = testEventSchema();
  return schemas;
}
