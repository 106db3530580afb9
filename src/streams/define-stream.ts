/**
 * What a stream is: DATA, in the manner of Airbyte's declarative streams. One engine
 * (src/sync/sync-engine.ts) runs every stream, and the mirror (src/mirror/) stores every stream, from its
 * definition alone: the list request, the record's key and schema, its mirror table and columns, the
 * fields that make up its content, and how its changes are named.
 *
 * `defineStream` keeps the record type the item schema validates (`T`), the stream's literal name
 * and its event names, so a definition's `classify` reads typed records and can only name the
 * events the definition declares.
 */
import { storableItems, type ItemSchema } from '../client/schemas.ts';

/** A record as the API returned it, validated by its stream's item schema. */
export type ApiRecord = Record<string, unknown>;

/** SQLite column types the mirror uses (the declared type of a stream table's column). */
export type ColumnType = 'TEXT' | 'INTEGER' | 'REAL';

/** One typed column of a stream table and the record field (dot path) it holds. */
export interface ColumnDefinition {
  /** snake_case column name, e.g. `reference_id`, `user_fullname`. */
  column: string;
  /** Dot path into the record, e.g. `referenceId`, `user.fullname`. */
  field: string;
  type: ColumnType;
  /** `NOT NULL` (a record without the field fails to store, so only for fields every list item carries). */
  notNull: boolean;
  /** The record key's column (`id TEXT PRIMARY KEY`). */
  primaryKey: boolean;
  /** What the docs say of the value besides its type, e.g. its unit (`cents`, `signed cents`); none by default. */
  note?: string;
}

/**
 * How incremental runs find what changed:
 * - `updatedAfter`: ask for records updated after the cursor minus the lookback (spec §1 Pagination).
 * - `complete-scan`: every run lists the whole stream. For lists where leaving IS the change (an
 *   onboarding that completes disappears, spec §4.1), so each run feeds the two-scan rule.
 */
export type CursorKind = 'updatedAfter' | 'complete-scan';

/** The list request of a stream (spec §1 Pagination): `GET {path}?limit=100&offset=...&sortBy=...`. */
export interface StreamRequest {
  /** List endpoint under /api/public/v1, e.g. `/transactions`. */
  path: string;
  /** Member of the response `content` holding the item array, e.g. `transactions`. */
  itemsKey: string;
  /**
   * The page order. Always creation time ascending: an update never moves a record and new records
   * land at the end, which the engine's frozen set (`createdBefore`) and drift step-back rely on
   * (docs/sync.md "Offset drift").
   */
  sort: { by: 'createdAt'; order: 'asc' };
  /** Fixed filters sent with every page (e.g. `{ status: 'OPEN' }`); none by default. */
  filters?: Readonly<Record<string, string | number | boolean | readonly string[]>>;
  cursor: CursorKind;
  /**
   * Seconds subtracted from the cursor for each incremental run (clock skew, ties). Default: the
   * configuration's `sync.overlapSeconds`.
   */
  lookbackSeconds?: number;
  /** A 404 marks the stream unsupported instead of failing the run (an endpoint the spec does not show: `GET /deals`). */
  unsupportedOn404: boolean;
  /**
   * The list accepts `createdAfter` and `createdBefore` (spec §1 Pagination: every list endpoint
   * does), so a range backfill may run on it (docs/sync.md "Range backfill"). False refuses
   * `backfill --created-after/--created-before` on the stream, naming it.
   */
  acceptsCreatedRange: boolean;
}

/**
 * Where a partitioned stream's values come from when the configuration (`sync.partitions.<stream>.<param>`,
 * which always wins) names none:
 * - `configuration`: only from there; without it the stream has no partition and sends nothing.
 * - `stream`: the distinct values of a column of another stream already in the mirror (its live
 *   records), e.g. the deals' `locationId`; read when a run starts.
 */
export type PartitionValues = { from: 'configuration' } | { from: 'stream'; stream: string; field: string };

/**
 * A list that requires a parameter (spec §4.4: `locationId`) is read once per value: each value is a
 * partition with its own sync state, checkpoint, cursor and scans (docs/sync.md "Partitioned streams").
 * `param` is also a field of the stream's records with a column: a partition's records are those
 * whose column holds its value, so misses and tombstones stay inside it.
 */
export interface StreamPartitions {
  /** The query parameter, e.g. `locationId`; a record field with a column. */
  param: string;
  values: PartitionValues;
}

/**
 * A stream: everything the engine and the mirror need to run and store it. `T` is the validated
 * list item, `Name` the stream's name (also its mirror table), `Event` the change types it emits.
 */
