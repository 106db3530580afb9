/**
 * Reading a request's body for a route (route.ts `RouteBody`): at most `maxBytes`, of the route's
 * media type, JSON as an object or a form as its fields. Every refusal is a `RouteRefusal` naming
 * the rule: 413 too large, 415 another media type, 400 not JSON or not an object.
 */
import type { IncomingMessage } from 'node:http';
import { RouteRefusal, type RouteBody } from './route.ts';

/** The media type of a `Content-Type` header, lower case, without parameters (`application/json`). */
export function mediaTypeOf(header: string | undefined): string {
  return (header ?? '').split(';')[0]!.trim().toLowerCase();
}

/**
 * Reads the whole body as text.
 * @throws RouteRefusal 413 when it is larger than `maxBytes` bytes
 */
export async function readBodyText(request: IncomingMessage, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      request.resume();
      throw new RouteRefusal(413, 'body', `body: larger than ${maxBytes} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The body as the route declares it: a JSON object, or a form's fields as an object (the last value
 * of a repeated field). An empty body is `{}` (the route's schema then says what is missing).
 * @returns the object and whether the body was empty
 * @throws RouteRefusal 413 (too large), 415 (not the route's media type), 400 (not JSON, not an object)
 */
export async function readRouteBody(request: IncomingMessage, body: RouteBody): Promise<{ value: Record<string, unknown>; empty: boolean }> {
  const text = (await readBodyText(request, body.maxBytes)).trim();
  // A form's media type is checked even when empty: a browser always sends it.
  if (text === '' && body.mediaType === 'application/json') return { value: {}, empty: true };
  if (mediaTypeOf(request.headers['content-type']) !== body.mediaType) {
    throw new RouteRefusal(415, 'content-type', `content-type: must be ${body.mediaType}`);
  }
  if (body.mediaType === 'application/x-www-form-urlencoded') return { value: Object.fromEntries(new URLSearchParams(text)), empty: text === '' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new RouteRefusal(400, 'body', `body: not JSON${body.shape ? `; send ${body.shape}` : ''}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new RouteRefusal(400, 'body', `body: must be a JSON object${body.shape ? ` ${body.shape}` : ''}`);
  }
  return { value: parsed as Record<string, unknown>, empty: false };
}
