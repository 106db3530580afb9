/**
 * Waking readers of a PostgreSQL mirror (docs/mirror.md "PostgreSQL"): a connection of its own, out
 * of the pool, that runs `LISTEN <channel>` and calls back on every notification whose payload is
 * the mirror's schema (mirrors in one database share the channel). Writers send the notifications
 * with their COMMIT (postgres.ts `changesAppended`).
 *
 * A notification is only a hint: readers keep polling. When the listening connection is lost (server
 * restart, network), it is made again after a growing pause (1 s doubling up to 30 s) and the
 * callback is called once, as notifications sent meanwhile were lost.
 */
import pg from 'pg';
import type { Listening } from './executor.ts';
import { quoteIdentifier } from './postgres-location.ts';

/** Longest pause between two attempts to make the listening connection again, ms. */
const MAX_RECONNECT_PAUSE_MS = 30_000;

/** What a listening connection needs: the pool's connection settings, the channel, and whose notifications count. */
export interface PostgresListenOptions {
  /** `pg.Client` settings (connection string, startup options): those of the mirror's pool. */
  client: pg.ClientConfig;
  channel: string;
  /** Only notifications with this payload (the mirror's schema) call `onNotify`. */
  payload: string;
  onNotify: () => void;
  /** Turns a connection failure into the error thrown (naming the masked URL). */
  connectionError: (error: unknown) => Error;
}

/**
 * Starts listening: resolves once `LISTEN` ran on a fresh connection.
 * @throws what `options.connectionError` makes of the failure when the first connection cannot be made
 */
export async function listenOnPostgres(options: PostgresListenOptions): Promise<Listening> {
  const listening = new PostgresListening(options);
  await listening.connect();
  return listening;
}

class PostgresListening implements Listening {
  readonly #options: PostgresListenOptions;
  #client: pg.Client | undefined;
  #closed = false;
  #pauseMs = 1000;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: PostgresListenOptions) {
    this.#options = options;
  }

  /**
   * Makes the listening connection and runs `LISTEN`.
   * @throws the wrapped connection error when it cannot
   */
  async connect(): Promise<void> {
    const client = new pg.Client(this.#options.client);
    // Set before connecting: an error of an idle client without a listener would end the process.
    client.on('error', () => this.#lost(client));
    client.on('end', () => this.#lost(client));
    client.on('notification', (message) => {
      if (message.channel === this.#options.channel && message.payload === this.#options.payload) this.#options.onNotify();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${quoteIdentifier(this.#options.channel)}`);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw this.#options.connectionError(error);
    }
    if (this.#closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#client = client;
    this.#pauseMs = 1000;
  }

  /** The connection `client` was lost: make another after a pause, then wake the reader once. */
  #lost(client: pg.Client): void {
    if (this.#closed || this.#client !== client) return;
    this.#client = undefined;
    this.#retryLater();
  }

  #retryLater(): void {
    const pause = this.#pauseMs;
    this.#pauseMs = Math.min(this.#pauseMs * 2, MAX_RECONNECT_PAUSE_MS);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#closed) return;
      this.connect().then(
        () => {
          if (!this.#closed) this.#options.onNotify();
        },
        () => this.#retryLater(),
      );
    }, pause);
    this.#timer.unref();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => undefined);
  }
}