export interface StreamDefinition<T extends ApiRecord = ApiRecord, Name extends string = string, Event extends string = string> {
  /** The stream's name: `--stream`, `sync.streams`, `status`, metric labels, the changelog's `stream`. */
  name: Name;
  /**
   * Where the API specification describes the list, for the docs' stream tables: a section (`§4.13`,
   * `§4 general notes`), or `not shown` for an endpoint the spec does not describe (an assumption).
   */
  specSection: string;
  request: StreamRequest;
  /** Present for a list read once per value of a required parameter (`StreamPartitions`); absent: one list. */
  partitions?: StreamPartitions;
  /** Validates one list item: lenient to unknown fields (kept in `raw`), strict on stored ones. */
  itemSchema: ItemSchema<T>;
  /** The record field that identifies it (the mirror's primary key); `defineStream` checks it is a field of `T`. */
  key: string;
  /** The mirror table (public contract: docs/mirror.md). Same as `name`. */
  table: Name;
  /** Typed columns and the fields they hold; the bookkeeping columns (raw, content_hash, ...) are added by the mirror. */
  columns: readonly ColumnDefinition[];
  /**
   * Fields that define the record's content for change detection: the ones the list endpoint
   * returns. A write response may carry more (a transaction's `counterpartyName`); those are stored
   * but do not make a later list page look like a change.
   */
  listedFields: readonly string[];
  changes: {
    /** Every change type the stream emits (for docs and webhook filters), e.g. `deal.won`. */
    events: readonly Event[];
    /**
     * Names the change from the stored record (undefined when new, or tombstoned and listed again)
     * to the listed one.
     * @param changed the listed fields whose value differs
     */
    classify(previous: T | undefined, next: T, changed: readonly string[]): Event;
    /** The change type when a record is gone from two consecutive complete scans. */
    gone: Event;
  };
}

/** What `defineStream` takes: the definition without what it derives (`table`), its key a field of `T`. */
export type StreamDefinitionInput<T extends ApiRecord, Name extends string, Event extends string> = Omit<StreamDefinition<T, Name, Event>, 'table' | 'key'> & {
  key: keyof T & string;
};

/**
 * Describes a stream, keeping its record type, name and event names.
 * @throws Error naming the stream when its key has no primary-key column, a listed field has no
 *   column, `gone` is not one of its events, or its partition parameter has no column
 */
export function defineStream<T extends ApiRecord, const Name extends string, const Event extends string>(
  definition: StreamDefinitionInput<T, Name, Event>,
): StreamDefinition<T, Name, Event> {
  const keyColumn = definition.columns.find((column) => column.primaryKey);
  if (keyColumn?.field !== definition.key) throw new Error(`stream ${definition.name}: the key ${definition.key} needs the one primary-key column`);
  const fields = new Set(definition.columns.map((column) => column.field));
  for (const field of definition.listedFields) {
    if (!fields.has(field)) throw new Error(`stream ${definition.name}: listed field ${field} has no column`);
  }
  if (!definition.changes.events.includes(definition.changes.gone)) throw new Error(`stream ${definition.name}: changes.gone must be one of changes.events`);
  if (definition.partitions && !fields.has(definition.partitions.param)) {
    throw new Error(`stream ${definition.name}: partitions.param ${definition.partitions.param} must be a record field with a column`);
  }
  // A record the mirror cannot store (a NUL character) is an invalid item, quarantined, never fatal to its stream.
  return { ...definition, itemSchema: storableItems(definition.itemSchema), table: definition.name };
}

/**
 * The list request of a stream: `GET {path}` with the items under `content[itemsKey]`, sorted by
 * creation time ascending (the only order the engine pages in). `acceptsCreatedRange` defaults to
 * true: the spec's lists all take the standard pagination parameters (§1 Pagination).
 */
export function listRequest(
  path: string,
  itemsKey: string,
  options: Omit<StreamRequest, 'path' | 'itemsKey' | 'sort' | 'unsupportedOn404' | 'acceptsCreatedRange'> & { unsupportedOn404?: boolean; acceptsCreatedRange?: boolean },
): StreamRequest {
  return { path, itemsKey, sort: { by: 'createdAt', order: 'asc' }, unsupportedOn404: false, acceptsCreatedRange: true, ...options };
}

/** `referenceId` -> `reference_id`, `user.fullname` -> `user_fullname`. */
function snakeCase(field: string): string {
  return field.replace(/\./g, '_').replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}

/**
 * One column for `field` (a dot path), named in snake_case.
 * @param options `notNull` for fields every list item carries; `primaryKey` for the record key;
 *   `note` for the docs (a unit: `cents`)
 */
export function column(field: string, type: ColumnType, options: { notNull?: boolean; primaryKey?: boolean; note?: string } = {}): ColumnDefinition {
  return { column: snakeCase(field), field, type, notNull: options.notNull ?? false, primaryKey: options.primaryKey ?? false, ...(options.note ? { note: options.note } : {}) };
}

/** Reads a dot path (`user.fullname`) from a record; undefined when any step is missing. */
export function readField(record: ApiRecord, path: string): unknown {
  if (!path.includes('.')) return record[path];
  let node: unknown = record;
  for (const part of path.split('.')) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

/**
 * The column holding a partitioned stream's partition parameter (`partitions.param`), or undefined
 * for an unpartitioned stream.
 */
export function partitionColumn(stream: Pick<StreamDefinition, 'partitions' | 'columns'>): string | undefined {
  if (!stream.partitions) return undefined;
  const param = stream.partitions.param;
  return stream.columns.find((candidate) => candidate.field === param)?.column;
}
