/**
 * The changelog over HTTP (docs/mirror.md "Reading over HTTP"), behind the read key
 * (read-access.ts): for one connection's mirror, declared once (`CHANGE_ROUTE_SPECS`, their zod
 * schemas in src/notify/pull/) and mounted by the route table bare (the only connection) and under
 * `/connections/NAME`:
 *
 *   GET    /changes?after=SEQ&limit=N&wait=SECONDS&types=P,...   events after SEQ (long-poll up to `wait`)
 *   GET    /consumers                                            every named consumer with its lag
 *   PUT    /consumers/NAME   body {"after": SEQ}?                registers a consumer (default: at the end)
 *   GET    /consumers/NAME                                       its cursor and lag
 *   DELETE /consumers/NAME                                       removes it (the retention stops waiting for it)
 *   GET    /consumers/NAME/changes?limit=N&wait=SECONDS&types=   events after its cursor (does not move it)
 *   POST   /consumers/NAME/ack  body {"seq": SEQ}                 the last seq it handled: its cursor moves there
 *          (while it reads a snapshot: body {"snapshot": POSITION}, the page's snapshot.position)
 *   PUT    /consumers/NAME?initial=snapshot                     registers it starting from a snapshot (docs/mirror.md "Starting from a snapshot")
 *   POST   /consumers/NAME/reset?initial=snapshot               starts it over from a snapshot (what a pruned cursor's 410 names)
 *
 * Each event is the webhook's body with its `webhook-id` as `id`. Bad input is a 4xx with JSON
 * `{ error, parameter }` naming the parameter and the rule (src/notify/pull/changes-page.ts
 * `ChangesRequestError`, a `RouteRefusal`): 400 (a bad value, a seq ahead of the changelog, a limit
 * over 1000), 404 (an unknown consumer), 405, 410 (a seq the retention pruned: start over from a
 * snapshot), 413, 415.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { defineRouteSpec, errorResponse, route, type Route } from '../http/route.ts';
import type { SqlExecutor } from '../mirror/sql/executor.ts';
import { MirrorFileLockedError } from '../mirror/sql/sqlite.ts';
import {
  ACK_BODY,
  acknowledge,
  acknowledgeSnapshot,
  changelogEnds,
  CHANGES_PAGE,
  CHANGES_QUERY,
  ChangeSignal,
  ChangesRequestError,
  CONSUMER_CHANGES_QUERY,
  CONSUMER_LISTING,
  CONSUMER_PARAMS,
  CONSUMER_STATE,
  consumerAfterError,
  deleteConsumer,
  listConsumers,
  loadConsumer,
  noteConsumerRead,
  readConsumerSnapshot,
  quickChangesQuery,
  quickConsumerChangesQuery,
  readEncodedChangesPage,
  readEncodedChangesPageNow,
  changesPageJson,
  REGISTER_CONSUMER_BODY,
  REGISTER_CONSUMER_QUERY,
  registerConsumer,
  requireConsumer,
  RESET_CONSUMER_QUERY,
  resetConsumer,
  SNAPSHOT_PAGE,
  type ConsumerState,
  type EncodedChangesPage,
} from '../notify/pull/index.ts';
import { sendJson, sendJsonText } from './read-access.ts';

/** What the routes of one connection read and wait on. */
export interface ChangeRoutesOptions {
  /** The connection's mirror. */
  executor: SqlExecutor;
  /** Woken when changes are appended (long-polls wait on it). */
  signal: ChangeSignal;
  /** While a long-poll waits, it reads again at least this often (another process's commits on SQLite), ms. Default 1000. */
  pollMs?: number;
  now?: () => Date;
  /**
   * A consumer's read is noted (`last_read_at`) at most once per this many ms of `now()`, unless its
   * cursor or snapshot position moved since the last note. Default `CONSUMER_READ_NOTE_MS`.
   */
  readNoteMs?: number;
}

/**
 * How often, at most, a consumer's reads are written to its `last_read_at`, ms (one per second of
 * polling: docs/decisions.md, "noting a consumer's reads"): the time `status` and the console show is at most
 * this much older than its last read.
 */
export const CONSUMER_READ_NOTE_MS = 1000;

