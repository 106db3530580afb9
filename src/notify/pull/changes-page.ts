/**
 * One page of the changelog for a reader over HTTP (docs/mirror.md "Reading over HTTP"): the
 * events after a seq, each as the body a webhook carries with its id, checked against the
 * changelog's ends. Bad input is a `ChangesRequestError` naming the parameter and the rule (the
 * route answers it as a 4xx); nothing here knows HTTP.
 */
import { z } from 'zod';
import { RouteRefusal } from '../../http/route.ts';
import { lastChangeSeqNow } from '../../mirror/changelog-format.ts';
import type { SqlExecutor } from '../../mirror/sql/executor.ts';
import { encodePulledEvent, readStoredChanges, readStoredChangesNow, type ReadChangesOptions, type StoredChange } from '../changelog-reader.ts';
import { checkEventPatterns } from '../event-filter/index.ts';
import { knownEventTypes } from '../event-schemas.ts';
import { changelogPrunedThroughNow } from '../retention.ts';
import { changelogEnds } from './consumer-listing.ts';
import type { WebhookPayload } from '../event-payload.ts';

/** Most events one page holds. */
export const MAX_PAGE_LIMIT = 1000;

/** Longest long-poll, seconds. */
export const MAX_WAIT_SECONDS = 60;

/** The HTTP statuses of `ChangesRequestError`. */
export type ChangesRequestStatus = 400 | 404 | 405 | 410 | 413 | 415;

/**
 * Why a request for changes cannot be answered: the parameter (`after`, `limit`, `wait`, `types`,
 * `name`, `seq`), the rule, the HTTP status that fits (400 bad input, 404 unknown consumer, 405 wrong
 * method, 410 pruned, 413 body too large, 415 not JSON) and extra members of the JSON answer (e.g.
 * `oldestSeq` for a 410). A `RouteRefusal`: the route table answers it as `{ error, parameter, ...details }`.
 */
export class ChangesRequestError extends RouteRefusal {
  override name = 'ChangesRequestError';
  declare readonly status: ChangesRequestStatus;

  constructor(status: ChangesRequestStatus, parameter: string, message: string, details: Record<string, unknown> = {}) {
    super(status, parameter, message, details);
  }
}

/** A query parameter holding a seq (digits), as a number. */
function seqParameter(parameter: string, rule: string, missing: string) {
  return z
    .string({ error: missing })
    .regex(/^\d{1,15}$/, { error: (issue) => `${parameter}: must be ${rule}, got "${String(issue.input)}"` })
    .transform(Number);
}

/** `limit`: events per page, 1 to `MAX_PAGE_LIMIT`, default 100. */
const LIMIT = z
  .string()
  .regex(/^\d{1,15}$/, { error: (issue) => `limit: must be a whole number from 1 to ${MAX_PAGE_LIMIT}, got "${String(issue.input)}"` })
  .optional()
  .transform((text) => (text === undefined ? 100 : Number(text)))
  .refine((limit) => limit >= 1 && limit <= MAX_PAGE_LIMIT, { error: (issue) => `limit: must be from 1 to ${MAX_PAGE_LIMIT}, got ${String(issue.input)}` })
  .meta({ description: `Most events in the page, 1 to ${MAX_PAGE_LIMIT}; default 100.`, example: '100' });

/** `wait`: seconds to wait for a change when there is none, 0 to `MAX_WAIT_SECONDS`, default 0. */
const WAIT = z
  .string()
  .regex(/^\d+(\.\d+)?$/, { error: (issue) => `wait: must be seconds from 0 to ${MAX_WAIT_SECONDS} (how long to wait for a change when there is none), got "${String(issue.input)}"` })
  .refine((text) => Number(text) <= MAX_WAIT_SECONDS, { error: (issue) => `wait: must be seconds from 0 to ${MAX_WAIT_SECONDS} (how long to wait for a change when there is none), got "${String(issue.input)}"` })
  .optional()
  .transform((text) => Math.round(Number(text ?? '0') * 1000))
  .meta({ description: `Long-poll: how long to wait for a change when there is none, seconds, 0 to ${MAX_WAIT_SECONDS}; default 0 (answer at once).`, example: '30' });

