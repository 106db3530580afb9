/**
 * Named consumers of the changelog over HTTP (`consumers` table, src/mirror/migrations/011_consumers.ts;
 * docs/mirror.md "Named consumers"): a program reads `GET /consumers/NAME/changes` and acknowledges
 * the last seq it handled with `POST /consumers/NAME/ack`; the daemon keeps the cursor. Reading does
 * not move it, so a consumer that dies before acknowledging reads the same events again
 * (at-least-once: deduplicate on the event's `id`). The changelog's retention never prunes past a
 * consumer's cursor. Every function runs through a `SqlExecutor` (src/mirror/sql/executor.ts).
 */
import type { SqlExecutor } from '../../mirror/sql/executor.ts';
import { compileEventFilter } from '../event-filter.ts';
import { webhookPayload } from '../event-payload.ts';
import { parseSnapshot, readSnapshotPage, snapshotStreams, startSnapshot, type SnapshotState } from '../snapshot.ts';
import { ChangesRequestError, changelogEnds, checkAfter, type PulledEvent } from './changes-page.ts';

/** A consumer's name: the URL's NAME. */
export const CONSUMER_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** One consumer (times ISO 8601). */
export interface ConsumerState {
  name: string;
  /** The last seq it acknowledged: its next read starts after it. */
  cursor: number;
  createdAt: string;
  lastReadAt: string | null;
  lastAckAt: string | null;
  /** The snapshot it reads before the changelog (`initial=snapshot`); null when none or done. */
  snapshot: SnapshotState | null;
}

/** A consumer with how far it is behind. */
export interface ConsumerListing extends ConsumerState {
  /** The changelog's last seq − its cursor. */
  lagEvents: number;
  /** now − occurred_at of the oldest event after its cursor, seconds; 0 when caught up. */
  lagSeconds: number;
}

interface ConsumerRow {
  name: string;
  cursor: number;
  created_at: string;
  last_read_at: string | null;
  last_ack_at: string | null;
  snapshot: string | null;
}

/**
 * Checks a consumer's name.
 * @throws ChangesRequestError (400, `name`) naming the rule
 */
export function checkConsumerName(name: string): string {
  if (!CONSUMER_NAME.test(name)) throw new ChangesRequestError(400, 'name', `name: "${name}" is not a consumer name; use 1 to 64 letters, digits, _ . -`);
  return name;
}

/**
 * Registers a consumer (`PUT /consumers/NAME`): a new one starts after `after`, by default at the
 * changelog's end (it receives what is recorded from then on), as a new webhook endpoint does. An
 * existing one is left as it is.
 * @returns its state, and whether it was created
 * @throws ChangesRequestError when the name is not valid (400) or `after` is outside the changelog (400, 410)
 */
export async function registerConsumer(executor: SqlExecutor, name: string, after: number | undefined, now: Date = new Date(), initial: 'end' | 'snapshot' = 'end'): Promise<{ state: ConsumerState; created: boolean }> {
  checkConsumerName(name);
  if (initial === 'snapshot' && after !== undefined) throw new ChangesRequestError(400, 'initial', 'initial: a snapshot starts at the changelog\'s end; leave "after" out');
  return executor.transaction(async (tx) => {
    const existing = await loadConsumer(tx, name);
    if (existing) return { state: existing, created: false };
    const ends = await changelogEnds(tx);
    const snapshot = initial === 'snapshot' ? await startSnapshot(tx, snapshotStreams()) : null;
    const cursor = snapshot?.boundary ?? after ?? ends.latestSeq;
    checkAfter(cursor, ends);
    await tx.run('INSERT INTO consumers (name, cursor, created_at, snapshot) VALUES (?, ?, ?, ?)', [name, cursor, now.toISOString(), snapshot === null ? null : JSON.stringify(snapshot)]);
    return { state: (await loadConsumer(tx, name))!, created: true };
  });
}

/**
 * Starts a consumer over from a snapshot (`POST /consumers/NAME/reset?initial=snapshot`): the
 * current rows of every stream first, then every change after the snapshot's boundary (src/notify/snapshot.ts).
 * What a consumer whose cursor the retention pruned past does (the 410 names this path).
 * @throws ChangesRequestError 404 when it is not registered
 */
export async function resetConsumer(executor: SqlExecutor, name: string): Promise<ConsumerState> {
  return executor.transaction(async (tx) => {
    await requireConsumer(tx, name);
    const snapshot = await startSnapshot(tx, snapshotStreams());
    await tx.run('UPDATE consumers SET cursor = ?, snapshot = ? WHERE name = ?', [snapshot.boundary, JSON.stringify(snapshot), name]);
    return (await loadConsumer(tx, name))!;
  });
}

/** A page of a consumer's snapshot: its events (the webhook body with its id, `seq` = the boundary) and the position to acknowledge. */
export interface SnapshotPageAnswer {
  events: PulledEvent[];
  /** The consumer's cursor: the snapshot's boundary. */
  after: number;
  next: number;
  snapshot: {
    boundary: number;
    /** Acknowledge it (`POST .../ack {"snapshot": position}`) once these events are handled. */
    position: string;
    /** True when this page ends the snapshot: after its acknowledgement the changes after the boundary follow. */
    last: boolean;
  };
}

/**
 * The next events of the consumer's snapshot after its acknowledged position (reading moves nothing).
 * @param types the read's type filter: only the streams it lets through are read
 */
