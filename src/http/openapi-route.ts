/**
 * `GET /openapi.json`: the OpenAPI 3.1 document of every route the daemon declares (openapi.ts),
 * open like `/healthz` (it describes the API, holds no data). Made on the first request and kept:
 * zod-openapi is loaded then, never at start.
 */
import { z } from 'zod';
import { defineRouteSpec, route, type Route, type RouteSpec } from './route.ts';
import type { OpenApiInfo } from './openapi.ts';

/** The document's title and description; its version is the package's. */
export const OPENAPI_INFO: Omit<OpenApiInfo, 'version'> = {
  title: 'bizops-sync daemon',
  description:
    'The HTTP port of `bizops-sync daemon`: health and metrics for orchestrators, the changelog and named consumers (pull API), the event schemas, the write API and the operator console. Every request and answer is JSON unless said otherwise; a refused request is a 4xx with `{ error, parameter }` naming the parameter and the rule. docs/operations.md "The HTTP API".',
};

/** The declaration of `GET /openapi.json`. */
export const OPENAPI_ROUTE_SPEC = defineRouteSpec({
  method: 'GET',
  path: '/openapi.json',
  operationId: 'getOpenApiDocument',
  summary: 'This document: every route of the port, generated from the schemas the routes validate with',
  tags: ['meta'],
  access: 'public',
  responses: { 200: { description: 'The OpenAPI 3.1 document.', content: { 'application/json': z.looseObject({ openapi: z.string() }) } } },
});

/**
 * The OpenAPI document of `specs` with the package's version (openapi.ts `openApiDocument`).
 * Loads zod-openapi.
 */
export async function renderOpenApi(specs: readonly RouteSpec[]): Promise<Record<string, unknown>> {
  const [{ openApiDocument }, { default: packageJson }] = await Promise.all([import('./openapi.ts'), import('../../package.json', { with: { type: 'json' } })]);
  return openApiDocument(specs, { ...OPENAPI_INFO, version: packageJson.version });
}

/** The `GET /openapi.json` route serving the document of `specs()` (called on the first request). */
export function openApiRoute(specs: () => Promise<readonly RouteSpec[]>): Route {
  let text: Promise<string> | undefined;
  return route(OPENAPI_ROUTE_SPEC, async (_request, response) => {
    text ??= specs().then(renderOpenApi).then((document) => `${JSON.stringify(document, null, 2)}\n`);
    const body = await text;
    response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(body)), 'cache-control': 'no-cache' });
    response.end(body);
  });
}