/** `types`: comma-separated event type patterns, each matching at least one known type (event-filter/index.ts `checkEventPatterns`). */
const TYPES = z
  .string()
  .optional()
  .transform((text) => (text === undefined ? undefined : text.split(',').map((pattern) => pattern.trim())))
  .superRefine((types, context) => {
    if (types === undefined) return;
    try {
      checkEventPatterns(types, knownEventTypes(), 'types');
    } catch (error) {
      context.addIssue({ code: 'custom', message: (error as Error).message, params: { knownTypes: knownEventTypes() } });
    }
  })
  .meta({ description: 'Only these event types: comma-separated patterns (`deal.*`, `deal.won`, `*`), each matching at least one event type (`GET /schemas` lists them).', example: 'deal.*,transaction.created' });

/** The query of `GET /changes` (docs/mirror.md "Reading over HTTP"). */
export const CHANGES_QUERY = z.object({
  after: seqParameter('after', 'a seq: a whole number, 0 or more', 'after: required, the last seq you handled (0 for the start of the changelog)').meta({
    description: 'The last seq you handled: the page holds the events after it (0: from the start of the changelog).',
    example: '0',
  }),
  limit: LIMIT,
  wait: WAIT,
  types: TYPES,
});

/** The query of `GET /consumers/{name}/changes`: a consumer reads after its own cursor (no `after`). */
export const CONSUMER_CHANGES_QUERY = z.object({ limit: LIMIT, wait: WAIT, types: TYPES });

/** The output of `CHANGES_QUERY`: `after`, `limit`, `wait` in ms, `types` split. */
export type ChangesQuery = z.output<typeof CHANGES_QUERY>;

const SEQ_TEXT = /^\d{1,15}$/;
const WAIT_TEXT = /^\d+(\.\d+)?$/;

/**
 * `CHANGES_QUERY`'s output for the common query, parsed by hand (the route's `quickQuery`): `after`
 * and `limit` digits, `limit` 1 to `MAX_PAGE_LIMIT`, `wait` seconds up to `MAX_WAIT_SECONDS`, no
 * `types`. Undefined for anything else (a missing or bad value, a type filter): `CHANGES_QUERY`
 * then parses it, or explains the refusal. Other parameters are ignored, and of one given twice the
 * last counts, as with the schema.
 */
export function quickChangesQuery(query: URLSearchParams): ChangesQuery | undefined {
  return quickQuery(query, true) as ChangesQuery | undefined;
}

/** `quickChangesQuery` for `CONSUMER_CHANGES_QUERY` (no `after`: the schema ignores it, the route refuses it). */
export function quickConsumerChangesQuery(query: URLSearchParams): z.output<typeof CONSUMER_CHANGES_QUERY> | undefined {
  return quickQuery(query, false) as z.output<typeof CONSUMER_CHANGES_QUERY> | undefined;
}

function quickQuery(query: URLSearchParams, withAfter: boolean): { after?: number; limit: number; wait: number; types: undefined } | undefined {
  let after: string | undefined;
  let limit: string | undefined;
  let wait: string | undefined;
  for (const [name, value] of query) {
    if (name === 'after') after = value;
    else if (name === 'limit') limit = value;
    else if (name === 'wait') wait = value;
    else if (name === 'types') return undefined;
  }
  if (withAfter && (after === undefined || !SEQ_TEXT.test(after))) return undefined;
  let pageLimit = 100;
  if (limit !== undefined) {
    if (!SEQ_TEXT.test(limit)) return undefined;
    pageLimit = Number(limit);
    if (pageLimit < 1 || pageLimit > MAX_PAGE_LIMIT) return undefined;
  }
  let waitMs = 0;
  if (wait !== undefined) {
    if (!WAIT_TEXT.test(wait) || Number(wait) > MAX_WAIT_SECONDS) return undefined;
    waitMs = Math.round(Number(wait) * 1000);
  }
  return withAfter ? { after: Number(after), limit: pageLimit, wait: waitMs, types: undefined } : { limit: pageLimit, wait: waitMs, types: undefined };
}

/** One event over HTTP as the document describes it: the webhook body (per type: `GET /schemas/{type}`) and its id. */
export const PULLED_EVENT = z
  .object({
    id: z.string().meta({ description: "The event's id, the same as its webhook's `webhook-id`: deduplicate on it (delivery is at least once)." }),
    type: z.string().meta({ description: 'The event type (`deal.won`); its JSON Schema is `GET /schemas/{type}` (docs/event-schemas.json).', example: 'deal.won' }),
    timestamp: z.string().meta({ description: 'When the mirror recorded the change (ISO 8601).' }),
    data: z
      .looseObject({
        seq: z.number().int().meta({ description: "The change's position in the changelog." }),
        stream: z.string(),
        record_id: z.string(),
        partition: z.string().optional(),
        record: z.unknown().optional(),
        changes: z.unknown().optional(),
      })
      .meta({ description: 'What changed: `record` and `changes` per type (docs/events.md).' }),
  })
  .meta({ id: 'Event', description: 'One changelog event: the body a webhook carries, with its id (docs/mirror.md "Reading over HTTP").' });

