/**
 * The event schemas over HTTP (docs/events.md "Over HTTP"), behind the read key (read-access.ts; the
 * reason is in docs/decisions.md), on the daemon's port and the same for every connection:
 *
 *   GET /schemas          200 `{ "schemas": { "<type>": <JSON Schema>, ... } }`: every event type
 *   GET /schemas/TYPE     200 the JSON Schema of one type (`application/schema+json`); 404 naming
 *                         the parameter `type` when TYPE is not an event type
 *
 * Other methods are 405 with `Allow: GET, HEAD` (the route table). The schemas come from
 * src/notify/event-schemas.ts (generated from the stream registry), built once when the routes are made.
 */
import type { ServerResponse } from 'node:http';
import { z } from 'zod';
import { defineRouteSpec, errorResponse, route, type Route } from '../http/route.ts';
import { eventSchemas, type JsonSchema } from '../notify/event-schemas.ts';
import { sendJson } from './read-access.ts';

const JSON_SCHEMA = z.looseObject({}).meta({ id: 'JsonSchema', description: 'A JSON Schema (draft 2020-12) of one event type (docs/events.md).' });

/** The declarations of the `/schemas` routes (module comment). */
export const SCHEMA_ROUTE_SPECS = {
  list: defineRouteSpec({
    method: 'GET',
    path: '/schemas',
    operationId: 'listEventSchemas',
    summary: "Every event type's JSON Schema (docs/event-schemas.json holds the same)",
    tags: ['schemas'],
    access: 'read',
    responses: { 200: { description: 'The schemas by event type.', content: { 'application/json': z.object({ schemas: z.record(z.string(), JSON_SCHEMA) }) } } },
  }),
  one: defineRouteSpec({
    method: 'GET',
    path: '/schemas/{type}',
    operationId: 'getEventSchema',
    summary: "One event type's JSON Schema",
    tags: ['schemas'],
    access: 'read',
    params: z.object({ type: z.string().meta({ description: 'An event type (`deal.won`).', example: 'deal.won' }) }),
    responses: {
      200: { description: 'The schema.', content: { 'application/schema+json': JSON_SCHEMA } },
      404: errorResponse('Not an event type (the answer lists them).'),
    },
  }),
} as const;

/** The `/schemas` routes (module comment). `schemas` defaults to every event type's schema of this build. */
export function schemaRoutes(schemas: Record<string, JsonSchema> = eventSchemas()): Route[] {
  const listing = { schemas };
  return [
    route(SCHEMA_ROUTE_SPECS.list, async (_request, response) => sendJson(response, 200, listing)),
    route(SCHEMA_ROUTE_SPECS.one, async (_request, response, { params }) => {
      const schema = Object.hasOwn(schemas, params.type) ? schemas[params.type] : undefined;
      if (!schema) return unknownType(response, params.type, schemas);
      sendJson(response, 200, schema, { 'content-type': 'application/schema+json; charset=utf-8' });
    }),
  ];
}

function unknownType(response: ServerResponse, type: string, schemas: Record<string, JsonSchema>): void {
  const shown = type.length > 80 ? `${type.slice(0, 80)}…` : type;
  sendJson(response, 404, { error: `type: no event type "${shown}"; GET /schemas lists them (${Object.keys(schemas).join(', ')})`, parameter: 'type' });
}
