/**
 * Reading the changelog: the append-only `changes` table of the mirror (docs/mirror.md,
 * src/mirror/migrations/001_mirror.ts). The sync engine appends a row in the same
 * transaction as the record it changed; this module only reads.
 *
 * Cursors are `seq` values and exclusive: `sinceSeq: 41` reads seq 42 onwards, so a reader that
 * stores the last seq it handled resumes exactly after it. SQLite has one writer at a time and
 * `seq` is AUTOINCREMENT, so rows become visible in seq order: a reader never sees seq 43 and later
 * a seq 42 that committed behind it.
 *
 * Every function reads through a `SqlExecutor` (src/mirror/sql/executor.ts), whichever back end holds
 * the mirror, and is asynchronous.
 */
import { CHANGE_DATA_VERSION, decodeChangeData, derivedChanges, lastChangeSeq, type ChangeData } from '../mirror/changelog-format.ts';
import { CHANGES_CHANNEL, type Listening, type SqlExecutor, type SqlReaderNow, type SqlValue } from '../mirror/sql/executor.ts';
import { validateEventPattern } from './event-filter/index.ts';
import { Wakeup } from './delivery/wakeup.ts';
import { plantedBug } from '../logging/planted-bugs.ts';

/** One changelog row. */
export interface ChangeEvent {
  /** Position in the changelog, ascending; the cursor of every reader. */
  seq: number;
  /** Unique and stable: the webhook-id of every delivery of this event. */
  eventId: string;
  /** e.g. `deal.won`, `transaction.created`, `onboarding.completed`, `write.succeeded`. */
  type: string;
  /** A registered stream's name (`transactions`, `deals`, ...), or `writes`. */
  stream: string;
  recordId: string;
  /**
   * The partition the record was listed in, for a partitioned stream (docs/sync.md "Partitioned
   * streams"), e.g. a location's id; absent otherwise.
   */
  partition?: string;
  /** ISO 8601: when the mirror recorded the change. */
  occurredAt: string;
  /**
   * The format version the row's `data` was stored in (src/mirror/changelog-format.ts): 1 (older rows) or
   * 2. `data` reads the same for both: a new record's `changes` are derived when not stored.
   * Always set by `readChanges`; an event built by hand without it counts as 1.
   */
  version?: number;
  data: ChangeData;
  /**
   * `data` as JSON text, exactly `JSON.stringify(data)`, built from the stored row's text without
   * encoding its record again: set by `readChanges` with `dataJson: true` (the delivery core, whose
   * bodies splice it in: event-payload.ts `webhookBody`), absent otherwise.
   */
  dataJson?: string;
}

/**
 * One changelog row as stored: the columns, with `data` the column's JSON text undecoded (the
 * `changes` command prints it as it is: `formatStoredChangeLine`).
 */
export interface StoredChange {
  seq: number;
  eventId: string;
  type: string;
  stream: string;
  recordId: string;
  /** `partition_value`: the partition a partitioned stream's record was listed in; absent otherwise. */
  partition?: string;
  occurredAt: string;
  /** The `data` column: JSON text in format version 1 or 2 (src/mirror/changelog-format.ts). */
  data: string;
}

/** Options of `readChanges`: an exclusive seq cursor, a page size and a type filter. */
export interface ReadChangesOptions {
  /** Read events with seq greater than this (exclusive cursor). Default 0: from the start. */
  sinceSeq?: number;
  /** At most this many events (1 to 10000). Default 100. */
  limit?: number;
  /** Only these event types: exact (`deal.won`), prefix wildcard (`deal.*`) or `*` (see event-filter/index.ts). */
  types?: readonly string[];
  /** Also set each event's `dataJson` (from the stored text). Default false. */
  dataJson?: boolean;
}

interface ChangeRow {
  seq: number;
  event_id: string;
  type: string;
  stream: string;
  record_id: string;
  occurred_at: string;
  data: string;
  partition_value: string | null;
}

