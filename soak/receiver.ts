/**
 * A webhook receiver the way docs/webhooks.md asks one to be written: it verifies the signature on
 * the raw body (standardwebhooks), deduplicates on `webhook-id`, and keeps each record's accepted
 * events as a chained checksum. The schedule makes it misbehave: answer 500 for a while, hang,
 * reject one record's events (422), or be away (its port closed) and come back.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { RecordChains, recordKey } from './chain.ts';

/** How a receiver misbehaves until a moment (ms epoch). */
export type ReceiverMode = 'fail' | 'hang' | 'reject-record' | 'outage';

/** One webhook receiver on a port of its own. */
export class SoakReceiver {
  readonly name: string;
  readonly secret: string;
  readonly chains = new RecordChains();
  /** Every event id accepted (deduplication). */
  readonly accepted = new Set<string>();
  /** Seqs in the order first accepted (the strict-order endpoint's global order). */
  readonly order: number[] = [];
  /** Requests answered by kind: accepted, duplicate, failed (500), rejected (422), hung, bad signature. */
  readonly counts = { accepted: 0, duplicates: 0, failed: 0, rejected: 0, hung: 0, badSignature: 0 };
  /** Lines naming what a receiver saw that no sender may do (a bad signature). */
  readonly problems: string[] = [];
  port = 0;
  #server: Server | undefined;
  #sockets = new Set<Socket>();
  #webhook: Webhook;
  #mode: { mode: ReceiverMode; until: number; record?: string } | undefined;
  #hung = new Set<() => void>();

  constructor(name: string, secret: string) {
    this.name = name;
    this.secret = secret;
    this.#webhook = new Webhook(secret);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hooks/${this.name}`;
  }

  /** Listens (again) on its port (a free one the first time). */
  async listen(): Promise<void> {
    const server = createServer((request, response) => void this.#handle(request, response));
    server.on('connection', (socket: Socket) => {
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (typeof address === 'object' && address) this.port = address.port;
    this.#server = server;
  }

  /** Closes the port and every connection (an outage, or the end). */
  async close(): Promise<void> {
    for (const release of this.#hung) release();
    const server = this.#server;
    this.#server = undefined;
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
      for (const socket of this.#sockets) socket.destroy();
    });
  }

  /**
   * Misbehaves in `mode` for `ms` from now: `record` (a record key, `stream/id`) for `reject-record`.
   * An outage closes the port now and opens it again after `ms`.
   */
  async misbehave(mode: ReceiverMode, ms: number, record?: string): Promise<void> {
    this.#mode = { mode, until: Date.now() + ms, ...(record ? { record } : {}) };
    if (mode === 'outage') {
      await this.close();
      setTimeout(() => {
        if (this.#mode?.mode === 'outage') this.#mode = undefined;
        if (!this.#server) void this.listen().catch((error: unknown) => this.problems.push(`${this.name}: could not listen again: ${String(error)}`));
      }, ms).unref();
    }
  }

  /** Behaves again at once (and is listening). */
  async heal(): Promise<void> {
    this.#mode = undefined;
    for (const release of this.#hung) release();
    if (!this.#server) await this.listen();
  }

  async #handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const mode = this.#mode && Date.now() < this.#mode.until ? this.#mode : undefined;
    if (mode?.mode === 'fail') {
      this.counts.failed += 1;
      response.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"soak: failing"}');
      return;
    }
    let event: { type: string; data: { seq?: number; stream?: string; record_id?: string; record?: unknown } };
    try {
      event = this.#webhook.verify(body, request.headers as Record<string, string>) as typeof event;
    } catch (error) {
      this.counts.badSignature += 1;
      this.problems.push(`${this.name}: a request failed signature verification: ${String(error)}`);
      response.writeHead(400).end();
      return;
    }
    const id = String(request.headers['webhook-id']);
    const data = event.data;
    if (mode?.mode === 'reject-record' && data.stream !== undefined && data.record_id !== undefined && recordKey({ stream: data.stream, recordId: data.record_id }) === mode.record) {
      this.counts.rejected += 1;
      response.writeHead(422, { 'content-type': 'application/json' }).end('{"error":"soak: this record is refused"}');
      return;
    }
    if (mode?.mode === 'hang') {
      this.counts.hung += 1;
      await new Promise<void>((resolve) => {
        const release = () => {
          this.#hung.delete(release);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(release, Math.max(0, mode.until - Date.now()));
        this.#hung.add(release);
        response.once('close', release);
      });
    }
    this.#accept(id, event);
    if (!response.destroyed) response.writeHead(204).end();
  }

  #accept(id: string, event: { type: string; data: { seq?: number; stream?: string; record_id?: string; record?: unknown } }): void {
    if (event.type === 'webhook.test') return;
    if (this.accepted.has(id)) {
      this.counts.duplicates += 1;
      return;
    }
    this.accepted.add(id);
    this.counts.accepted += 1;
    const data = event.data;
    this.order.push(Number(data.seq));
    this.chains.append({ eventId: id, type: event.type, seq: Number(data.seq), stream: String(data.stream), recordId: String(data.record_id), record: data.record ?? null });
  }
}
