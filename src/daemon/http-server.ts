/**
 * The daemon's HTTP port (node:http), for orchestrators and monitoring:
 *
 *   GET /healthz   200 `{"status":"ok"}` while the process serves requests (liveness)
 *   GET /readyz    200 or 503 with a ReadinessVerdict as JSON: the API is reachable and accepts the token
 *   GET /metrics   Prometheus text exposition format (metrics.ts)
 *
 * `HEAD` is answered like `GET` without a body. Other paths are 404, other methods 405, both JSON.
 * A `routeFirst` handler (the write API of src/writes, the routes behind the read key of
 * read-access.ts: `firstRouteOf` chains them) sees every request before these routes and returns
 * true when it answered.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { silentLogger, type Logger } from '../logging/logger.ts';
import type { ReadinessVerdict } from './readiness.ts';

/** A handler given the first look at every request; resolves true when it answered. */
export type FirstRoute = (request: IncomingMessage, response: ServerResponse) => Promise<boolean>;

/**
 * One `FirstRoute` trying each of `routes` in order until one answers (undefined ones skipped):
 * e.g. the write API, then the routes behind the read key (read-access.ts).
 */
export function firstRouteOf(...routes: readonly (FirstRoute | undefined)[]): FirstRoute | undefined {
  const present = routes.filter((route): route is FirstRoute => route !== undefined);
  if (present.length <= 1) return present[0];
  return async (request, response) => {
    for (const route of present) if (await route(request, response)) return true;
    return false;
  };
}

/** Options of `startDaemonHttpServer`: the address to bind and the sources behind `/readyz` and `/metrics`. */
export interface DaemonHttpServerOptions {
  /** Address to bind (config `http.host`): 127.0.0.1 by default, 0.0.0.0 inside a container. */
  host: string;
  /** Port (config `http.port`); 0 picks a free one (see `RunningHttpServer.port`). */
  port: number;
  readiness(): Promise<ReadinessVerdict>;
  metrics(): Promise<{ contentType: string; body: string }>;
  routeFirst?: FirstRoute;
  logger?: Logger;
}

/** A started daemon HTTP server: where it listens and how to close it. */
export interface RunningHttpServer {
  /** `http://host:port`. */
  url: string;
  port: number;
  /** Stops accepting connections and closes open ones (idle keep-alive included). Safe to call twice. */
  close(): Promise<void>;
}

function sendJson(response: ServerResponse, status: number, body: unknown, headOnly: boolean): void {
  const text = `${JSON.stringify(body)}\n`;
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
  response.end(headOnly ? undefined : text);
}

/**
 * Starts the server and resolves once it listens.
 * @throws Error naming `http.port` and `http.host` when the address cannot be bound (e.g. EADDRINUSE)
 */
export async function startDaemonHttpServer(options: DaemonHttpServerOptions): Promise<RunningHttpServer> {
  const logger = (options.logger ?? silentLogger).child({ component: 'http' });
  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    if (options.routeFirst && (await options.routeFirst(request, response))) return;
    const path = new URL(request.url ?? '/', 'http://daemon.local').pathname;
    const known = path === '/healthz' || path === '/readyz' || path === '/metrics';
    if (!known) return sendJson(response, 404, { error: `no route ${path}; try /healthz, /readyz or /metrics` }, request.method === 'HEAD');
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.setHeader('allow', 'GET, HEAD');
      return sendJson(response, 405, { error: `${path} answers GET and HEAD only` }, false);
    }
    const headOnly = request.method === 'HEAD';
    if (path === '/healthz') return sendJson(response, 200, { status: 'ok' }, headOnly);
    if (path === '/readyz') {
      const verdict = await options.readiness();
      return sendJson(response, verdict.ready ? 200 : 503, verdict, headOnly);
    }
    const metrics = await options.metrics();
    response.writeHead(200, { 'content-type': metrics.contentType, 'content-length': Buffer.byteLength(metrics.body), 'cache-control': 'no-store' });
    response.end(headOnly ? undefined : metrics.body);
  };

  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      logger.error({ err: error, path: request.url }, 'HTTP request failed');
      if (!response.headersSent) sendJson(response, 500, { error: 'internal error; see the daemon log' }, request.method === 'HEAD');
      else response.destroy();
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
  logger.info({ url, port: address.port }, 'HTTP server listening (/healthz, /readyz, /metrics)');

  let closing: Promise<void> | undefined;
  return {
    url,
    port: address.port,
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