const MAX_LIMIT = 10_000;
const SELECT_COLUMNS = 'SELECT seq, event_id, type, stream, record_id, occurred_at, data, partition_value FROM changes';
/** The page query of every type (`typeClause(['*'])` adds nothing). */
const ALL_TYPES_SQL = `${SELECT_COLUMNS} WHERE seq > ? ORDER BY seq LIMIT ?`;


/**
 * Reads up to `limit` events after `sinceSeq`, in seq order, with `data` parsed.
 * @throws Error naming the option when `sinceSeq`, `limit` or a type pattern is invalid (the promise rejects)
 * @throws Error naming the seq when a row's `data` is not valid JSON
 */
export async function readChanges(executor: SqlExecutor, options: ReadChangesOptions = {}): Promise<ChangeEvent[]> {
  const rows = await selectChangeRows(executor, options);
  return options.dataJson ? rows.map((row) => storedToChangeEventWithJson(toStoredChange(row))) : rows.map(toChangeEvent);
}

/** The rows `readChanges` reads, as the driver returns them. */
async function selectChangeRows(executor: SqlExecutor, options: ReadChangesOptions): Promise<ChangeRow[]> {
  const { sql, parameters } = changeRowsQuery(options);
  return executor.all<ChangeRow>(sql, parameters);
}

/** The statement of `selectChangeRows`. @throws Error naming the option when an option is invalid */
function changeRowsQuery(options: ReadChangesOptions): { sql: string; parameters: SqlValue[] } {
  const sinceSeq = checkSeq(options.sinceSeq ?? 0, 'sinceSeq');
  const limit = options.limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    throw new Error(`limit: must be an integer from 1 to ${MAX_LIMIT}, got ${String(limit)}`);
  }
  if (options.types === undefined) return { sql: ALL_TYPES_SQL, parameters: [sinceSeq, limit] };
  const { clause, parameters } = typeClause(options.types);
  return { sql: `${SELECT_COLUMNS} WHERE seq > ?${clause} ORDER BY seq LIMIT ?`, parameters: [sinceSeq, ...parameters, limit] };
}

/**
 * The rows of `readChanges` undecoded (each with its `data` text): what the pull API encodes into
 * its pages (`encodePulledEvent`) without decoding and encoding each record again.
 * @throws Error naming the option when `sinceSeq`, `limit` or a type pattern is invalid (the promise rejects)
 */
export async function readStoredChanges(executor: SqlExecutor, options: ReadChangesOptions = {}): Promise<StoredChange[]> {
  return (await selectChangeRows(executor, options)).map(toStoredChange);
}

/**
 * `readStoredChanges` read at once (a SQLite connection's `readNow`).
 * @throws Error naming the option when `sinceSeq`, `limit` or a type pattern is invalid
 */
export function readStoredChangesNow(reader: SqlReaderNow, options: ReadChangesOptions = {}): StoredChange[] {
  const { sql, parameters } = changeRowsQuery(options);
  return reader.allNow<ChangeRow>(sql, parameters).map(toStoredChange);
}

/** Options of `iterateChanges`: an exclusive seq cursor, a type filter and the rows per query. */
export interface IterateChangesOptions {
  /** Read events with seq greater than this (exclusive cursor). Default 0: from the start. */
  sinceSeq?: number;
  /** Only these event types (patterns as in `readChanges`). */
  types?: readonly string[];
  /** Rows per query (1 to 10000). Default 1000. */
  batchSize?: number;
}

/**
 * Every event after `sinceSeq` up to the changelog's end, in seq order, decoded one row at a time:
 * memory stays the same whatever the changelog's length (at most one query's `batchSize` raw rows
 * and one decoded event in hand, never a batch of decoded events).
 * Each query reads `batchSize` rows and ends, so no read transaction stays open for the whole
 * changelog (the writer's WAL checkpoints go on while a long read runs). The next query runs only
 * when the consumer asks for the next event, so a slow consumer holds the reading back.
 * @throws Error naming the option when an option is invalid (at the first iteration); Error naming
 *   the seq when a row's `data` is not JSON
 */
