/**
 * A new reader starts from a snapshot (docs/mirror.md "Starting from a snapshot"): a named consumer,
 * a webhook endpoint or a sink that asks for `initial: "snapshot"` first receives the current rows of
 * its streams, one `<stream>.snapshot` event per live record, then every change after the snapshot's
 * boundary, with no gap and no duplicate across it.
 *
 * The boundary is the changelog's last seq when the snapshot starts; the reader's cursor waits
 * there. The rows are read in pages by key, while the sync goes on. A row is sent only when no
 * change of its record was recorded after the boundary (checked after the row was read): it then
 * holds the record as it stood at the boundary (a record and its change commit together). A row
 * changed after the boundary is left out: its first change after the boundary carries the whole
 * record (a change's `data.record` is the record after it), and that change comes next, so the
 * reader gets the record exactly once and nothing in between is lost. A record tombstoned at the
 * boundary is not live and not sent; one created or tombstoned after it arrives by its change.
 *
 * Each snapshot event has `seq` = the boundary, `changes` `{}`, and an id derived from the
 * boundary, the stream and the record (`evt_` + a UUID of their hash): the same on every attempt.
 */
import { createHash } from 'node:crypto';
import { lastChangeSeq } from '../mirror/changelog-format.ts';
import type { SqlExecutor } from '../mirror/sql/executor.ts';
import { STREAM_LIST, type RegisteredStream } from '../streams/definitions.ts';
import type { ChangeEvent } from './changelog-reader.ts';
import type { EventTypeFilter } from './event-filter/index.ts';

/** Where a snapshot stands (kept as JSON in `webhook_endpoints.snapshot`, `consumers.snapshot`). */
export interface SnapshotState {
  /** The changelog seq it stands at: the reader's cursor waits there until the snapshot is done. */
  boundary: number;
  /** The streams it reads, in order. */
  streams: string[];
  /** The stream being read; null once every stream was read (done). */
  stream: string | null;
  /** The last record id sent of `stream` (by key order); null before its first. */
  after: string | null;
  /** When it started (ISO 8601): every snapshot event's `timestamp`, the same on every attempt. */
  at: string;
}

/** The event type of a stream's snapshot event: `<stream>.snapshot` (`deals.snapshot`). */
export function snapshotEventType(stream: string): string {
  return `${stream}.snapshot`;
}

/** True for a `<stream>.snapshot` type of a registered stream. */
export function isSnapshotEventType(type: string): boolean {
  return STREAM_LIST.some((stream) => snapshotEventType(stream.name) === type);
}

/**
 * The streams a reader with `filter` snapshots: those whose snapshot type, or any of whose change
 * types, the filter lets through (a filter of `deal.*` snapshots deals; `*` every stream).
 */
export function snapshotStreams(filter: EventTypeFilter = () => true): string[] {
  return STREAM_LIST.filter((stream) => filter(snapshotEventType(stream.name)) || stream.changes.events.some((type) => filter(type))).map((stream) => stream.name);
}

/** A snapshot starting now: its boundary the changelog's last seq (read in the caller's transaction when given one). */
export async function startSnapshot(executor: SqlExecutor, streams: readonly string[]): Promise<SnapshotState> {
  return { boundary: await lastChangeSeq(executor), streams: [...streams], stream: streams[0] ?? null, after: null, at: new Date().toISOString() };
}

/** The snapshot as stored (JSON text), or null. @throws Error naming the column when it is not a snapshot */
export function parseSnapshot(text: string | null): SnapshotState | null {
  if (text === null) return null;
  const parsed = JSON.parse(text) as SnapshotState;
  if (typeof parsed?.boundary !== 'number' || !Array.isArray(parsed.streams)) throw new Error(`snapshot: not a snapshot state: ${text.slice(0, 100)}`);
  return parsed;
}

/** A page of snapshot events and where the snapshot stands after them. */
export interface SnapshotPage {
  events: ChangeEvent[];
  /** The state once these events are handled: `stream` null when the snapshot is done. */
  next: SnapshotState;
}

/** Rows read per query. */
const ROWS_PER_QUERY = 500;

/**
 * The next events of a snapshot, at most `limit`, from where `state` stands (module comment: rows
 * changed after the boundary are left out). A page shorter than `limit` may still be followed by
 * more: read until `next.stream` is null.
 */
export async function readSnapshotPage(executor: SqlExecutor, state: SnapshotState, limit: number): Promise<SnapshotPage> {
  const events: ChangeEvent[] = [];
  let next: SnapshotState = { ...state };
  while (next.stream !== null && events.length < limit) {
    const stream = STREAM_LIST.find((candidate) => candidate.name === next.stream);
    if (!stream) {
      next = advance(next);
      continue;
    }
    const key = keyColumn(stream);
    const rows = await executor.all<{ id: string; raw: string }>(
      `SELECT ${key} AS id, raw FROM ${stream.table} WHERE deleted_at IS NULL${next.after === null ? '' : ` AND ${key} > ?`} ORDER BY ${key} LIMIT ?`,
      next.after === null ? [Math.min(ROWS_PER_QUERY, limit - events.length)] : [next.after, Math.min(ROWS_PER_QUERY, limit - events.length)],
    );
    if (rows.length === 0) {
      next = advance(next);
      continue;
    }
    // After the rows were read: their records changed since the boundary are left to their changes.
    const changed = new Set(
      (
        await executor.all<{ record_id: string }>(
          `SELECT DISTINCT record_id FROM changes WHERE seq > ? AND stream = ? AND record_id IN (${rows.map(() => '?').join(', ')})`,
          [state.boundary, stream.name, ...rows.map((row) => String(row.id))],
        )
      ).map((row) => row.record_id),
    );
    for (const row of rows) {
      const id = String(row.id);
      if (!changed.has(id)) events.push(snapshotEvent(stream, id, row.raw, state.boundary, state.at));
    }
    next = { ...next, after: String(rows.at(-1)!.id) };
  }
  return { events, next };
}

/** The next stream of the snapshot (or done). */
function advance(state: SnapshotState): SnapshotState {
  const index = state.stream === null ? -1 : state.streams.indexOf(state.stream);
  return { ...state, stream: state.streams[index + 1] ?? null, after: null };
}

function snapshotEvent(stream: RegisteredStream, id: string, raw: string, boundary: number, at: string): ChangeEvent {
  const hash = createHash('sha256').update(`${boundary}\u0000${stream.name}\u0000${id}`).digest('hex');
  const eventId = `evt_${hash.slice(0, 8)}-${hash.slice(8, 12)}-5${hash.slice(13, 16)}-8${hash.slice(17, 20)}-${hash.slice(20, 32)}`;
  return {
    seq: boundary,
    eventId,
    type: snapshotEventType(stream.name),
    stream: stream.name,
    recordId: id,
    occurredAt: at,
    version: 2,
    data: { record: JSON.parse(raw) as Record<string, unknown>, changes: {} },
  };
}

function keyColumn(stream: RegisteredStream): string {
  return stream.columns.find((column) => column.primaryKey)?.column ?? 'id';
}
