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
import { ChangesRequestError, changelogEnds, checkAfter } from './changes-page.ts';

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

/** The body of `PUT /consumers/{name}` (optional): where a new consumer starts. */
export const REGISTER_CONSUMER_BODY = z.object({
  after: seqMember((input) => `after: must be a seq, a whole number 0 or more (where the consumer starts), got ${JSON.stringify(input)}`)
    .optional()
    .meta({ description: "The seq it starts after (it receives the events after it); default: the changelog's end (only what is recorded from now on)." }),
});

/** The body of `POST /consumers/{name}/ack`: the last seq handled. */
export const ACK_BODY = z.object({
  seq: seqMember((input) =>
    input === undefined ? 'seq: required, in a JSON body {"seq": SEQ} (the last seq handled)' : `seq: must be the last seq handled, a whole number 0 or more, got ${JSON.stringify(input)}`,
  ).meta({ description: 'The last seq the consumer handled: its cursor moves there (forward, or back to read again).' }),
});

/** A consumer as the document describes it (`ConsumerState`). */
export const CONSUMER_STATE = z
  .object({
    name: z.string(),
    cursor: z.number().int().meta({ description: 'The last seq it acknowledged: its next read starts after it.' }),
    createdAt: z.string(),
    lastReadAt: z.string().nullable(),
    lastAckAt: z.string().nullable(),
  })
  .meta({ id: 'ConsumerState' });

/** A consumer with its lag (`ConsumerListing`). */
export const CONSUMER_LISTING = CONSUMER_STATE.extend({
  lagEvents: z.number().int().meta({ description: "The changelog's last seq minus its cursor." }),
  lagSeconds: z.number().meta({ description: 'Age of the oldest event after its cursor, seconds; 0 when caught up.' }),
}).meta({ id: 'ConsumerListing' });

/** One consumer (times ISO 8601). */
export interface ConsumerState {
  name: string;
  /** The last seq it acknowledged: its next read starts after it. */
  cursor: number;
  createdAt: string;
  lastReadAt: string | null;
  lastAckAt: string | null;
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
export async function registerConsumer(executor: SqlExecutor, name: string, after: number | undefined, now: Date = new Date()): Promise<{ state: ConsumerState; created: boolean }> {
  checkConsumerName(name);
  return executor.transaction(async (tx) => {
    const existing = await loadConsumer(tx, name);
    if (existing) return { state: existing, created: false };
    const ends = await changelogEnds(tx);
    const cursor = after ?? ends.latestSeq;
    checkAfter(cursor, ends);
    await tx.run('INSERT INTO consumers (name, cursor, created_at) VALUES (?, ?, ?)', [name, cursor, now.toISOString()]);
    return { state: (await loadConsumer(tx, name))!, created: true };
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
    await requireConsumer(tx, name);
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
  return { name: row.name, cursor: Number(row.cursor), createdAt: row.created_at, lastReadAt: row.last_read_at, lastAckAt: row.last_ack_at };
}