export async function* iterateChanges(executor: SqlExecutor, options: IterateChangesOptions = {}): AsyncGenerator<ChangeEvent, void, undefined> {
  for await (const rows of iterateStoredChanges(executor, options)) for (const row of rows) yield storedToChangeEvent(row);
}

/**
 * The rows of `iterateChanges` undecoded, one query's rows at a time (at most `batchSize`, each
 * with its `data` text): what `bizops-sync changes` prints, without decoding and encoding each
 * record again. Same cursor, filter and memory rules as `iterateChanges`; the next query runs
 * when the consumer asks for the next batch.
 * @throws Error naming the option when an option is invalid (at the first iteration)
 */
export async function* iterateStoredChanges(executor: SqlExecutor, options: IterateChangesOptions = {}): AsyncGenerator<StoredChange[], void, undefined> {
  let cursor = checkSeq(options.sinceSeq ?? 0, 'sinceSeq');
  const batchSize = options.batchSize ?? 1000;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_LIMIT) {
    throw new Error(`batchSize: must be an integer from 1 to ${MAX_LIMIT}, got ${String(batchSize)}`);
  }
  const { clause, parameters } = typeClause(options.types ?? ['*']);
  const sql = `${SELECT_COLUMNS} WHERE seq > ?${clause} ORDER BY seq LIMIT ?`;
  for (;;) {
    const rows = await executor.all<ChangeRow>(sql, [cursor, ...parameters, batchSize]);
    if (rows.length > 0) {
      cursor = Number(rows.at(-1)!.seq);
      yield rows.map(toStoredChange);
    }
    if (rows.length < batchSize) return;
  }
}

/** Options of `followChanges`: where to start, how often to poll (ms), and when to stop. */
export interface FollowChangesOptions {
  /** Start after this seq (exclusive). Default: the current end of the changelog (only new events). */
  sinceSeq?: number;
  /** How often to look for new rows when caught up, ms. Default 1000. */
  pollMs?: number;
  /** Ends the iteration (without an error) when aborted. */
  signal?: AbortSignal;
  /** Only these event types (patterns as in `readChanges`). */
  types?: readonly string[];
  /** Rows read per query. Default 500. */
  batchSize?: number;
}

/**
 * Tails the changelog: yields every event after `sinceSeq` in seq order, then waits `pollMs` and
 * yields rows appended since, until `signal` aborts. Works on its own connection while another
 * connection or process writes (WAL: each query sees the latest committed rows). On PostgreSQL it
 * also listens for the writers' notifications (executor.ts `listen`) and reads as soon as one
 * arrives; polling stays the fallback (a missed notification only delays). When listening cannot
 * start, it polls.
 * @throws Error naming the option when an option is invalid (at the first iteration)
 */
export async function* followChanges(executor: SqlExecutor, options: FollowChangesOptions = {}): AsyncGenerator<ChangeEvent, void, undefined> {
  for await (const rows of followStoredChanges(executor, options)) {
    for (const row of rows) {
      if (options.signal?.aborted) return;
      yield storedToChangeEvent(row);
    }
  }
}

/**
 * The rows of `followChanges` undecoded, each read's rows at once (at most `batchSize`): what
 * `bizops-sync changes --follow` prints. Same options and rules as `followChanges`.
 * @throws Error naming the option when an option is invalid (at the first iteration)
 */
