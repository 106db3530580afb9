/**
 * An HTTP proxy in front of the simulator that holds the ANSWERS of the first `count` requests
 * matching `hold` until `release()`: the server received and applied them (an email went out), only
 * their answers are late. A test uses it to keep writes in flight in one worker, on a condition
 * (`held`), for as long as it needs, instead of guessing with a latency.
 *
 *   const proxy = await startHoldingProxy(sim.url, (request) => request.method === 'POST', 3);
 *   // worker on proxy.url ... await waitFor(() => proxy.held.length === 3, ...); ... proxy.release();
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';

export interface HoldingProxy {
  /** Base URL to give the client instead of the simulator's. */
  url: string;
  /** `Idempotency-Key` headers of the requests whose answer is held now (the server answered them). */
  readonly held: readonly string[];
  /** Sends every held answer, and passes every later one at once. */
  release(): void;
  close(): Promise<void>;
}

/** Starts the proxy on a free port of 127.0.0.1, forwarding to `target` (the simulator's base URL). */
export async function startHoldingProxy(target: string, hold: (request: IncomingMessage) => boolean, count: number): Promise<HoldingProxy> {
  const held: string[] = [];
  const waiting: (() => void)[] = [];
  let chosen = 0;
  let released = false;
  const server: Server = createServer((request, response) => {
    const holdThis = !released && chosen < count && hold(request);
    if (holdThis) chosen++;
    const upstream = httpRequest(new URL(request.url ?? '/', target), { method: request.method, headers: request.headers }, (answer) => {
      const send = () => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      };
      if (!holdThis || released) return send();
      held.push(String(request.headers['idempotency-key'] ?? ''));
      waiting.push(send);
    });
    upstream.on('error', () => response.destroy());
    request.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const release = () => {
    released = true;
    for (const send of waiting.splice(0)) send();
  };
  return {
    url: `http://127.0.0.1:${port}`,
    held,
    release,
    async close() {
      release();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
