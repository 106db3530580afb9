/**
 * The daemon's HTTP port (node:http). Every route is declared (src/http/route.ts) and answered by one
 * route table (src/http/route-table.ts); this module adds the orchestrators' routes to it:
 *
 *   GET /healthz        200 `{"status":"ok"}` while the process serves requests (liveness)
 *   GET /readyz         200 or 503 with a ReadinessVerdict as JSON: the API is reachable and accepts the token
 *   GET /metrics        Prometheus text exposition format (metrics.ts)
 *   GET /openapi.json   the OpenAPI document of every declared route (src/http/openapi-route.ts)
 *
 * `HEAD` is answered like `GET` without a body. Other paths are 404 (JSON), other methods 405 with
 * `Allow`, both from the table. A route that finds the SQLite mirror file write-locked by another
 * process past the connection's short tries (MirrorFileLockedError: a one-off command's long
 * transaction, a paused replica) is answered 503 with `Retry-After: 1`, as the moment's unavailability
 * it is; any other error a handler throws is a 500 (logged, never its message).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { z } from 'zod';
import { defineRouteSpec, route, type Route } from '../http/route.ts';
import { RouteTable, type MountedRoute } from '../http/route-table.ts';
import { silentLogger, type Logger } from '../logging/logger.ts';
import { MirrorFileLockedError } from '../mirror/sql/sqlite.ts';
import { PART_STATES } from './part-supervisor.ts';
import type { ReadinessVerdict } from './readiness.ts';

/** `/readyz`'s answer (readiness.ts `ReadinessVerdict`; the daemon adds its connections' details). */
const READINESS_VERDICT = z
  .looseObject({
    ready: z.boolean().meta({ description: 'True when the daemon can do its work (the API reachable, the token accepted).' }),
    reason: z.string().meta({ description: 'One sentence: why (not) ready.' }),
    status: z.number().int().nullable().meta({ description: "The last probe's HTTP status; null when no answer arrived." }),
    checkedAt: z.string().nullable().meta({ description: 'When that verdict was reached (ISO 8601).' }),
    parts: z
      .record(
        z.string(),
        z.looseObject({
          part: z.string(),
          state: z.enum(PART_STATES),
          required: z.boolean().meta({ description: 'The daemon is not ready while a required part is starting, retrying or stopped.' }),
          since: z.string().meta({ description: 'When the part entered this state (ISO 8601).' }),
          error: z.string().optional().meta({ description: "retrying: the last error's short form." }),
          failures: z.number().int().optional().meta({ description: 'retrying: failed attempts (or rounds) in a row.' }),
          reason: z.string().optional().meta({ description: 'starting or standby: what it waits for, or why it does not run here.' }),
        }),
      )
      .optional()
      .meta({ description: "Each part the daemon starts, by name (`<connection>/<part>` with several connections): its state (docs/operations.md \"The daemon's parts\")." }),
    daemon: z
      .looseObject({
        instance: z.string().meta({ description: "The daemon process's id: its lease holder name, as in the mirror's `daemons` and `leases` rows." }),
        pid: z.number().int(),
        startedAt: z.string().meta({ description: 'When the process started (ISO 8601).' }),
        mirrors: z.record(z.string(), z.string()).meta({ description: "Each connection's mirror key (16 hex digits; nothing of the location can be read from it): `status` checks the daemon serves its mirror." }),
      })
      .optional()
      .meta({ description: 'The daemon process answering (docs/operations.md "The daemon\'s parts").' }),
  })
  .meta({ id: 'ReadinessVerdict', description: 'The readiness verdict (docs/operations.md "Health and readiness").' });

/** The declarations of the orchestrators' routes (module comment). */
export const HEALTH_ROUTE_SPECS = {
  healthz: defineRouteSpec({
    method: 'GET',
    path: '/healthz',
    operationId: 'getHealth',
    summary: 'Liveness: 200 while the process serves requests',
    tags: ['health'],
    access: 'public',
    responses: { 200: { description: 'The process serves requests.', content: { 'application/json': z.object({ status: z.literal('ok') }) } } },
  }),
  readyz: defineRouteSpec({
    method: 'GET',
    path: '/readyz',
    operationId: 'getReadiness',
    summary: 'Readiness: 200 when the API is reachable and accepts the token, 503 otherwise',
    tags: ['health'],
    access: 'public',
    responses: {
      200: { description: 'Ready.', content: { 'application/json': READINESS_VERDICT } },
      503: { description: 'Not ready; `reason` says why.', content: { 'application/json': READINESS_VERDICT } },
    },
  }),
  metrics: defineRouteSpec({
    method: 'GET',
    path: '/metrics',
    operationId: 'getMetrics',
    summary: 'Prometheus metrics (text exposition format; docs/operations.md "Metrics")',
    tags: ['health'],
    access: 'public',
    responses: { 200: { description: 'Every `bizops_*` series.', content: { 'text/plain; version=0.0.4': undefined } } },
  }),
} as const;

