/**
 * One page of the changelog for a reader over HTTP (docs/mirror.md "Reading over HTTP"): the
 * events after a seq, each as the body a webhook carries with its id, checked against the
 * changelog's ends. Bad input is a `ChangesRequestError` naming the parameter and the rule (the
 * route answers it as a 4xx); nothing here knows HTTP.
 */
import { lastChangeSeq } from '../../mirror/changelog-format.ts';
import type { SqlExecutor } from '../../mirror/sql/executor.ts';
import { readChanges } from '../changelog-reader.ts';
import { checkEventPatterns } from '../event-filter.ts';
import { knownEventTypes } from '../event-schemas.ts';
import { changelogPrunedThrough } from '../retention.ts';
import { webhookPayload, type WebhookPayload } from '../event-payload.ts';

/** Most events one page holds. */
export const MAX_PAGE_LIMIT = 1000;

/** Longest long-poll, seconds. */
export const MAX_WAIT_SECONDS = 60;

/** The HTTP statuses of `ChangesRequestError`. */
export type ChangesRequestStatus = 400 | 404 | 405 | 410 | 413 | 415;

/** Why a request for changes cannot be answered: the parameter, the rule, and the HTTP status that fits. */
export class ChangesRequestError extends Error {
  override name = 'ChangesRequestError';
  /** 400 bad input, 404 unknown consumer, 405 wrong method, 410 pruned, 413 body too large, 415 not JSON. */
  readonly status: ChangesRequestStatus;
  /** The request parameter at fault (`after`, `limit`, `wait`, `types`, `name`, `seq`). */
  readonly parameter: string;
  /** Extra members of the JSON answer (e.g. `oldestSeq` for a 410). */
  readonly details: Record<string, unknown>;

  constructor(status: ChangesRequestStatus, parameter: string, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.status = status;
    this.parameter = parameter;
    this.details = details;
  }
}

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
 * patterns, each matching at least one known event type: event-filter.ts `checkEventPatterns`) from
 * a query string.
 * @param requireAfter false for a consumer's read (its cursor is `after`)
 * @throws ChangesRequestError (400) naming the parameter and the rule; for a pattern no event type
 *   has, the known types too (`knownTypes` in the answer)
 */
export function parseChangesQuery(query: URLSearchParams, requireAfter: boolean): { after: number | undefined; limit: number; waitMs: number; types: string[] | undefined } {
  const after = query.get('after');
  if (requireAfter && after === null) throw new ChangesRequestError(400, 'after', 'after: required, the last seq you handled (0 for the start of the changelog)');
  if (!requireAfter && after !== null) throw new ChangesRequestError(400, 'after', "after: a consumer reads after its own cursor; move it with POST .../ack, or read GET /changes?after=SEQ");
  const limitText = query.get('limit') ?? '100';
  const waitText = query.get('wait') ?? '0';
  const typesText = query.get('types');
  const parsedAfter = after === null ? undefined : wholeNumber(after, 'after', 'a seq: a whole number, 0 or more');
  const limit = wholeNumber(limitText, 'limit', `a whole number from 1 to ${MAX_PAGE_LIMIT}`);
  if (limit < 1 || limit > MAX_PAGE_LIMIT) throw new ChangesRequestError(400, 'limit', `limit: must be from 1 to ${MAX_PAGE_LIMIT}, got ${limit}`);
  if (!/^\d+(\.\d+)?$/.test(waitText) || Number(waitText) > MAX_WAIT_SECONDS) {
    throw new ChangesRequestError(400, 'wait', `wait: must be seconds from 0 to ${MAX_WAIT_SECONDS} (how long to wait for a change when there is none), got "${waitText}"`);
  }
  let types: string[] | undefined;
  if (typesText !== null) {
    types = typesText.split(',').map((pattern) => pattern.trim());
    try {
      checkEventPatterns(types, knownEventTypes(), 'types');
    } catch (error) {
      throw new ChangesRequestError(400, 'types', (error as Error).message, { knownTypes: knownEventTypes() });
    }
  }
  return { after: parsedAfter, limit, waitMs: Math.round(Number(waitText) * 1000), types };
}

function wholeNumber(text: string, parameter: string, rule: string): number {
  if (!/^\d{1,15}$/.test(text)) throw new ChangesRequestError(400, parameter, `${parameter}: must be ${rule}, got "${text}"`);
  return Number(text);
}

/** The changelog's ends: its last seq and the oldest one kept. */
export async function changelogEnds(executor: SqlExecutor): Promise<{ latestSeq: number; oldestSeq: number }> {
  const prunedThrough = await changelogPrunedThrough(executor);
  return { latestSeq: Math.max(await lastChangeSeq(executor), prunedThrough), oldestSeq: prunedThrough + 1 };
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
 * Reads the events after `query.after`, in seq order.
 * @throws ChangesRequestError when `after` is ahead of the changelog (400) or was pruned (410)
 */
export async function readChangesPage(executor: SqlExecutor, query: ChangesPageQuery): Promise<ChangesPage> {
  const ends = await changelogEnds(executor);
  checkAfter(query.after, ends, query.parameter);
  const events = await readChanges(executor, { sinceSeq: query.after, limit: query.limit, ...(query.types ? { types: query.types } : {}) });
  // A page short of the limit read every matching event up to the end seen before the query (writers
  // commit in seq order), so a filtered reader skips what it does not want instead of re-reading it.
  const lastEventSeq = events.at(-1)?.seq ?? query.after;
  return {
    events: events.map((event) => ({ id: event.eventId, ...webhookPayload(event) })),
    after: query.after,
    next: events.length < query.limit ? Math.max(lastEventSeq, ends.latestSeq) : lastEventSeq,
    latestSeq: Math.max(ends.latestSeq, events.at(-1)?.seq ?? 0),
    oldestSeq: ends.oldestSeq,
  };
}
