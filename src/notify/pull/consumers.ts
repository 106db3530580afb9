/**
 * Named consumers of the changelog over HTTP (`consumers` table, src/mirror/migrations/011_consumers.ts;
 * docs/mirror.md "Named consumers"): a program reads `GET /consumers/NAME/changes` and acknowledges
 * the last seq it handled with `POST /consumers/NAME/ack`; the daemon keeps the cursor. Reading does
 * not move it, so a consumer that dies before acknowledging reads the same events again
 * (at-least-once: deduplicate on the event's `id`). The changelog's retention never prunes past a
 * consumer's cursor. Every function runs through a `SqlExecutor` (src/mirror/sql/executor.ts).
 */
import { z } from 'zod';
import type { SqlExecutor } from '../../mirror/sql/executor.ts';
import { compileEventFilter } from '../event-filter/index.ts';
import { webhookPayload } from '../event-payload.ts';
import { parseSnapshot, readSnapshotPage, snapshotStreams, startSnapshot, type SnapshotState } from '../snapshot.ts';
import { ChangesRequestError, checkAfter, PULLED_EVENT, type PulledEvent } from './changes-page.ts';
import { changelogEnds, consumerState, type ConsumerRow, type ConsumerState } from './consumer-listing.ts';

export { listConsumers, type ConsumerListing, type ConsumerState } from './consumer-listing.ts';

/** A consumer's name: the URL's NAME. */
export const CONSUMER_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** The path parameters of `/consumers/{name}...`. */
export const CONSUMER_PARAMS = z.object({
  name: z
    .string()
    .regex(CONSUMER_NAME, { error: (issue) => `name: "${String(issue.input)}" is not a consumer name; use 1 to 64 letters, digits, _ . -` })
    .meta({ description: "The consumer's name: 1 to 64 letters, digits, `_`, `.`, `-`.", example: 'erp' }),
});

/** A seq in a JSON body (a whole number, 0 or more); every issue is `message(input)`. */
function seqMember(message: (input: unknown) => string) {
  const error = (issue: { input?: unknown }) => message(issue.input);
  return z.number({ error }).int({ error }).min(0, { error });
}

/** Where a new consumer starts: `end` (what is recorded from now on) or `snapshot` (the current rows first). */
const INITIAL = z
  .string()
  .refine((value) => value === 'end' || value === 'snapshot', { error: (issue) => `initial: must be "end" or "snapshot", got ${JSON.stringify(issue.input)}` })
  .transform((value) => value as 'end' | 'snapshot')
  .meta({ override: { type: 'string', enum: ['end', 'snapshot'] }, description: 'Where a new consumer starts: `end` (default: what is recorded from now on) or `snapshot` (the current rows of its streams first, docs/mirror.md "Starting from a snapshot").' });

/** The query of `PUT /consumers/{name}`. */
export const REGISTER_CONSUMER_QUERY = z.object({ initial: INITIAL.optional() });

/** The body of `PUT /consumers/{name}` (optional): where a new consumer starts. */
export const REGISTER_CONSUMER_BODY = z.object({
  after: seqMember((input) => `after: must be a seq, a whole number 0 or more (where the consumer starts), got ${JSON.stringify(input)}`)
    .optional()
    .meta({ description: "The seq it starts after (it receives the events after it); default: the changelog's end (only what is recorded from now on)." }),
  initial: INITIAL.optional(),
});

/** The body of `POST /consumers/{name}/ack`: the last seq handled, or (while reading a snapshot) the page's position. */
export const ACK_BODY = z
  .object({
    seq: seqMember((input) => `seq: must be the last seq handled, a whole number 0 or more, got ${JSON.stringify(input)}`)
      .optional()
      .meta({ description: 'The last seq the consumer handled: its cursor moves there (forward, or back to read again).' }),
    snapshot: z
      .string({ error: (issue) => `snapshot: must be a page's snapshot.position (a string), got ${JSON.stringify(issue.input)}` })
      .optional()
      .meta({ description: "While it reads a snapshot: the page's `snapshot.position`, once its events are handled." }),
  })
  .superRefine((body, context) => {
    if (body.seq === undefined && body.snapshot === undefined) context.addIssue({ code: 'custom', path: ['seq'], message: 'seq: required, in a JSON body {"seq": SEQ} (the last seq handled)' });
  });

/** The query of `POST /consumers/{name}/reset`: `initial=snapshot`, the only reset there is. */
export const RESET_CONSUMER_QUERY = z.object({
  initial: z
    .string({ error: 'initial: POST .../reset?initial=snapshot starts the consumer over from a snapshot (the only reset there is)' })
    .refine((value) => value === 'snapshot', { error: 'initial: POST .../reset?initial=snapshot starts the consumer over from a snapshot (the only reset there is)' })
    .meta({ override: { type: 'string', enum: ['snapshot'] }, description: 'Always `snapshot`.' }),
});

/** Where a snapshot stands (src/notify/snapshot.ts `SnapshotState`). */
const SNAPSHOT_STATE = z
  .object({
    boundary: z.number().int().meta({ description: 'The changelog seq it stands at: the changes after it follow the snapshot.' }),
    streams: z.array(z.string()),
    stream: z.string().nullable().meta({ description: 'The stream being read; null once done.' }),
    after: z.string().nullable(),
    at: z.string(),
  })
  .meta({ id: 'SnapshotState' });

/** A page of a consumer's snapshot (`SnapshotPageAnswer`). */
export const SNAPSHOT_PAGE = z
  .object({
    events: z.array(PULLED_EVENT).meta({ description: 'One `<stream>.snapshot` event per current record (`seq` = the boundary).' }),
    after: z.number().int(),
    next: z.number().int(),
    latestSeq: z.number().int(),
    oldestSeq: z.number().int(),
    snapshot: z.object({
      boundary: z.number().int(),
      position: z.string().meta({ description: 'Acknowledge it (`POST .../ack {"snapshot": position}`) once these events are handled.' }),
      last: z.boolean().meta({ description: 'True when this page ends the snapshot: after its acknowledgement the changes after the boundary follow.' }),
    }),
  })
  .meta({ id: 'SnapshotPage' });

/** A consumer as the document describes it (`ConsumerState`). */
export const CONSUMER_STATE = z
  .object({
    name: z.string(),
    cursor: z.number().int().meta({ description: 'The last seq it acknowledged: its next read starts after it.' }),
    createdAt: z.string(),
    lastReadAt: z.string().nullable(),
    lastAckAt: z.string().nullable(),
    snapshot: SNAPSHOT_STATE.nullable().meta({ description: 'The snapshot it reads before the changelog; null when none or done.' }),
  })
  .meta({ id: 'ConsumerState' });

/** A consumer with its lag (`ConsumerListing`). */
export const CONSUMER_LISTING = CONSUMER_STATE.extend({
  lagEvents: z.number().int().meta({ description: "The changelog's last seq minus its cursor." }),
  lagSeconds: z.number().meta({ description: 'Age of the oldest event after its cursor, seconds; 0 when caught up.' }),
}).meta({ id: 'ConsumerListing' });

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
  return row ? consumerState(row) : undefined;
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