/** Largest JSON body of a PUT or POST, bytes. */
const MAX_BODY_BYTES = 64 * 1024;

const PRUNED = errorResponse("The seq was pruned by the changelog's retention (`oldestSeq` in the answer): start over from a snapshot (`POST /consumers/{name}/reset?initial=snapshot`), or re-read the mirror's tables and read on after `oldestSeq - 1`.");
const UNKNOWN_CONSUMER = errorResponse('No consumer of that name: register it with `PUT /consumers/{name}`.');
const BAD_INPUT = errorResponse('A bad parameter or body, named with its rule (a pattern no event type has: `knownTypes` lists them).');

/** The declarations of the changelog's routes (module comment). */
export const CHANGE_ROUTE_SPECS = {
  changes: defineRouteSpec({
    method: 'GET',
    path: '/changes',
    operationId: 'readChanges',
    summary: 'The events after a seq, long-polling up to `wait` seconds when there is none',
    tags: ['changes'],
    access: 'read',
    perConnection: true,
    query: CHANGES_QUERY,
    quickQuery: quickChangesQuery,
    responses: { 200: { description: 'A page of events (empty after `wait`).', content: { 'application/json': CHANGES_PAGE } }, 400: BAD_INPUT, 410: PRUNED },
  }),
  consumers: defineRouteSpec({
    method: 'GET',
    path: '/consumers',
    operationId: 'listConsumers',
    summary: 'Every named consumer with its cursor and lag',
    tags: ['consumers'],
    access: 'read',
    perConnection: true,
    responses: { 200: { description: 'The consumers, by name.', content: { 'application/json': z.object({ consumers: z.array(CONSUMER_LISTING) }) } } },
  }),
  register: defineRouteSpec({
    method: 'PUT',
    path: '/consumers/{name}',
    operationId: 'registerConsumer',
    summary: "Registers a consumer (by default at the changelog's end; `initial=snapshot`: the current rows first); an existing one is left as it is",
    tags: ['consumers'],
    access: 'read',
    perConnection: true,
    params: CONSUMER_PARAMS,
    query: REGISTER_CONSUMER_QUERY,
    body: { mediaType: 'application/json', schema: REGISTER_CONSUMER_BODY, required: false, maxBytes: MAX_BODY_BYTES, shape: '{"after": SEQ} or {"initial": "snapshot"}' },
    responses: {
      200: { description: 'It existed: its state, unchanged.', content: { 'application/json': z.object({ consumer: CONSUMER_STATE, created: z.literal(false) }) } },
      201: { description: 'Registered.', content: { 'application/json': z.object({ consumer: CONSUMER_STATE, created: z.literal(true) }) } },
      400: BAD_INPUT,
      410: PRUNED,
    },
  }),
  consumer: defineRouteSpec({
    method: 'GET',
    path: '/consumers/{name}',
    operationId: 'getConsumer',
    summary: 'A consumer: its cursor and lag',
    tags: ['consumers'],
    access: 'read',
    perConnection: true,
    params: CONSUMER_PARAMS,
    responses: { 200: { description: 'The consumer.', content: { 'application/json': z.object({ consumer: CONSUMER_LISTING }) } }, 404: UNKNOWN_CONSUMER },
  }),
  remove: defineRouteSpec({
    method: 'DELETE',
    path: '/consumers/{name}',
    operationId: 'deleteConsumer',
    summary: 'Removes a consumer (the retention stops waiting for it)',
    tags: ['consumers'],
    access: 'read',
    perConnection: true,
    params: CONSUMER_PARAMS,
    responses: { 200: { description: 'Removed.', content: { 'application/json': z.object({ deleted: z.string() }) } }, 404: UNKNOWN_CONSUMER },
  }),
  consumerChanges: defineRouteSpec({
    method: 'GET',
    path: '/consumers/{name}/changes',
    operationId: 'readConsumerChanges',
    summary: "The events after the consumer's cursor, or the next page of its snapshot (reading moves nothing: acknowledge what was handled)",
    tags: ['consumers'],
    access: 'read',
    perConnection: true,
    params: CONSUMER_PARAMS,
    query: CONSUMER_CHANGES_QUERY,
    quickQuery: quickConsumerChangesQuery,
    responses: {
      200: {
        description: 'A page of events after its cursor; while it reads a snapshot, a page of `<stream>.snapshot` events with `snapshot.position` to acknowledge.',
        content: { 'application/json': z.union([CHANGES_PAGE.extend({ consumer: z.string() }), SNAPSHOT_PAGE.extend({ consumer: z.string() })]) },
      },
      400: BAD_INPUT,
      404: UNKNOWN_CONSUMER,
      410: PRUNED,
    },
  }),
  ack: defineRouteSpec({
    method: 'POST',
    path: '/consumers/{name}/ack',
    operationId: 'ackConsumer',
    summary: 'Acknowledges the last seq handled (the cursor moves there), or a snapshot page\'s position',
    tags: ['consumers'],
    access: 'read',
    perConnection: true,
    params: CONSUMER_PARAMS,
    body: { mediaType: 'application/json', schema: ACK_BODY, required: true, maxBytes: MAX_BODY_BYTES, shape: '{"seq": SEQ} or {"snapshot": POSITION}' },
    responses: {
      200: { description: 'Its state after the move.', content: { 'application/json': z.object({ consumer: CONSUMER_STATE }) } },
      400: BAD_INPUT,
      404: UNKNOWN_CONSUMER,
      410: PRUNED,
    },
  }),
  reset: defineRouteSpec({
    method: 'POST',
    path: '/consumers/{name}/reset',
    operationId: 'resetConsumer',
    summary: 'Starts a consumer over from a snapshot: the current rows of its streams, then every change after the boundary (what a pruned cursor\'s 410 names)',
    tags: ['consumers'],
    access: 'read',
    perConnection: true,
    params: CONSUMER_PARAMS,
    query: RESET_CONSUMER_QUERY,
    responses: { 200: { description: 'Its state: reading the snapshot.', content: { 'application/json': z.object({ consumer: CONSUMER_STATE }) } }, 400: BAD_INPUT, 404: UNKNOWN_CONSUMER },
  }),
} as const;

