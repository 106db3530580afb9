/**
 * The write API on the daemon's HTTP port (docs/writes.md; config `http.writeApiKey`), declared once
 * (`WRITE_ROUTE_SPECS`, src/http/route.ts) and answered through the route table:
 *
 *   POST /writes        body `{ kind, payload, idempotencyKey?, actAs? }` (or header `Idempotency-Key`)
 *                       202 `{ write: { id, idempotencyKey, status } }` for a new write (accepted:
 *                       stored; `write.enqueueError` says when Redis did not take its job yet, which
 *                       the sweeper then queues), 200 with the existing write when the idempotency key
 *                       already names it, 400 `{ error, issues: [{ field, rule }] }` when invalid
 *                       (nothing kept), 409 when the key names a different write (nothing kept),
 *                       503 when the mirror did not store it (nothing kept), 415 when the
 *                       Content-Type is not application/json. A payload nested deeper than
 *                       `MAX_JSON_DEPTH` is a 400 naming the limit, checked before anything
 *                       recursive looks at it (src/writes/validation.ts)
 *   GET  /writes/{id}   200 `{ write }` (status, outcome, result, error, ...), 404, or 400 for a
 *                       malformed %-escape in {id}
 *
 * Both require `Authorization: Bearer <http.writeApiKey>` (401 otherwise). With no key configured the
 * routes are off: the route table does not mount them and the daemon's own 404 applies.
 *
 * The body's documented schema is one object per write kind, its `payload` the kind's own zod schema;
 * the intake validates the body with those same schemas (after the storability rule, so each issue
 * names its field: `checkedBy: 'handler'`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { unstorableTextRule } from '../../client/storable-json.ts';
import { defineRouteSpec, errorResponse, route, RouteRefusal, type Route } from '../../http/route.ts';
import { readRouteBody } from '../../http/request-body.ts';
import { RouteTable } from '../../http/route-table.ts';
import { silentLogger, type Logger } from '../../logging/logger.ts';
import { WRITE_KIND_NAMES, WRITE_KINDS } from '../kinds/index.ts';
import { IdempotencyConflictError, WriteValidationError } from '../write-errors.ts';
import type { WriteIntake } from './intake.ts';
import { publicWrite } from '../write-store.ts';

/** What the write routes need: the intake that queues writes and the bearer key guarding the routes. */
export interface WritesHttpDependencies {
  intake: WriteIntake;
  /** config `http.writeApiKey`; undefined turns the routes off. */
  writeApiKey: string | undefined;
  logger?: Logger;
  /** Largest request body accepted, bytes. Default 1 MiB. */
  maxBodyBytes?: number;
}

/** Largest request body of `POST /writes` by default, bytes. */
const MAX_BODY_BYTES = 1024 * 1024;

const IDEMPOTENCY_KEY = z
  .string()
  .regex(/^[\x21-\x7e]{1,200}$/)
  .meta({ description: 'Sending the same key again answers the write it names (200) instead of queuing another: 1 to 200 printable characters without spaces. Default: one derived from the kind and payload.' });
const ACT_AS = z.string().meta({ description: 'The name of the configured token the write is sent with (config `tokens`); default `default`.' });

/** The body of `POST /writes`: one object per write kind, its payload the kind's schema (docs/writes.md "Write kinds"). */
const WRITE_REQUEST = z
  .union(
    WRITE_KIND_NAMES.map((name) =>
      z
        .object({
          kind: z.literal(name),
          payload: WRITE_KINDS[name].payloadSchema,
          idempotencyKey: IDEMPOTENCY_KEY.optional(),
          actAs: ACT_AS.optional(),
        })
        .meta({ title: name, description: `${WRITE_KINDS[name].summary} (${WRITE_KINDS[name].spec}).` }),
    ),
  )
  .meta({ id: 'WriteRequest', description: 'A write: its kind, the kind\'s payload, and optionally an idempotency key and the token it acts as.' });

/** A write as `GET /writes/{id}` shows it (write-store.ts `publicWrite`). */
const WRITE = z
  .looseObject({
    id: z.string(),
    idempotencyKey: z.string(),
    kind: z.string(),
    status: z.enum(['queued', 'sending', 'succeeded', 'failed', 'needs_review']),
    payload: z.record(z.string(), z.unknown()),
    actAs: z.string(),
    outcome: z.string().nullable().meta({ description: 'How it ended, in one line.' }),
    result: z.unknown().meta({ description: "The API response's `content` when it succeeded." }),
    error: z.string().nullable(),
    httpStatus: z.number().int().nullable(),
    remoteId: z.string().nullable().meta({ description: 'The id of the record created or changed.' }),
    attempts: z.number().int().meta({ description: 'Requests sent.' }),
    createdAt: z.string(),
    updatedAt: z.string(),
    finishedAt: z.string().nullable(),
  })
  .meta({ id: 'Write' });

/** A write as `POST /writes` answers it. */
const ACCEPTED_WRITE = z.object({
  write: z.object({
    id: z.string(),
    idempotencyKey: z.string(),
    status: z.enum(['queued', 'sending', 'succeeded', 'failed', 'needs_review']),
    enqueueError: z.string().optional().meta({ description: 'Set when Redis did not take its job yet; the sweeper queues it.' }),
  }),
});

