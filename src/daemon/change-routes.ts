/**
 * The changelog over HTTP (docs/mirror.md "Reading over HTTP"), behind the read key
 * (read-access.ts): for one connection's mirror, under `prefix` (`''` for the only connection,
 * `/connections/NAME` with several):
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
 * `{ error, parameter }` naming the parameter and the rule (src/notify/changes-page.ts
 * `ChangesRequestError`): 400 (a bad value, a seq ahead of the changelog, a limit over 1000), 404
 * (an unknown consumer), 405, 410 (a seq the retention pruned: start over from a snapshot), 413, 415.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SqlExecutor } from '../mirror/sql/executor.ts';
import {
  acknowledge,
  acknowledgeSnapshot,
  changelogEnds,
  ChangeSignal,
  ChangesRequestError,
  deleteConsumer,
  listConsumers,
  loadConsumer,
  noteConsumerRead,
  parseChangesQuery,
  readChangesPage,
  readConsumerSnapshot,
  registerConsumer,
  requireConsumer,
  resetConsumer,
  type ChangesPage,
} from '../notify/pull/index.ts';
import { sendJson, type ReadRoute } from './read-access.ts';

/** What the routes of one connection read and wait on. */
export interface ChangeRoutesOptions {
  /** The connection's mirror. */
  executor: SqlExecutor;
  /** Woken when changes are appended (long-polls wait on it). */
  signal: ChangeSignal;
  /** Path prefix: `''`, or `/connections/NAME`. */
  prefix: string;
  /** While a long-poll waits, it reads again at least this often (another process's commits on SQLite), ms. Default 1000. */
  pollMs?: number;
  now?: () => Date;
}

/** Largest JSON body of a PUT or POST, bytes. */
const MAX_BODY_BYTES = 64 * 1024;

