/**
 * The daemon's HTTP routes, declared once (docs/operations.md "The HTTP API"): a route's
 * declaration (method, path, zod schemas, responses, access), the route table that matches requests
 * and validates their input with those schemas, the bearer keys, and `GET /openapi.json`, the
 * OpenAPI document generated from the same declarations (zod-openapi, loaded on demand). The face of
 * src/http/.
 */
export { CONNECTION_PREFIX, defineRouteSpec, ERROR_BODY, errorResponse, route, RouteRefusal, type Route, type RouteAccess, type RouteBody, type RouteInput, type RouteMethod, type RouteResponse, type RouteSpec } from './route.ts';
export { refuseAsJson, RouteTable, type MountedRoute, type RoutePrefix, type RouteTableOptions } from './route-table.ts';
export { BearerKey } from './bearer.ts';
export { mediaTypeOf, readBodyText, readRouteBody } from './request-body.ts';
export { OPENAPI_ROUTE_SPEC, openApiRoute, renderOpenApi } from './openapi-route.ts';