/** The declarations of the write API (module comment). */
export const WRITE_ROUTE_SPECS = {
  submit: defineRouteSpec({
    method: 'POST',
    path: '/writes',
    operationId: 'submitWrite',
    summary: 'Validates and queues a write (stored before it is answered; sent once at the pace of the rate budget)',
    tags: ['writes'],
    access: 'write',
    perConnection: true,
    headers: z.object({ 'idempotency-key': z.string().optional().meta({ description: 'The idempotency key, instead of `idempotencyKey` in the body (the same rule; both given: they must be equal).' }) }),
    body: { mediaType: 'application/json', schema: WRITE_REQUEST, required: true, maxBytes: MAX_BODY_BYTES, checkedBy: 'handler', shape: '{ "kind", "payload", "idempotencyKey"?, "actAs"? }' },
    responses: {
      200: { description: 'The idempotency key names this write already: it, unchanged.', content: { 'application/json': ACCEPTED_WRITE } },
      202: { description: 'Accepted: stored and queued.', content: { 'application/json': ACCEPTED_WRITE } },
      400: {
        description: 'Invalid: nothing kept. `issues` names each field and its rule.',
        content: { 'application/json': z.looseObject({ error: z.string(), issues: z.array(z.object({ field: z.string(), rule: z.string() })).optional() }) },
      },
      409: { description: 'The idempotency key names a different write: nothing kept.', content: { 'application/json': z.looseObject({ error: z.string(), existingWriteId: z.string() }) } },
      413: errorResponse('The body is larger than 1 MiB.'),
      415: errorResponse('The body is not application/json.'),
      503: { ...errorResponse('Not stored (the mirror refused): nothing kept; send it again with the same idempotency key.'), headers: { 'retry-after': 'Seconds to wait.' } },
    },
  }),
  get: defineRouteSpec({
    method: 'GET',
    path: '/writes/{id}',
    operationId: 'getWrite',
    summary: "A write's status, outcome, result and error",
    tags: ['writes'],
    access: 'write',
    perConnection: true,
    params: z.object({ id: z.string().meta({ description: "The write's id (`wr_...`).", example: 'wr_01J9Z8Q4' }) }),
    responses: { 200: { description: 'The write.', content: { 'application/json': z.object({ write: WRITE }) } }, 404: errorResponse('No write of that id.') },
  }),
} as const;

function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = `${JSON.stringify(body)}\n`;
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(text)),
    'cache-control': 'no-store',
    ...headers,
  });
  response.end(text);
}

/** The write API's routes on `deps.intake` (module comment), for a route table. */
export function writeRoutes(deps: Omit<WritesHttpDependencies, 'writeApiKey'>): Route[] {
  const logger = deps.logger ?? silentLogger;
  const submit = { ...WRITE_ROUTE_SPECS.submit, body: { ...WRITE_ROUTE_SPECS.submit.body, maxBytes: deps.maxBodyBytes ?? MAX_BODY_BYTES } };
  return [
    route(WRITE_ROUTE_SPECS.get, async (_request, response, { params }) => {
      // No write has an id the mirror cannot store (a NUL): asking the database would only fail.
      const write = unstorableTextRule(params.id) === undefined ? await deps.intake.getWrite(params.id) : undefined;
      if (!write) sendJson(response, 404, { error: `no write ${params.id}`, parameter: 'id' });
      else sendJson(response, 200, { write: publicWrite(write) });
    }),
    route(submit, async (request, response, { headers }) => {
      const read = await readRouteBody(request, submit.body);
      if (read.empty) throw new RouteRefusal(400, 'body', `body: required: ${submit.body.shape}`);
      const { kind, payload, idempotencyKey, actAs } = read.value;
      const headerKey = headers['idempotency-key'];
      if (headerKey !== undefined && idempotencyKey !== undefined && idempotencyKey !== headerKey) {
        sendJson(response, 400, { error: 'idempotencyKey in the body and the Idempotency-Key header differ', parameter: 'idempotencyKey' });
        return;
      }
      try {
        const result = await deps.intake.enqueue(kind, payload, {
          idempotencyKey: (idempotencyKey ?? headerKey) as string | undefined,
          actAs: actAs as string | undefined,
        });
        const write = { id: result.id, idempotencyKey: result.idempotencyKey, status: result.status, ...(result.enqueueError === undefined ? {} : { enqueueError: result.enqueueError }) };
        sendJson(response, result.created ? 202 : 200, { write });
      } catch (error) {
        if (error instanceof WriteValidationError) sendJson(response, 400, { error: error.message, issues: error.issues });
        else if (error instanceof IdempotencyConflictError) sendJson(response, 409, { error: error.message, existingWriteId: error.existingWriteId });
        else {
          // Only the mirror's insert (or a read before it) can fail here: once stored, a write is answered as accepted.
          logger.error({ error: error instanceof Error ? error.message : String(error) }, 'POST /writes: the write could not be stored');
          sendJson(response, 503, { error: 'not accepted: the write could not be stored (see the daemon log); nothing was kept, send it again (with the same Idempotency-Key)' }, { 'retry-after': '5' });
        }
      }
    }),
  ];
}

/**
 * Answers `POST /writes` and `GET /writes/{id}` alone (a server of its own: tests, benchmarks); the
 * daemon mounts `writeRoutes` in its route table instead.
 * @returns true when the request was one of these routes (and was answered), false otherwise
 */
export async function handleWritesRequest(request: IncomingMessage, response: ServerResponse, deps: WritesHttpDependencies): Promise<boolean> {
  return new RouteTable({ writeKey: deps.writeApiKey }).mount(writeRoutes(deps)).handle(request, response);
}
