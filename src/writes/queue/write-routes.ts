/**
 * The write API on the daemon's HTTP port (docs/writes.md; config `http.writeApiKey`):
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
 * routes are off: the handler answers nothing and the daemon's own 404 applies.
 *
 *   routeFirst: (request, response) => handleWritesRequest(request, response, { intake, writeApiKey: config.http.writeApiKey })
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { unstorableTextRule } from '../../client/storable-json.ts';
import { silentLogger, type Logger } from '../../logging/logger.ts';
import { IdempotencyConflictError, WriteValidationError } from '../write-errors.ts';
import type { WriteIntake } from './intake.ts';
import { publicWrite } from '../write-store.ts';

/** What `handleWritesRequest` needs: the intake that queues writes and the bearer key guarding the routes. */
export interface WritesHttpDependencies {
  intake: WriteIntake;
  /** config `http.writeApiKey`; undefined turns the routes off. */
  writeApiKey: string | undefined;
  logger?: Logger;
  /** Largest request body accepted, bytes. Default 1 MiB. */
  maxBodyBytes?: number;
}

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

/** Constant-time comparison of the presented bearer key with the configured one. */
function authorized(request: IncomingMessage, key: string): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  if (!match) return false;
  const presented = createHash('sha256').update(match[1]!).digest();
  const expected = createHash('sha256').update(key).digest();
  return timingSafeEqual(presented, expected);
}

/** `decodeURIComponent`, or null when the segment holds a malformed %-escape (`%E0%A4%A`, `%zz`). */
function decodePathSegment(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/** True for `application/json`, with or without parameters (`; charset=utf-8`), in any case. */
function isJsonContentType(header: string | undefined): boolean {
  return header?.split(';')[0]?.trim().toLowerCase() === 'application/json';
}

class BodyTooLargeError extends Error {}

function readBody(request: IncomingMessage, maxBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        reject(new BodyTooLargeError(`request body is larger than ${maxBytes} bytes`));
        request.resume();
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

/**
 * Answers `POST /writes` and `GET /writes/{id}`.
 * @returns true when the request was one of these routes (and was answered), false otherwise
 */
export async function handleWritesRequest(request: IncomingMessage, response: ServerResponse, deps: WritesHttpDependencies): Promise<boolean> {
  if (!deps.writeApiKey) return false;
  const path = new URL(request.url ?? '/', 'http://daemon.local').pathname.replace(/\/+$/, '');
  const single = /^\/writes\/([^/]+)$/.exec(path);
  if (path !== '/writes' && !single) return false;
  const logger = deps.logger ?? silentLogger;

  if (!authorized(request, deps.writeApiKey)) {
    sendJson(response, 401, { error: 'missing or wrong bearer key: send Authorization: Bearer <http.writeApiKey>' }, { 'www-authenticate': 'Bearer' });
    return true;
  }

  if (single) {
    if (request.method !== 'GET') {
      sendJson(response, 405, { error: `/writes/{id} answers GET only` }, { allow: 'GET' });
      return true;
    }
    const id = decodePathSegment(single[1]!);
    if (id === null) {
      sendJson(response, 400, { error: 'the write id in /writes/{id} has a malformed %-escape (each % must be followed by two hex digits of UTF-8)' });
      return true;
    }
    // No write has an id the mirror cannot store (a NUL): asking the database would only fail.
    const write = unstorableTextRule(id) === undefined ? await deps.intake.getWrite(id) : undefined;
    if (!write) sendJson(response, 404, { error: `no write ${id}` });
    else sendJson(response, 200, { write: publicWrite(write) });
    return true;
  }

  if (request.method !== 'POST') {
    sendJson(response, 405, { error: '/writes answers POST only (GET /writes/{id} reads one)' }, { allow: 'POST' });
    return true;
  }
  if (!isJsonContentType(request.headers['content-type'])) {
    sendJson(response, 415, { error: 'Content-Type must be application/json' }, { accept: 'application/json' });
    return true;
  }
  let body: unknown;
  try {
    const text = await readBody(request, deps.maxBodyBytes ?? 1024 * 1024);
    body = JSON.parse(text);
  } catch (error) {
    if (error instanceof BodyTooLargeError) sendJson(response, 413, { error: error.message });
    else sendJson(response, 400, { error: 'the body must be JSON: { "kind", "payload", "idempotencyKey"?, "actAs"? }' });
    return true;
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    sendJson(response, 400, { error: 'the body must be a JSON object: { "kind", "payload", "idempotencyKey"?, "actAs"? }' });
    return true;
  }
  const { kind, payload, idempotencyKey, actAs } = body as Record<string, unknown>;
  const headerKey = request.headers['idempotency-key'];
  const key = idempotencyKey ?? (typeof headerKey === 'string' ? headerKey : undefined);
  if (typeof headerKey === 'string' && idempotencyKey !== undefined && idempotencyKey !== headerKey) {
    sendJson(response, 400, { error: 'idempotencyKey in the body and the Idempotency-Key header differ' });
    return true;
  }
  try {
    const result = await deps.intake.enqueue(kind, payload, {
      idempotencyKey: key as string | undefined,
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
  return true;
}
