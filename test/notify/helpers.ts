/**
 * Test helpers for src/notify: a real mirror (a file in a temp dir, or a fresh PostgreSQL schema
 * under BIZOPS_TEST_MIRROR=postgres: test/test-mirror.ts) opened through the executor the modules
 * under test take, changelog rows inserted with SQL (as the sync engine would append them), and
 * real node:http webhook receivers on 127.0.0.1.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { createLogger, type Logger } from '../../src/logging/logger.ts';
import { openMirrorConnection } from '../../src/mirror/open.ts';
import type { SqlConnection, SqlExecutor } from '../../src/mirror/sql/executor.ts';
import type { ChangeEvent } from '../../src/notify/changelog-reader.ts';
import { testMirrorLocation } from '../test-mirror.ts';

/** A fresh Standard Webhooks secret: whsec_ + base64 of 32 random bytes. */
export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

export interface TempMirror {
  dir: string;
  /** Where the mirror is: the file in `dir`, or a PostgreSQL URL (`testMirrorLocation`). */
  path: string;
  /** The mirror's connection: rows written and checked directly, as the sync engine's would be, and given to the modules under test. */
  connection: SqlConnection;
  /** Opens another connection to the same mirror. */
  connect(): Promise<SqlConnection>;
  /** Closes every connection and removes the directory. */
  cleanup(): Promise<void>;
}

/** A fresh, migrated mirror for one test. */
export async function tempMirror(): Promise<TempMirror> {
  const dir = mkdtempSync(join(tmpdir(), 'bizops-notify-'));
  const path = testMirrorLocation(join(dir, 'mirror.db'));
  const connection = await openMirrorConnection(path);
  const connections: SqlConnection[] = [connection];
  return {
    dir,
    path,
    connection,
    async connect() {
      const extra = await openMirrorConnection(path);
      connections.push(extra);
      return extra;
    },
    async cleanup() {
      for (const opened of connections) await opened.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A change row as `insertChanges` wrote it (the shape the changelog reader returns). */
export type InsertedChange = ChangeEvent;

/**
 * Appends `count` rows to `changes` like the sync engine does; types cycle through `types`.
 * @returns the rows with their seq
 */
export async function insertChanges(executor: SqlExecutor, count: number, options: { types?: string[]; occurredAt?: Date } = {}): Promise<InsertedChange[]> {
  const types = options.types ?? ['deal.updated'];
  const insert = 'INSERT INTO changes (event_id, type, stream, record_id, occurred_at, data) VALUES (?, ?, ?, ?, ?, ?) RETURNING seq';
  const rows: InsertedChange[] = [];
  await executor.transaction(async (tx) => {
    for (let index = 0; index < count; index += 1) {
      const type = types[index % types.length]!;
      const stream = `${type.split('.')[0]}s`;
      const recordId = `rec_${randomUUID().slice(0, 8)}`;
      const occurredAt = (options.occurredAt ?? new Date()).toISOString();
      const data = { record: { id: recordId, title: `record ${index}`, value: index * 100 }, changes: { value: { old: null, new: index * 100 } } };
      const eventId = `evt_${randomUUID()}`;
      const inserted = await tx.get<{ seq: number }>(insert, [eventId, type, stream, recordId, occurredAt, JSON.stringify(data)]);
      rows.push({ seq: inserted!.seq, eventId, type, stream, recordId, occurredAt, data });
    }
  });
  return rows;
}

/** One request a receiver got. */
export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** performance.now() at arrival. */
  at: number;
  /** The request's index among all requests this receiver got (0-based). */
  index: number;
}

/** Decides the answer; return nothing to let the receiver answer 204. Not answering at all (hang) is allowed. */
export type ReceiverHandler = (request: ReceivedRequest, response: ServerResponse) => void | 'handled' | Promise<void | 'handled'>;

/** A real HTTP webhook receiver on 127.0.0.1 that records every request. */
export class Receiver {
  readonly requests: ReceivedRequest[] = [];
  handler: ReceiverHandler = () => undefined;
  #server: Server | null = null;
  #port = 0;

  /** Starts listening (on `port`, or on a free port the first time). */
  async start(port = this.#port): Promise<this> {
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const received: ReceivedRequest = {
          method: request.method ?? '',
          url: request.url ?? '',
          headers: request.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          at: performance.now(),
          index: this.requests.length,
        };
        this.requests.push(received);
        void Promise.resolve(this.handler(received, response)).then((result) => {
          if (result !== 'handled' && !response.headersSent && !response.writableEnded) response.writeHead(204).end();
        });
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.#server = server;
    this.#port = (server.address() as AddressInfo).port;
    return this;
  }

  get port(): number {
    return this.#port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.#port}/hooks`;
  }

  /** The webhook-id header of each request, in arrival order (duplicates included). */
  get ids(): string[] {
    return this.requests.map((request) => String(request.headers['webhook-id']));
  }

  /** Stops listening and drops open connections (a "down" receiver: connections are then refused). */
  async close(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = null;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A logger whose JSON lines land in `lines`. */
export function capturingLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const logger = createLogger({ level: 'debug', pretty: false, destination: { write: (line: string) => void lines.push(line) } });
  return { logger, lines };
}

/** Seq of a received webhook (from the body's data.seq). */
export function seqOf(request: ReceivedRequest): number {
  return (JSON.parse(request.body) as { data: { seq: number } }).data.seq;
}

/**
 * Registers cleanup for the calling test file and returns a function starting receivers, each
 * closed after its test (after the test file's own afterEach, which stops dispatchers first).
 */
export function receiverFixture(): () => Promise<Receiver> {
  const started: Receiver[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((receiver) => receiver.close()));
  });
  return async () => {
    const receiver = await new Receiver().start();
    started.push(receiver);
    return receiver;
  };
}