export async function* followStoredChanges(executor: SqlExecutor, options: FollowChangesOptions = {}): AsyncGenerator<StoredChange[], void, undefined> {
  const pollMs = options.pollMs ?? 1000;
  if (!Number.isFinite(pollMs) || pollMs < 1) throw new Error(`pollMs: must be a positive number of milliseconds, got ${String(pollMs)}`);
  const batchSize = options.batchSize ?? 500;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_LIMIT) {
    throw new Error(`batchSize: must be an integer from 1 to ${MAX_LIMIT}, got ${String(batchSize)}`);
  }
  const { clause, parameters } = typeClause(options.types ?? ['*']);
  const sql = `${SELECT_COLUMNS} WHERE seq > ?${clause} ORDER BY seq LIMIT ?`;
  let cursor = options.sinceSeq === undefined ? await lastChangeSeq(executor) : checkSeq(options.sinceSeq, 'sinceSeq');
  const signal = options.signal;
  const wakeup = new Wakeup();
  // Listening starts before the first read: a change committed in between is read or wakes the wait.
  const listening = await listenForChanges(executor, () => wakeup.wake());
  try {
    while (!signal?.aborted) {
      const rows = await executor.all<ChangeRow>(sql, [cursor, ...parameters, batchSize]);
      if (rows.length > 0) {
        if (signal?.aborted) return;
        cursor = Number(rows.at(-1)!.seq);
        yield rows.map(toStoredChange);
      }
      if (rows.length === batchSize) continue;
      await wakeup.wait(pollMs, signal);
    }
  } finally {
    await listening?.close();
  }
}

/**
 * Calls `onChange` whenever a transaction that appended change rows commits in the mirror behind
 * `executor`, when its back end can tell (PostgreSQL `LISTEN`, executor.ts `listen`); undefined when
 * it cannot (SQLite, or listening failed: the caller polls, as it does anyway).
 */
export async function listenForChanges(executor: SqlExecutor, onChange: () => void): Promise<Listening | undefined> {
  if (!executor.listen) return undefined;
  try {
    return await executor.listen(CHANGES_CHANNEL, onChange);
  } catch {
    return undefined; // polling stays: a reader that cannot listen is only slower to notice
  }
}

/**
 * One JSON line for `bizops-sync changes` (no trailing newline):
 * `{"seq":42,"version":2,"event_id":"...","type":"deal.won","stream":"deals","record_id":"...","occurred_at":"...","data":{...}}`.
 * Keys use the changelog's column names, so the line reads like the row; `version` is the format
 * the row was stored in, and `data` is `{ record, changes }` for either. A partitioned stream's
 * change also has `"partition":"loc_1"` after `record_id`.
 */
export function formatChangeLine(event: ChangeEvent): string {
  return JSON.stringify({
    seq: event.seq,
    version: event.version ?? 1,
    event_id: event.eventId,
    type: event.type,
    stream: event.stream,
    record_id: event.recordId,
    ...(event.partition === undefined ? {} : { partition: event.partition }),
    occurred_at: event.occurredAt,
    data: event.data,
  });
}

/** Options of `formatStoredChangeLine`. */
export interface StoredChangeLineOptions {
  /**
   * Print a created event's `changes` as version 1 stored them (every listed field as
   * `{ old: null, new }`, derived from the record) instead of leaving them out, as `formatChangeLine`
   * does (`changes --expand-created`). Default false.
   */
  expandCreated?: boolean;
}

/** How `encodeChangeData` starts a version-2 `data` text: its `version` key, left out of a printed line. */
const VERSION_2_PREFIX = `{"version":${CHANGE_DATA_VERSION},`;

/** How a version-2 `data` text starts, up to its record's JSON. */
const VERSION_2_RECORD = `${VERSION_2_PREFIX}"record":`;

/** The soak's planted bug `changes-cut-brace` (src/logging/planted-bugs.ts): a version-2 text spliced one character short. */
const CUT_BRACE = plantedBug('changes-cut-brace') ? -1 : undefined;

/**
 * One JSON line for `bizops-sync changes` (no trailing newline), from the stored row:
 * `{"seq":42,"version":2,"event_id":"...","type":"deal.won","stream":"deals","record_id":"...","occurred_at":"...","data":{...}}`.
 * `data` is the row's `data` as stored, without its `version` key (the line carries it): `{ record,
 * changes }`, and for a created event of version 2 `{ record }` alone, its record printed once
 * (docs/mirror.md "Change data format"; `expandCreated` derives the `changes` as version 1 stored
 * them). A partitioned stream's change has `"partition"` after `record_id`. The stored text is
 * spliced into the line, not decoded and encoded again; a text in the version-2 form (`{"version":2,`
 * ... `}`, the form `encodeChangeData` writes, the only writer of the column) is not parsed at all
 * (docs/decisions.md "what `changes` prints"): parsing every row cost about 1.2 s of CPU per
 * million rows, beside 2.4 s for reading and printing them.
 * @throws Error naming the seq when the row's `data` is not in the version-2 form and is not a JSON object
 */