/** The routes of one connection (module comment); mounted bare or under `/connections/NAME` by the route table. */
export function changeRoutes(options: ChangeRoutesOptions): Route[] {
  const { executor } = options;
  const now = options.now ?? (() => new Date());
  const pollMs = options.pollMs ?? 1000;
  const specs = CHANGE_ROUTE_SPECS;

  /**
   * Reads a page (unless `first` is the one just read), and while it is empty, waits for changes up
   * to `waitMs` (or the client leaving).
   */
  const longPoll = async (request: IncomingMessage, response: ServerResponse, waitMs: number, read: () => Promise<EncodedChangesPage>, first?: EncodedChangesPage): Promise<EncodedChangesPage> => {
    let page = first ?? (await read());
    if (page.eventCount > 0 || waitMs <= 0) return page;
    const left = new AbortController();
    const onClose = () => left.abort();
    response.once('close', onClose);
    request.once('aborted', onClose);
    try {
      const deadline = Date.now() + waitMs;
      while (page.eventCount === 0 && !left.signal.aborted) {
        const remaining = deadline - Date.now();
        if (remaining <= 0) break;
        await options.signal.wait(Math.min(remaining, pollMs), left.signal);
        if (!left.signal.aborted) page = await read();
      }
      return page;
    } finally {
      response.off('close', onClose);
      request.off('aborted', onClose);
    }
  };

  const readNoteMs = options.readNoteMs ?? CONSUMER_READ_NOTE_MS;
  /** Per consumer: when its read was last noted (ms of `now()`) and where it stood then (cursor and snapshot position). */
  const readNotes = new Map<string, { at: number; position: string }>();

  /**
   * Notes the consumer's read (`last_read_at`), unless one was noted less than `readNoteMs` ago at
   * the same `position` (its cursor and snapshot position). Another process holding the SQLite
   * file's write lock past the connection's tries (MirrorFileLockedError) skips the note: the page
   * read is answered all the same, and the next read notes it.
   */
  const noteRead = async (name: string, position: string): Promise<void> => {
    const at = now();
    const last = readNotes.get(name);
    if (last && last.position === position && at.getTime() - last.at < readNoteMs && at.getTime() >= last.at) return;
    try {
      await noteConsumerRead(executor, name, at);
      readNotes.set(name, { at: at.getTime(), position });
    } catch (error) {
      if (!(error instanceof MirrorFileLockedError)) throw error;
    }
  };
  /** Where a consumer stands, as `noteRead` compares it. */
  const positionOf = (state: ConsumerState): string => `${state.cursor}:${state.snapshot ? JSON.stringify(state.snapshot) : ''}`;

  /** Sends `body` unless the client left during a long-poll. */
  const answer = (response: ServerResponse, status: number, body: unknown) => {
    if (!response.writableEnded && !response.destroyed) sendJson(response, status, body);
  };
  /** Sends a page of changes (with the consumer's name first for a consumer's read) unless the client left. */
  const answerPage = (response: ServerResponse, page: EncodedChangesPage, consumer?: string) => {
    if (!response.writableEnded && !response.destroyed) sendJsonText(response, 200, changesPageJson(page, consumer));
  };

  return [
    route(specs.changes, async (request, response, { query }) => {
      const pageQuery = query.types ? { after: query.after, limit: query.limit, types: query.types } : { after: query.after, limit: query.limit };
      // Read at once when the mirror can (SQLite, its lock free); a page with events is answered
      // without the long-poll's promises and listeners.
      const now = readEncodedChangesPageNow(executor, pageQuery);
      if (now && (now.eventCount > 0 || query.wait <= 0)) return answerPage(response, now);
      answerPage(response, await longPoll(request, response, query.wait, () => readEncodedChangesPage(executor, pageQuery), now));
    }),
    route(specs.consumers, async (_request, response) => answer(response, 200, { consumers: await listConsumers(executor, now()) })),
    route(specs.register, async (_request, response, { params, query, body }) => {
      const initial = query.initial ?? body.initial ?? 'end';
      const { state, created } = await registerConsumer(executor, params.name, body.after, now(), initial);
      answer(response, created ? 201 : 200, { consumer: state, created });
    }),
    route(specs.consumer, async (_request, response, { params }) => {
      const state = await requireConsumer(executor, params.name);
      const listing = (await listConsumers(executor, now())).find((candidate) => candidate.name === state.name) ?? (await loadConsumer(executor, params.name));
      answer(response, 200, { consumer: listing });
    }),
    route(specs.remove, async (_request, response, { params }) => {
      readNotes.delete(params.name);
      if (!(await deleteConsumer(executor, params.name))) throw new ChangesRequestError(404, 'name', `name: no consumer named "${params.name}"`);
      answer(response, 200, { deleted: params.name });
    }),
    route(specs.consumerChanges, async (request, response, { params, query, url }) => {
      if (url.searchParams.has('after')) throw consumerAfterError();
      const reading = await requireConsumer(executor, params.name);
      if (reading.snapshot) {
        // The snapshot first (src/notify/snapshot.ts): pages of current rows, acknowledged by position.
        const snapshotPage = await readConsumerSnapshot(executor, reading.snapshot, query.limit, query.types);
        await noteRead(params.name, positionOf(reading));
        const ends = await changelogEnds(executor);
        return answer(response, 200, { consumer: params.name, ...snapshotPage, latestSeq: ends.latestSeq, oldestSeq: ends.oldestSeq });
      }
      let position = positionOf(reading);
      const page = await longPoll(request, response, query.wait, async () => {
        const state = await requireConsumer(executor, params.name);
        position = positionOf(state);
        return readEncodedChangesPage(executor, { after: state.cursor, parameter: 'cursor', limit: query.limit, ...(query.types ? { types: query.types } : {}) });
      });
      await noteRead(params.name, position);
      answerPage(response, page, params.name);
    }),
    route(specs.ack, async (_request, response, { params, body }) => {
      const state = body.snapshot !== undefined ? await acknowledgeSnapshot(executor, params.name, body.snapshot, now()) : await acknowledge(executor, params.name, body.seq, now());
      answer(response, 200, { consumer: state });
    }),
    route(specs.reset, async (_request, response, { params }) => answer(response, 200, { consumer: await resetConsumer(executor, params.name) })),
  ];
}
