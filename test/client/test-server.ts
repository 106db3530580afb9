/**
 * A tiny real HTTP server for the client tests: each test scripts the responses, the server records
 * every request it received (with its arrival time), and `close()` drops open keep-alive sockets.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort } from '../free-port.ts';

export interface ReceivedRequest {
  method: string;
  /** Path with its query string, as received. */
  url: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: string;
  /** Arrival time, ms epoch (after the body was read). */
  atMs: number;
}

export type Handler = (request: ReceivedRequest, response: ServerResponse, index: number) => void | Promise<void>;

export interface TestServer {
  /** `http://127.0.0.1:<port>`: the `{base_url}`. */
  url: string;
  requests: ReceivedRequest[];
  close(): Promise<void>;
}

/** Starts a server answering every request with `handler` (index counts requests from 0). */
export async function startTestServer(handler: Handler): Promise<TestServer> {
  const requests: ReceivedRequest[] = [];
  const server = createServer((incoming, response) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const url = new URL(incoming.url ?? '/', 'http://test');
      const received: ReceivedRequest = {
        method: incoming.method ?? '',
        url: incoming.url ?? '',
        path: url.pathname,
        query: url.searchParams,
        headers: incoming.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        atMs: Date.now(),
      };
      const index = requests.length;
      requests.push(received);
      void Promise.resolve(handler(received, response, index)).catch((error: unknown) => {
        response.destroy(error instanceof Error ? error : new Error(String(error)));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Sends `{ message, content }` with status 200 (spec §1 convention 3) and optional headers. */
export function sendEnvelope(response: ServerResponse, content: unknown, headers: Record<string, string> = {}, message = 'OK'): void {
  sendJson(response, 200, { message, content }, headers);
}

export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  response.end(text);
}

/** A port nothing listens on now, outside the kernel's ephemeral range (see test/free-port.ts). */
export function closedPort(): Promise<number> {
  return freePort();
}

/** A valid transaction list item (spec §2 Transaction). */
export function transactionItem(index: number): Record<string, unknown> {
  return {
    id: `txn_${index}`,
    type: index % 2 === 0 ? 'INCOME' : 'EXPENSE',
    status: 'CONFIRMED',
    amount: index % 2 === 0 ? 1000 + index : -(1000 + index),
    description: `item ${index}`,
    date: '2025-03-01T10:00:00.000Z',
  };
}

/** `{ transactions, pagination }` for one page of a list of `total` items. */
export function transactionPage(offset: number, limit: number, total: number): Record<string, unknown> {
  const items = [];
  for (let index = offset; index < Math.min(total, offset + limit); index++) items.push(transactionItem(index));
  return { transactions: items, pagination: { total, limit, offset, hasMore: offset + limit < total } };
}