export function formatStoredChangeLine(row: StoredChange, options: StoredChangeLineOptions = {}): string {
  let data: string;
  let version: number;
  if (!options.expandCreated && isVersion2Text(row.data)) {
    data = withoutVersionKey(row.data);
    version = CHANGE_DATA_VERSION;
  } else {
    const parsed = parseData(row.seq, row.eventId, row.data);
    if (options.expandCreated && parsed.changes === undefined) data = JSON.stringify(decodeChangeData(parsed, row.stream).data);
    else if (row.data.startsWith(VERSION_2_PREFIX)) data = withoutVersionKey(row.data);
    else if ('version' in parsed) data = JSON.stringify({ ...parsed, version: undefined });
    else data = row.data;
    version = typeof parsed.version === 'number' ? parsed.version : 1;
  }
  const partition = row.partition === undefined ? '' : `,"partition":${JSON.stringify(row.partition)}`;
  return `{"seq":${row.seq},"version":${version},"event_id":${JSON.stringify(row.eventId)},"type":${JSON.stringify(row.type)},"stream":${JSON.stringify(row.stream)},"record_id":${JSON.stringify(row.recordId)}${partition},"occurred_at":${JSON.stringify(row.occurredAt)},"data":${data}}`;
}

/**
 * One event of a pull API page as JSON text, from the stored row: exactly
 * `JSON.stringify({ id: eventId, ...webhookPayload(event) })` of the decoded event (event-payload.ts:
 * `{"id":...,"type":...,"timestamp":...,"data":{"record":...,"changes":...,"seq":...,"stream":...,"record_id":...}}`,
 * `"error"` after `changes` for `record.rejected`, `"partition"` after `record_id` for a partitioned
 * stream). A version-2 row's stored text (the only form `encodeChangeData` writes) is spliced in:
 * its record is not encoded again; a created event's `changes` are derived from the record as
 * `decodeChangeData` derives them. Any other stored form goes through the decoded event.
 * @throws Error naming the seq when the row's `data` is not a JSON object
 */
export function encodePulledEvent(row: StoredChange): string {
  const data = openDataJson(row, parseData(row.seq, row.eventId, row.data));
  const partition = row.partition === undefined ? '' : `,"partition":${JSON.stringify(row.partition)}`;
  const tail = `,"seq":${row.seq},"stream":${JSON.stringify(row.stream)},"record_id":${JSON.stringify(row.recordId)}${partition}}`;
  return `{"id":${JSON.stringify(row.eventId)},"type":${JSON.stringify(row.type)},"timestamp":${JSON.stringify(row.occurredAt)},"data":${data}${tail}}`;
}

/**
 * The decoded event's `data` as JSON text without its closing `}`: `JSON.stringify(data)` but its
 * last character. A version-2 row's stored text (the only form `encodeChangeData` writes) is
 * spliced in: its record is not encoded again; a created event's `changes` are derived from the
 * record as `decodeChangeData` derives them. Any other stored form goes through the decoded data.
 * @param parsed the row's `data` text parsed (`parseData`)
 */