/** A page of changes as the document describes it (`ChangesPage`). */
export const CHANGES_PAGE = z
  .object({
    events: z.array(PULLED_EVENT),
    after: z.number().int().meta({ description: 'The `after` asked for (a consumer: its cursor).' }),
    next: z.number().int().meta({ description: 'Where the next page starts: pass it as `after` (a consumer: acknowledge it once handled).' }),
    latestSeq: z.number().int().meta({ description: "The changelog's last seq when the page was read." }),
    oldestSeq: z.number().int().meta({ description: 'The oldest seq still kept (older ones were pruned by the retention).' }),
  })
  .meta({ id: 'ChangesPage' });

/** One event over HTTP: the webhook's body with its `webhook-id` as `id`. */
export type PulledEvent = { id: string } & WebhookPayload;

/** A page of changes. */
export interface ChangesPage {
  events: PulledEvent[];
  /** The `after` asked for. */
  after: number;
  /**
   * Where the next page starts: pass it as `after`. The last event's seq; for a page short of the
   * limit, the changelog's end as seen (a type filter's skipped events are not read again).
   */
  next: number;
  /** The changelog's last seq when the page was read. */
  latestSeq: number;
  /** The oldest seq still kept (every seq at or below `oldestSeq - 1` was pruned; 1 when nothing was). */
  oldestSeq: number;
}

/** What to read: the exclusive `after` seq, the page size and the type filter. */
export interface ChangesPageQuery {
  after: number;
  /** How errors name `after` (a consumer's read: `cursor`). Default `after`. */
  parameter?: string;
  limit: number;
  /** Event type patterns (`deal.*`, `deal.won`, `*`). */
  types?: readonly string[];
}

/**
 * Parses `after`, `limit` (default 100), `wait` (seconds, default 0) and `types` (comma-separated
 * patterns, each matching at least one known event type: event-filter/index.ts `checkEventPatterns`) from
 * a query string, with `CHANGES_QUERY` (or, for a consumer's read, `CONSUMER_CHANGES_QUERY`).
 * @param requireAfter false for a consumer's read (its cursor is `after`)
 * @throws ChangesRequestError (400) naming the parameter and the rule; for a pattern no event type
 *   has, the known types too (`knownTypes` in the answer)
 */
export function parseChangesQuery(query: URLSearchParams, requireAfter: boolean): { after: number | undefined; limit: number; waitMs: number; types: string[] | undefined } {
  if (!requireAfter && query.has('after')) throw consumerAfterError();
  const result = (requireAfter ? CHANGES_QUERY : CONSUMER_CHANGES_QUERY).safeParse(Object.fromEntries(query));
  if (!result.success) {
    const issue = result.error.issues[0]!;
    throw new ChangesRequestError(400, String(issue.path[0]), issue.message, issue.code === 'custom' && issue.params ? issue.params : {});
  }
  const parsed = result.data as { after?: number; limit: number; wait: number; types: string[] | undefined };
  return { after: parsed.after, limit: parsed.limit, waitMs: parsed.wait, types: parsed.types };
}

/** The 400 of a consumer's read given `after`. */
export function consumerAfterError(): ChangesRequestError {
  return new ChangesRequestError(400, 'after', 'after: a consumer reads after its own cursor; move it with POST .../ack, or read GET /changes?after=SEQ');
}

/**
 * Checks that `after` lies within the changelog: not ahead of its end, not before what was pruned.
 * @throws ChangesRequestError 400 (`after` ahead of the changelog) or 410 (pruned: re-read the mirror)
 */
export function checkAfter(after: number, ends: { latestSeq: number; oldestSeq: number }, parameter = 'after'): void {
  if (after > ends.latestSeq) {
    throw new ChangesRequestError(400, parameter, `${parameter}: ${after} is ahead of the changelog (its last seq is ${ends.latestSeq})`, { latestSeq: ends.latestSeq });
  }
  if (after < ends.oldestSeq - 1) {
    throw new ChangesRequestError(
      410,
      parameter,
      `${parameter}: the changes after ${after} up to ${ends.oldestSeq - 1} were pruned by the changelog's retention; start over from a snapshot: POST /consumers/NAME/reset?initial=snapshot (a named consumer) sends the current rows, then every change after them`,
      { oldestSeq: ends.oldestSeq, latestSeq: ends.latestSeq, reset: 'POST /consumers/NAME/reset?initial=snapshot' },
    );
  }
}