/** The routes of one connection (module comment). */
export function changeRoutes(options: ChangeRoutesOptions): ReadRoute[] {
  const { executor, prefix } = options;
  const now = options.now ?? (() => new Date());
  const pollMs = options.pollMs ?? 1000;
  const consumerPath = new RegExp(`^${escape(prefix)}/consumers/([^/]+)(/changes|/ack|/reset)?/?$`);

  /** Reads a page, and while it is empty, waits for changes up to `waitMs` (or the client leaving). */
  const longPoll = async (request: IncomingMessage, response: ServerResponse, waitMs: number, read: () => Promise<ChangesPage>): Promise<ChangesPage> => {
    let page = await read();
    if (page.events.length > 0 || waitMs <= 0) return page;
    const left = new AbortController();
    const onClose = () => left.abort();
    response.once('close', onClose);
    request.once('aborted', onClose);
    try {
      const deadline = Date.now() + waitMs;
      while (page.events.length === 0 && !left.signal.aborted) {
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

  const changes: ReadRoute = {
    matches: (path) => path === `${prefix}/changes` || path === `${prefix}/changes/`,
    handle: (request, response, url) =>
      answer(response, async () => {
        allow(request, ['GET']);
        const query = parseChangesQuery(url.searchParams, true);
        const page = await longPoll(request, response, query.waitMs, () => readChangesPage(executor, { after: query.after!, limit: query.limit, ...(query.types ? { types: query.types } : {}) }));
        return [200, page];
      }),
  };

  const consumers: ReadRoute = {
    matches: (path) => path === `${prefix}/consumers` || path === `${prefix}/consumers/`,
    handle: (request, response) =>
      answer(response, async () => {
        allow(request, ['GET']);
        return [200, { consumers: await listConsumers(executor, now()) }];
      }),
  };

  const consumer: ReadRoute = {
    matches: (path) => consumerPath.test(path),
    handle: (request, response, url) =>
      answer(response, async () => {
        const match = consumerPath.exec(url.pathname)!;
        const name = decode(match[1]!);
        const action = match[2];
        if (action === '/changes') {
          allow(request, ['GET']);
          const query = parseChangesQuery(url.searchParams, false);
          const reading = await requireConsumer(executor, name);
          if (reading.snapshot) {
            // The snapshot first (src/notify/snapshot.ts): pages of current rows, acknowledged by position.
            const snapshotPage = await readConsumerSnapshot(executor, reading.snapshot, query.limit, query.types);
            await noteConsumerRead(executor, name, now());
            const ends = await changelogEnds(executor);
            return [200, { consumer: name, ...snapshotPage, latestSeq: ends.latestSeq, oldestSeq: ends.oldestSeq }];
          }
          const page = await longPoll(request, response, query.waitMs, async () => {
            const state = await requireConsumer(executor, name);
            return readChangesPage(executor, { after: state.cursor, parameter: 'cursor', limit: query.limit, ...(query.types ? { types: query.types } : {}) });
          });
          await noteConsumerRead(executor, name, now());
          return [200, { consumer: name, ...page }];
        }
        if (action === '/ack') {
          allow(request, ['POST']);
          const body = await readJsonBody(request, true);
          if ((body as { snapshot?: unknown }).snapshot !== undefined) return [200, { consumer: await acknowledgeSnapshot(executor, name, (body as { snapshot?: unknown }).snapshot, now()) }];
          const state = await acknowledge(executor, name, (body as { seq?: unknown }).seq, now());
          return [200, { consumer: state }];
        }
        if (action === '/reset') {
          allow(request, ['POST']);
          if (url.searchParams.get('initial') !== 'snapshot') throw new ChangesRequestError(400, 'initial', 'initial: POST .../reset?initial=snapshot starts the consumer over from a snapshot (the only reset there is)');
          return [200, { consumer: await resetConsumer(executor, name) }];
        }
        allow(request, ['GET', 'PUT', 'DELETE']);
        if (request.method === 'PUT') {
          const body = (await readJsonBody(request, false)) as { after?: unknown };
          if (body.after !== undefined && (typeof body.after !== 'number' || !Number.isSafeInteger(body.after) || body.after < 0)) {
            throw new ChangesRequestError(400, 'after', `after: must be a seq, a whole number 0 or more (where the consumer starts), got ${JSON.stringify(body.after)}`);
          }
          const initial = url.searchParams.get('initial') ?? (body as { initial?: unknown }).initial ?? 'end';
          if (initial !== 'end' && initial !== 'snapshot') throw new ChangesRequestError(400, 'initial', `initial: must be "end" or "snapshot", got ${JSON.stringify(initial)}`);
          const { state, created } = await registerConsumer(executor, name, body.after as number | undefined, now(), initial);
          return [created ? 201 : 200, { consumer: state, created }];
        }
        if (request.method === 'DELETE') {
          if (!(await deleteConsumer(executor, name))) throw new ChangesRequestError(404, 'name', `name: no consumer named "${name}"`);
          return [200, { deleted: name }];
        }
        const state = await requireConsumer(executor, name);
        const listing = (await listConsumers(executor, now())).find((candidate) => candidate.name === state.name) ?? (await loadConsumer(executor, name));
        return [200, { consumer: listing }];
      }),
  };

  return [changes, consumers, consumer];
}

/** Runs a handler, answering its result as JSON, or its `ChangesRequestError` as `{ error, parameter }` with its status. */
async function answer(response: ServerResponse, handler: () => Promise<[number, unknown]>): Promise<void> {
  try {
    const [status, body] = await handler();
    if (!response.writableEnded && !response.destroyed) sendJson(response, status, body);
  } catch (error) {
    if (!(error instanceof ChangesRequestError)) throw error;
    const headers: Record<string, string> = error.status === 405 ? { allow: String(error.details.allow ?? '') } : {};
    sendJson(response, error.status, { error: error.message, parameter: error.parameter, ...error.details }, headers);
  }
}

/** @throws ChangesRequestError (405) when the method is not one of `methods` */
function allow(request: IncomingMessage, methods: readonly string[]): void {
  const method = request.method === 'HEAD' ? 'GET' : (request.method ?? 'GET');
  if (!methods.includes(method)) throw new ChangesRequestError(405, 'method', `method: this path answers ${methods.join(', ')}`, { allow: methods.join(', ') });
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new ChangesRequestError(400, 'name', 'name: malformed %-escape in the consumer name');
  }
}

/**
 * The request's JSON body (an object), `{}` when empty and not `required`.
 * @throws ChangesRequestError 400 (not JSON, not an object, missing), 413 (too large), 415 (not application/json)
 */
async function readJsonBody(request: IncomingMessage, required: boolean): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new ChangesRequestError(413, 'body', `body: larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8').trim();
  if (text === '') {
    if (required) throw new ChangesRequestError(400, 'seq', 'seq: required, in a JSON body {"seq": SEQ} (the last seq handled)');
    return {};
  }
  if (request.headers['content-type']?.split(';')[0]?.trim().toLowerCase() !== 'application/json') {
    throw new ChangesRequestError(415, 'content-type', 'content-type: must be application/json');
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ChangesRequestError(400, 'body', 'body: not JSON');
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new ChangesRequestError(400, 'body', 'body: must be a JSON object');
  return body as Record<string, unknown>;
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