function openDataJson(row: StoredChange, parsed: Record<string, unknown>): string {
  const error = typeof parsed.error === 'string' ? parsed.error : undefined;
  const keys = 2 + (parsed.changes === undefined ? 0 : 1) + (error === undefined ? 0 : 1);
  if (parsed.version === CHANGE_DATA_VERSION && row.data.startsWith(VERSION_2_RECORD) && keyCount(parsed) === keys) {
    // `{"version":2,"record":R,"changes":C[,"error":E]}`: the decoded data is the same keys in the same order.
    if (parsed.changes !== undefined) return `{${row.data.slice(VERSION_2_PREFIX.length, -1)}`;
    const errorText = error === undefined ? '' : `,"error":${JSON.stringify(error)}`;
    const record = row.data.slice(VERSION_2_RECORD.length, row.data.length - 1 - errorText.length);
    return `{"record":${record},"changes":${JSON.stringify(derivedChanges(parsed.record, row.stream))}${errorText}`;
  }
  return JSON.stringify(decodeChangeData(parsed, row.stream).data).slice(0, -1);
}

/** A version-2 `data` text without its `version` key: `{"version":2,"record":...}` -> `{"record":...}`. */
function withoutVersionKey(text: string): string {
  return `{${text.slice(VERSION_2_PREFIX.length, CUT_BRACE)}`;
}

/** True for a `data` text in the version-2 form `encodeChangeData` writes: `{"version":2,` ... `}`. */
function isVersion2Text(text: string): boolean {
  return text.startsWith(VERSION_2_PREFIX) && text.endsWith('}');
}

/** How many own keys a parsed JSON object has (`Object.keys(object).length` without the array). */
function keyCount(object: Record<string, unknown>): number {
  let count = 0;
  for (const key in object) if (Object.hasOwn(object, key)) count += 1;
  return count;
}

/** A row's `data` text parsed. @throws Error naming the seq when it is not a JSON object */
function parseData(seq: number, eventId: string, text: string): Record<string, unknown> {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new Error(`changes row seq ${seq} (event ${eventId}): data is not valid JSON (${(error as Error).message})`, { cause: error });
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new Error(`changes row seq ${seq} (event ${eventId}): data is not a JSON object`);
  }
  return data as Record<string, unknown>;
}

function toStoredChange(row: ChangeRow): StoredChange {
  return {
    seq: Number(row.seq),
    eventId: row.event_id,
    type: row.type,
    stream: row.stream,
    recordId: row.record_id,
    ...(row.partition_value === null || row.partition_value === undefined ? {} : { partition: row.partition_value }),
    occurredAt: row.occurred_at,
    data: row.data,
  };
}

function toChangeEvent(row: ChangeRow): ChangeEvent {
  return storedToChangeEvent(toStoredChange(row));
}

function storedToChangeEvent(row: StoredChange): ChangeEvent {
  const decoded = decodeChangeData(parseData(row.seq, row.eventId, row.data), row.stream);
  return { ...row, version: decoded.version, data: decoded.data };
}

/** `storedToChangeEvent` with `dataJson` set, the row's text parsed once for both. */
function storedToChangeEventWithJson(row: StoredChange): ChangeEvent {
  const parsed = parseData(row.seq, row.eventId, row.data);
  const decoded = decodeChangeData(parsed, row.stream);
  return { ...row, version: decoded.version, data: decoded.data, dataJson: `${openDataJson(row, parsed)}}` };
}

function checkSeq(value: number, field: string): number {
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`${field}: must be a non-negative integer seq, got ${String(value)}`);
  return value;
}

/** SQL for a type filter; prefix wildcards use substr so that `_` and `%` in types stay literal. */
function typeClause(types: readonly string[]): { clause: string; parameters: SqlValue[] } {
  if (types.length === 0) throw new Error('types: must list at least one event type pattern ("*" for all)');
  types.forEach((pattern, index) => validateEventPattern(pattern, `types[${index}]`));
  if (types.includes('*')) return { clause: '', parameters: [] };
  const parts: string[] = [];
  const parameters: SqlValue[] = [];
  for (const pattern of types) {
    if (pattern.endsWith('.*')) {
      const prefix = pattern.slice(0, -1);
      parts.push('substr(type, 1, ?) = ?');
      parameters.push(prefix.length, prefix);
    } else {
      parts.push('type = ?');
      parameters.push(pattern);
    }
  }
  return { clause: ` AND (${parts.join(' OR ')})`, parameters };
}