export async function readConsumerSnapshot(executor: SqlExecutor, snapshot: SnapshotState, limit: number, types?: readonly string[]): Promise<SnapshotPageAnswer> {
  const wanted = types ? new Set(snapshotStreams(compileEventFilter(types, 'types'))) : undefined;
  let page = await readSnapshotPage(executor, snapshot, limit);
  let events = page.events.filter((event) => !wanted || wanted.has(event.stream));
  // Pages of streams the filter leaves out are skipped, not answered empty.
  while (events.length === 0 && page.next.stream !== null) {
    page = await readSnapshotPage(executor, page.next, limit);
    events = page.events.filter((event) => !wanted || wanted.has(event.stream));
  }
  return {
    events: events.map((event) => ({ id: event.eventId, ...webhookPayload(event) })),
    after: snapshot.boundary,
    next: snapshot.boundary,
    snapshot: { boundary: snapshot.boundary, position: Buffer.from(JSON.stringify(page.next)).toString('base64url'), last: page.next.stream === null },
  };
}

/**
 * Moves a consumer's snapshot to `position` (a page's `snapshot.position`); the last page's ends the
 * snapshot (the changes after its boundary follow).
 * @throws ChangesRequestError 400 when `position` is not one of this consumer's snapshot, 404 unknown consumer
 */
export async function acknowledgeSnapshot(executor: SqlExecutor, name: string, position: unknown, now: Date = new Date()): Promise<ConsumerState> {
  return executor.transaction(async (tx) => {
    const state = await requireConsumer(tx, name);
    let next: SnapshotState | null;
    try {
      next = parseSnapshot(Buffer.from(String(position), 'base64url').toString('utf8'));
    } catch {
      next = null;
    }
    if (!state.snapshot || !next || next.boundary !== state.snapshot.boundary || next.at !== state.snapshot.at) {
      throw new ChangesRequestError(400, 'snapshot', `snapshot: not a position of consumer "${name}"'s snapshot${state.snapshot ? '' : ' (it reads no snapshot: acknowledge with {"seq": ...})'}`);
    }
    await tx.run('UPDATE consumers SET snapshot = ?, last_ack_at = ? WHERE name = ?', [next.stream === null ? null : JSON.stringify(next), now.toISOString(), name]);
    return (await loadConsumer(tx, name))!;
  });
}

/** The consumer named `name`, or undefined. */
export async function loadConsumer(executor: SqlExecutor, name: string): Promise<ConsumerState | undefined> {
  const row = await executor.get<ConsumerRow>('SELECT * FROM consumers WHERE name = ?', [name]);
  return row ? toState(row) : undefined;
}

/**
 * The consumer named `name`.
 * @throws ChangesRequestError (404, `name`) when it is not registered
 */
export async function requireConsumer(executor: SqlExecutor, name: string): Promise<ConsumerState> {
  checkConsumerName(name);
  const state = await loadConsumer(executor, name);
  if (!state) throw new ChangesRequestError(404, 'name', `name: no consumer named "${name}"; register it first with PUT /consumers/${name}`);
  return state;
}

/** Records that the consumer read (its `last_read_at`). */
export async function noteConsumerRead(executor: SqlExecutor, name: string, now: Date = new Date()): Promise<void> {
  await executor.run('UPDATE consumers SET last_read_at = ? WHERE name = ?', [now.toISOString(), name]);
}

/**
 * Moves a consumer's cursor to `seq`, the last seq it handled (forward, or back to read again).
 * @returns its state after the move
 * @throws ChangesRequestError: 404 unknown consumer, 400 `seq` not a seq or ahead of the changelog,
 *   410 `seq` before what the retention pruned
 */
export async function acknowledge(executor: SqlExecutor, name: string, seq: unknown, now: Date = new Date()): Promise<ConsumerState> {
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0) {
    throw new ChangesRequestError(400, 'seq', `seq: must be the last seq handled, a whole number 0 or more, got ${JSON.stringify(seq) ?? 'nothing'}`);
  }
  return executor.transaction(async (tx) => {
    const current = await requireConsumer(tx, name);
    if (current.snapshot) throw new ChangesRequestError(400, 'seq', `seq: consumer "${name}" is reading its snapshot; acknowledge a page with {"snapshot": <its snapshot.position>}`);
    checkAfter(seq, await changelogEnds(tx), 'seq');
    await tx.run('UPDATE consumers SET cursor = ?, last_ack_at = ? WHERE name = ?', [seq, now.toISOString(), name]);
    return (await loadConsumer(tx, name))!;
  });
}

/** Removes a consumer (the retention no longer waits for it). @returns false when there was none */
export async function deleteConsumer(executor: SqlExecutor, name: string): Promise<boolean> {
  checkConsumerName(name);
  return (await executor.run('DELETE FROM consumers WHERE name = ?', [name])).changes === 1;
}

/** Every consumer with its lag, by name. */
export async function listConsumers(executor: SqlExecutor, now: Date = new Date()): Promise<ConsumerListing[]> {
  const rows = await executor.all<ConsumerRow>('SELECT * FROM consumers ORDER BY name');
  const { latestSeq } = await changelogEnds(executor);
  const listings: ConsumerListing[] = [];
  for (const row of rows) {
    const state = toState(row);
    const oldest = await executor.get<{ occurred_at: string }>('SELECT occurred_at FROM changes WHERE seq > ? ORDER BY seq LIMIT 1', [state.cursor]);
    const occurred = oldest ? Date.parse(oldest.occurred_at) : Number.NaN;
    listings.push({
      ...state,
      lagEvents: Math.max(0, latestSeq - state.cursor),
      lagSeconds: Number.isNaN(occurred) ? 0 : Math.max(0, Math.round((now.getTime() - occurred) / 100) / 10),
    });
  }
  return listings;
}

function toState(row: ConsumerRow): ConsumerState {
  return { name: row.name, cursor: Number(row.cursor), createdAt: row.created_at, lastReadAt: row.last_read_at, lastAckAt: row.last_ack_at, snapshot: parseSnapshot(row.snapshot ?? null) };
}