/** The orchestrators' routes answering from `readiness()` and `metrics()`. */
export function healthRoutes(options: Pick<DaemonHttpServerOptions, 'readiness' | 'metrics'>): Route[] {
  return [
    route(HEALTH_ROUTE_SPECS.healthz, async (request, response) => sendJson(response, 200, { status: 'ok' }, request.method === 'HEAD')),
    route(HEALTH_ROUTE_SPECS.readyz, async (request, response) => {
      const verdict = await options.readiness();
      sendJson(response, verdict.ready ? 200 : 503, verdict, request.method === 'HEAD');
    }),
    route(HEALTH_ROUTE_SPECS.metrics, async (request, response) => {
      const metrics = await options.metrics();
      response.writeHead(200, { 'content-type': metrics.contentType, 'content-length': Buffer.byteLength(metrics.body), 'cache-control': 'no-store' });
      response.end(request.method === 'HEAD' ? undefined : metrics.body);
    }),
  ];
}

/** Options of `startDaemonHttpServer`: the address to bind, the sources behind `/readyz` and `/metrics`, and the other routes. */
export interface DaemonHttpServerOptions {
  /** Address to bind (config `http.host`): 127.0.0.1 by default, 0.0.0.0 inside a container. */
  host: string;
  /** Port (config `http.port`); 0 picks a free one (see `RunningHttpServer.port`). */
  port: number;
  readiness(): Promise<ReadinessVerdict>;
  metrics(): Promise<{ contentType: string; body: string }>;
  /** Every other route (the write API, the changelog, the console, `/openapi.json`); the health routes are mounted into it. Default: an empty table. */
  routes?: RouteTable;
  /** The 404's message for a path no route takes (default `no route PATH; ...`); undefined: the default. */
  notFound?(request: IncomingMessage, pathname: string): string | undefined;
  logger?: Logger;
}

/** A started daemon HTTP server: where it listens, what it serves and how to close it. */
export interface RunningHttpServer {
  /** `http://host:port`. */
  url: string;
  port: number;
  /** Every route mounted (method, documented path, operationId): what `/openapi.json` must list. */
  registered(): MountedRoute[];
  /** Stops accepting connections and closes open ones (idle keep-alive included). Safe to call twice. */
  close(): Promise<void>;
}

/** The 503's `error` when the SQLite mirror file is write-locked by another process (module comment). */
const MIRROR_LOCKED_ANSWER = 'the mirror file is locked by another process (a command writing to it); try again after Retry-After seconds';

function sendJson(response: ServerResponse, status: number, body: unknown, headOnly: boolean, headers: Record<string, string> = {}): void {
  const text = `${JSON.stringify(body)}\n`;
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store', ...headers });
  response.end(headOnly ? undefined : text);
}

/**
 * Starts the server and resolves once it listens.
 * @throws Error naming `http.port` and `http.host` when the address cannot be bound (e.g. EADDRINUSE)
 */
export async function startDaemonHttpServer(options: DaemonHttpServerOptions): Promise<RunningHttpServer> {
  const logger = (options.logger ?? silentLogger).child({ component: 'http' });
  const table = (options.routes ?? new RouteTable()).mount(healthRoutes(options));
  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    if (await table.handle(request, response)) return;
    const path = new URL(request.url ?? '/', 'http://daemon.local').pathname;
    const message = options.notFound?.(request, path) ?? `no route ${path}; try /healthz, /readyz, /metrics or /openapi.json`;
    sendJson(response, 404, { error: message }, request.method === 'HEAD');
  };

  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      const locked = error instanceof MirrorFileLockedError;
      if (locked) logger.warn({ path: request.url }, 'HTTP request answered 503: the mirror file is locked by another process');
      else logger.error({ err: error, path: request.url }, 'HTTP request failed');
      if (response.headersSent) response.destroy();
      else if (locked) sendJson(response, 503, { error: MIRROR_LOCKED_ANSWER }, request.method === 'HEAD', { 'retry-after': '1' });
      else sendJson(response, 500, { error: 'internal error; see the daemon log' }, request.method === 'HEAD');
    });
  });
  server.keepAliveTimeout = 5_000;
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      reject(new Error(`http.port: cannot listen on ${options.host}:${options.port} (${error.code ?? error.message}); set BIZOPS_HTTP_PORT / BIZOPS_HTTP_HOST`, { cause: error }));
    };
    server.once('error', onError);
    server.listen(options.port, options.host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  logger.info({ url, port: address.port }, 'HTTP server listening (/healthz, /readyz, /metrics, /openapi.json)');

  let closing: Promise<void> | undefined;
  return {
    url,
    port: address.port,
    registered: () => table.registered(),
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        for (const socket of sockets) socket.destroy();
      });
      return closing;
    },
  };
}