/**
 * A page of changes with its events already encoded (`encodePulledEvent`): what the pull API sends,
 * built without decoding and encoding each record again. `changesPageJson` gives its JSON text.
 */
export interface EncodedChangesPage {
  /** The events' JSON array text: `[{...},{...}]`. */
  eventsJson: string;
  /** How many events `eventsJson` holds. */
  eventCount: number;
  after: number;
  next: number;
  latestSeq: number;
  oldestSeq: number;
}

/**
 * Reads the events after `query.after`, in seq order, encoded for the pull API.
 * @throws ChangesRequestError when `after` is ahead of the changelog (400) or was pruned (410)
 */
export async function readEncodedChangesPage(executor: SqlExecutor, query: ChangesPageQuery): Promise<EncodedChangesPage> {
  const now = readEncodedChangesPageNow(executor, query);
  if (now) return now;
  const ends = await changelogEnds(executor);
  checkAfter(query.after, ends, query.parameter);
  return encodedPage(query, ends, await readStoredChanges(executor, pageOptions(query)));
}

/**
 * `readEncodedChangesPage` read at once, synchronously, when the mirror can (a SQLite connection
 * whose file's lock nobody holds: `SqlExecutor.readNow`); undefined when it cannot (PostgreSQL, or
 * the lock is held: read with `readEncodedChangesPage`).
 * @throws ChangesRequestError when `after` is ahead of the changelog (400) or was pruned (410)
 */
export function readEncodedChangesPageNow(executor: SqlExecutor, query: ChangesPageQuery): EncodedChangesPage | undefined {
  return executor.readNow?.((reader) => {
    const prunedThrough = changelogPrunedThroughNow(reader);
    const ends = { latestSeq: Math.max(lastChangeSeqNow(reader), prunedThrough), oldestSeq: prunedThrough + 1 };
    checkAfter(query.after, ends, query.parameter);
    return encodedPage(query, ends, readStoredChangesNow(reader, pageOptions(query)));
  });
}

/** What `readStoredChanges` reads for `query`. */
function pageOptions(query: ChangesPageQuery): ReadChangesOptions {
  return query.types ? { sinceSeq: query.after, limit: query.limit, types: query.types } : { sinceSeq: query.after, limit: query.limit };
}

/** The page of `rows`, read after `query.after` with the changelog's `ends` read before them. */
function encodedPage(query: ChangesPageQuery, ends: { latestSeq: number; oldestSeq: number }, rows: readonly StoredChange[]): EncodedChangesPage {
  // A page short of the limit read every matching event up to the end seen before the query (writers
  // commit in seq order), so a filtered reader skips what it does not want instead of re-reading it.
  const lastEventSeq = rows.at(-1)?.seq ?? query.after;
  return {
    eventsJson: `[${rows.map(encodePulledEvent).join(',')}]`,
    eventCount: rows.length,
    after: query.after,
    next: rows.length < query.limit ? Math.max(lastEventSeq, ends.latestSeq) : lastEventSeq,
    latestSeq: Math.max(ends.latestSeq, rows.at(-1)?.seq ?? 0),
    oldestSeq: ends.oldestSeq,
  };
}

/**
 * The JSON text of a page (`ChangesPage`, with `consumer` first for a consumer's read), as
 * `JSON.stringify` would write the decoded page: `{"consumer":...,"events":[...],"after":...,"next":...,"latestSeq":...,"oldestSeq":...}`.
 */
export function changesPageJson(page: EncodedChangesPage, consumer?: string): string {
  const head = consumer === undefined ? '' : `"consumer":${JSON.stringify(consumer)},`;
  return `{${head}"events":${page.eventsJson},"after":${page.after},"next":${page.next},"latestSeq":${page.latestSeq},"oldestSeq":${page.oldestSeq}}`;
}

/**
 * Reads the events after `query.after`, in seq order, as objects: the pull API's page
 * (`readEncodedChangesPage`) decoded, for readers in this process.
 * @throws ChangesRequestError when `after` is ahead of the changelog (400) or was pruned (410)
 */
export async function readChangesPage(executor: SqlExecutor, query: ChangesPageQuery): Promise<ChangesPage> {
  const page = await readEncodedChangesPage(executor, query);
  return { events: JSON.parse(page.eventsJson) as PulledEvent[], after: page.after, next: page.next, latestSeq: page.latestSeq, oldestSeq: page.oldestSeq };
}
