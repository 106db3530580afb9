/**
 * Wiring: the daemon's HTTP routes (docs/operations.md "The HTTP API"). `daemonRouteSpecs` is the
 * catalog of every declared route (health, `/openapi.json`, the write API, the changelog and
 * consumers, the event schemas, the console), which `GET /openapi.json` and docs/openapi.json
 * describe; `daemonRouteTable` mounts their handlers for the running connections in the one route
 * table the HTTP server answers from: the per-connection routes under `/connections/{connection}`,
 * and bare for a deployment of one connection.
 */
import type { IncomingMessage } from 'node:http';
import { CONSOLE_ROUTE_SPECS, consoleRoutes, type ConsoleRoutesOptions } from '../src/console/index.ts';
import { CHANGE_ROUTE_SPECS, changeRoutes, HEALTH_ROUTE_SPECS, SCHEMA_ROUTE_SPECS, schemaRoutes, type ChangeRoutesOptions } from '../src/daemon/index.ts';
import { CONNECTION_PREFIX, OPENAPI_ROUTE_SPEC, openApiRoute, RouteTable, type Route, type RouteSpec } from '../src/http/index.ts';

/**
 * Every route the daemon declares, in the document's order. Loads the write queue's face (its
 * routes' declarations hold the write kinds' schemas).
 */
export async function daemonRouteSpecs(): Promise<RouteSpec[]> {
  const { WRITE_ROUTE_SPECS } = await import('../src/writes/queue/index.ts');
  return [
    ...Object.values(HEALTH_ROUTE_SPECS),
    OPENAPI_ROUTE_SPEC,
    ...Object.values(CHANGE_ROUTE_SPECS),
    ...Object.values(SCHEMA_ROUTE_SPECS),
    ...Object.values(WRITE_ROUTE_SPECS),
    ...Object.values(CONSOLE_ROUTE_SPECS),
  ];
}

/** What one connection serves on the port. */
export interface RoutedConnection {
  name: string;
  /** The changelog's routes' sources (src/daemon/change-routes.ts). */
  changes: ChangeRoutesOptions;
  /** The write API's routes; null when the connection has no write queue (Redis did not answer). */
  writes: Route[] | null;
}

/** The keys and the console of the port. */
export interface DaemonRouteOptions {
  readKey: string | undefined;
  writeKey: string | undefined;
  console: ConsoleRoutesOptions;
}

/** The route table of the daemon's port (module comment); the health routes are added by the server. */
export function daemonRouteTable(connections: readonly RoutedConnection[], options: DaemonRouteOptions): RouteTable {
  const table = new RouteTable({ readKey: options.readKey, writeKey: options.writeKey });
  table.mount([openApiRoute(daemonRouteSpecs)]);
  for (const connection of connections) {
    const prefix = { literal: `/connections/${encodeURIComponent(connection.name)}`, documented: CONNECTION_PREFIX };
    table.mount([...changeRoutes(connection.changes), ...(connection.writes ?? [])], prefix);
  }
  if (connections.length === 1) table.mount([...changeRoutes(connections[0]!.changes), ...(connections[0]!.writes ?? [])]);
  table.mount(schemaRoutes());
  table.mount(consoleRoutes(options.console));
  return table;
}

/**
 * The 404's message for a caller holding a key of `routes` (`daemonRouteTable`'s: read or write):
 * with several connections, a bare per-connection path names the `/connections/{name}` form; an
 * unknown connection is named. Undefined otherwise (the server's own message; a stranger learns no
 * connection name).
 */
export function daemonNotFound(connections: readonly RoutedConnection[], routes: RouteTable) {
  return (request: IncomingMessage, pathname: string): string | undefined => {
    if (!routes.carriesKey(request)) return undefined;
    const names = connections.map((connection) => connection.name).join(', ');
    const prefixed = /^\/connections\/([^/]+)\//.exec(pathname);
    if (prefixed) return `no connection named "${safeDecode(prefixed[1]!)}" with this route (connections: ${names})`;
    if (connections.length > 1 && /^\/(changes|consumers|writes)(\/.*)?$/.test(pathname)) return `several connections are configured (${names}): use /connections/{name}${pathname}`;
    return undefined;
  };
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
