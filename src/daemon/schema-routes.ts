/**
 * The event schemas over HTTP (docs/events.md "Over HTTP"), behind the read key (read-access.ts; the
 * reason is in docs/decisions.md), on the daemon's port and the same for every connection:
 *
 *   GET /schemas          200 `{ "schemas": { "<type>": <JSON Schema>, ... } }`: every event type
 *   GET /schemas/TYPE     200 the JSON Schema of one type (`application/schema+json`); 404 naming
 *                         the parameter `type` when TYPE is not an event type
 *
 * Other methods are 405 with `Allow: GET, HEAD`. The schemas come from src/notify/event-schemas.ts
 * (generated from the stream registry), built once when the routes are made.
 */
import type { ServerResponse } from 'node:http';
import { eventSchemas, type JsonSchema } from '../notify/event-schemas.ts';
import { sendJson, type ReadRoute } from './read-access.ts';

const SCHEMA_PATH = /^\/schemas(?:\/([^/]+))?\/?$/;

/** The `/schemas` routes (module comment). `schemas` defaults to every event type's schema of this build. */
export function schemaRoutes(schemas: Record<string, JsonSchema> = eventSchemas()): ReadRoute[] {
  const listing = { schemas };
  return [
    {
      matches: (pathname) => SCHEMA_PATH.test(pathname),
      async handle(request, response, url) {
        if (request.method !== 'GET' && request.method !== 'HEAD') {
          return sendJson(response, 405, { error: 'method: /schemas answers GET and HEAD only', parameter: 'method' }, { allow: 'GET, HEAD' });
        }
        const segment = SCHEMA_PATH.exec(url.pathname)?.[1];
        if (segment === undefined) return sendJson(response, 200, listing);
        const type = safeDecode(segment);
        const schema = type === undefined ? undefined : Object.hasOwn(schemas, type) ? schemas[type] : undefined;
        if (!schema) return unknownType(response, segment, schemas);
        return sendJson(response, 200, schema, { 'content-type': 'application/schema+json; charset=utf-8' });
      },
    },
  ];
}

function safeDecode(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

function unknownType(response: ServerResponse, segment: string, schemas: Record<string, JsonSchema>): void {
  const shown = segment.length > 80 ? `${segment.slice(0, 80)}…` : segment;
  sendJson(response, 404, { error: `type: no event type "${shown}"; GET /schemas lists them (${Object.keys(schemas).join(', ')})`, parameter: 'type' });
}
