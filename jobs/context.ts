/**
 * The composition root: the one place that builds a process's parts from the configuration. Every
 * job (jobs/*.ts) opens a Context, uses it, and closes it; nothing under src/ builds another part.
 *
 *   config -> logger
 *          -> mirror (SQLite: records, changelog, sync state, writes)
 *          -> rate budgets (Redis, shared by every process; in-process when Redis does not answer)
 *          -> API client (the budgets and retries as layers around one request function)
 *          -> sync engine
 *          -> write queue (intake, worker, HTTP routes: needs Redis)      built on demand
 *          -> webhook dispatcher (its own SQLite connection)              built on demand
 *
 * The Redis-or-local decision is made here once per process (`openRateBudgets`): when Redis does not
 * answer, the process paces alone with an in-process budget, says so in one warning, and the write
 * queue stays off.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { existsSync } from 'node:fs';
import { Redis } from 'ioredis';
import type { Config } from '../src/config/schema.ts';
import { maskUrlPassword } from '../src/config/load.ts';
import { ApiClient, type ApiClientOptions } from '../src/client/client.ts';
import { LocalRateBudget } from '../src/client/local-rate-budget.ts';
import { PRIORITIES, type RateBudget, type RateBudgetStats } from '../src/client/rate-budget.ts';
import { rateBudgetKey, RedisRateBudget } from '../src/client/redis-rate-budget.ts';
import { createLogger, type Logger } from '../src/logging/logger.ts';
import { openMirror, type MirrorDatabase } from '../src/mirror/database.ts';
import { MirrorStore, type AppendedChange } from '../src/mirror/store.ts';
import { WebhookDispatcher, type WebhookDispatcherOptions } from '../src/notify/index.ts';
import { SyncEngine } from '../src/sync/engine.ts';
import {
  deploymentQueueName,
  handleWritesRequest,
  startWriteWorker,
  WriteIntake,
  type EnqueueOptions,
  type EnqueueResult,
  type WriteKindName,
  type WritePayload,
  type WriteQueueLocation,
  type WriteRecord,
  type WriteWorkerHandle,
  type WriteWorkerOptions,
} from '../src/writes/index.ts';

/** Hears the change rows a part of this process appended (the sync engine, the write worker). */
export type ChangeListener = (changes: readonly AppendedChange[]) => void;

/** How a Context is opened; everything else comes from the configuration. */
export interface ContextOptions {
  /** The process logger. Default: a new one masking the configured tokens and webhook secrets. */
  logger?: Logger;
  /**
   * `shared` (default): the rate budgets live in Redis and are shared by every process of the
   * deployment, and the write queue is available; when Redis does not answer, the process paces
   * alone with an in-process budget (one warning) and the write queue is off.
   * `local`: in-process budgets without asking Redis (the demo, tests of the sync alone).
   */
  rateBudget?: 'shared' | 'local';
  /** Retry timing of the API clients (tests shorten it). */
  clientRetry?: ApiClientOptions['retry'];
  /** Redis key names: tests give each run its own. Defaults: budgets `bizops:rate`, queue `bizops` / `deploymentQueueName(config)`. */
  redisKeys?: { budgetPrefix?: string; queuePrefix?: string; queueName?: string };
}

/**
 * The rate budgets of one process (spec §8): one per company, shared by every token (config
 * `rateLimit.scope: company`), or one per token (`scope: token`).
 */
export interface RateBudgets {
  /** True when the budgets live in Redis and are shared with the other processes of the deployment. */
  readonly shared: boolean;
  /** The budget a request acting as token `tokenName` spends (the same object for every name under company scope). */
  budgetFor(tokenName: string): RateBudget;
  /** The counters of every budget handed out so far, summed (for metrics). */
  stats(): RateBudgetStats;
  close(): Promise<void>;
}

/**
 * The write queue's parts (src/writes): the intake every write enters through, the HTTP routes and
 * the worker, sharing this process's Redis connection and rate budgets.
 */
export interface WriteQueue {
  intake: WriteIntake;
  /** Validates, stores and queues a write typed by kind (`WriteIntake.enqueueWrite`). */
  enqueueWrite<K extends WriteKindName>(kind: K, payload: WritePayload<K>, options?: EnqueueOptions): Promise<EnqueueResult>;
  /** The same for input not typed at compile time (CLI, HTTP). */
  enqueue(kind: string, payload: unknown, options?: EnqueueOptions): Promise<EnqueueResult>;
  getWrite(id: string): WriteRecord | undefined;
  /** `POST /writes`, `GET /writes/{id}`; resolves false when not one of them or `http.writeApiKey` is unset. */
  handleHttp(request: IncomingMessage, response: ServerResponse): Promise<boolean>;
  /** Starts a write worker in this process, on its own API client and SQLite connection; the context's `close` stops it. */
  startWorker(options?: Partial<Pick<WriteWorkerOptions, 'concurrency' | 'lockDurationMs' | 'stalledIntervalMs' | 'ambiguousSettleMs' | 'writeThrough'>>): Promise<WriteWorkerHandle>;
}

/**
 * Everything a job works with, built from the configuration by `openContext` (see this module's
 * header for the graph). One Context per process and job; `close()` releases every part it built,
 * in reverse order.
 */
export interface Context {
  config: Config;
  logger: Logger;
  /** This process's connection to the mirror (migrated, stream tables checked). */
  db: MirrorDatabase;
  store: MirrorStore;
  budgets: RateBudgets;
  /** The sync's API client (token `default`). */
  client: ApiClient;
  engine: SyncEngine;
  /** Adds a listener for change rows appended by this process's engine and write worker; returns its removal. */
  onChanges(listener: ChangeListener): () => void;
  /**
   * The write queue, built on first use.
   * @throws Error naming REDIS_URL when the budgets are not shared (Redis did not answer, or `rateBudget: 'local'`)
   */
  writeQueue(): WriteQueue;
  /** The webhook dispatcher for `config.webhooks` on its own SQLite connection, or null when none is configured. Not started. */
  webhookDispatcher(options?: Pick<WebhookDispatcherOptions, 'pollMs' | 'timeoutMs' | 'scheduleMs' | 'jitterRatio' | 'stopGraceMs' | 'onAttempt'>): WebhookDispatcher | null;
  /** Another API client on the same budgets (the readiness probe's, without retries). Closed with the context. */
  apiClient(options?: Pick<ApiClientOptions, 'timeoutMs' | 'retry'> & { tokens?: Record<string, string> }): ApiClient;
  /** Releases everything built, last built first. Safe to call twice. */
  close(): Promise<void>;
}

/**
 * True when Redis at `url` answers PING within `timeoutMs`.
 */
async function redisAnswers(url: string, timeoutMs = 2000): Promise<boolean> {
  const redis = new Redis(url, { lazyConnect: true, connectTimeout: timeoutMs, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return (await redis.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

/** A logger that masks every secret of `config` (tokens, webhook secrets). */
export function processLogger(config: Config, options: { level?: string } = {}): Logger {
  return createLogger({ secrets: [...Object.values(config.tokens), ...config.webhooks.flatMap((endpoint) => [endpoint.secret, ...(endpoint.previousSecret === undefined ? [] : [endpoint.previousSecret])])], ...options });
}

/** The mirror file a job reads does not exist yet: nothing has run. The message says what to run. */
export class MirrorMissingError extends Error {
  override name = 'MirrorMissingError';
}

/**
 * Opens the mirror file at `dbPath` for a job that only reads or administers it (`status`, `changes`,
 * `write`, `webhooks`): no API settings needed.
 * @throws MirrorMissingError `no mirror at <path> yet: run \`bizops-sync backfill\` first` when the file does not exist
 */
export function openExistingMirror(dbPath: string, options: { readonly?: boolean; hint?: string } = {}): MirrorDatabase {
  if (dbPath !== ':memory:' && !existsSync(dbPath)) throw new MirrorMissingError(`no mirror at ${dbPath} yet: ${options.hint ?? 'run `bizops-sync backfill` first'}`);
  return openMirror(dbPath, { readonly: options.readonly ?? false });
}

/**
 * The rate budgets for `config`: in Redis when it answers (or when `redis` is given), else
 * in-process with one warning. `mode: 'local'` skips Redis.
 */
async function openRateBudgets(config: Config, logger: Logger, mode: 'shared' | 'local', budgetPrefix: string | undefined): Promise<RateBudgets & { redis: Redis | null }> {
  let redis: Redis | null = null;
  if (mode === 'shared') {
    if (await redisAnswers(config.redisUrl)) {
      redis = new Redis(config.redisUrl, { maxRetriesPerRequest: null });
      let reported = false;
      redis.on('error', (error: Error) => {
        // Commands fail (and are reported) on their own; log the connection problem once, not per retry.
        if (!reported) logger.warn({ error: error.message }, 'Redis connection problem (write queue and rate budget)');
        reported = true;
      });
      redis.on('ready', () => {
        reported = false;
      });
    } else {
      logger.warn(
        { redis: maskUrlPassword(config.redisUrl) },
        'Redis does not answer: pacing with an in-process rate budget, not shared with other processes of this deployment; the write queue is off',
      );
    }
  }
  const budgets = new Map<string, RateBudget>();
  const connection = redis;
  return {
    shared: connection !== null,
    redis: connection,
    budgetFor(tokenName) {
      const key = rateBudgetKey(config, config.rateLimit.scope === 'token' ? tokenName : 'default');
      let budget = budgets.get(key);
      if (!budget) {
        const limits = { limit: config.rateLimit.perMinute, windowMs: config.rateLimit.windowMs };
        budget = connection ? new RedisRateBudget({ redis: connection, key, prefix: budgetPrefix, ...limits }) : new LocalRateBudget(limits);
        budgets.set(key, budget);
      }
      return budget;
    },
    stats() {
      const total: RateBudgetStats = { granted: { write: 0, incremental: 0, backfill: 0 }, waitedMs: 0, pauses: 0 };
      for (const budget of budgets.values()) {
        const stats = budget.stats();
        for (const priority of PRIORITIES) total.granted[priority] += stats.granted[priority];
        total.waitedMs += stats.waitedMs;
        total.pauses += stats.pauses;
      }
      return total;
    },
    async close() {
      for (const budget of budgets.values()) await budget.close?.();
      if (connection) await connection.quit().catch(() => connection.disconnect());
    },
  };
}

/**
 * Steps that undo what was built, run last first; a failing step is logged and the others still run.
 */
export class Teardown {
  readonly #steps: (() => Promise<void> | void)[] = [];
  readonly #logger: Logger;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** Adds the step undoing the part just built. */
  add(step: () => Promise<void> | void): void {
    this.#steps.push(step);
  }

  /** Runs every step added so far, last first, each once. */
  async run(): Promise<void> {
    for (const step of this.#steps.splice(0).reverse()) {
      try {
        await step();
      } catch (error) {
        this.#logger.error({ err: error }, 'closing a part failed');
      }
    }
  }
}

/**
 * Builds the parts of one process from `config` (this module's header). The caller must `close()` it.
 * @throws Error when the mirror cannot be opened or a stream table disagrees with its definition
 */
export async function openContext(config: Config, options: ContextOptions = {}): Promise<Context> {
  const logger = options.logger ?? processLogger(config);
  const cleanups = new Teardown(logger);
  const close = () => cleanups.run();
  try {
    const budgets = await openRateBudgets(config, logger, options.rateBudget ?? 'shared', options.redisKeys?.budgetPrefix);
    cleanups.add(() => budgets.close());
    const db = openMirror(config.dbPath);
    cleanups.add(() => {
      db.close();
    });
    const store = new MirrorStore(db);
    const listeners = new Set<ChangeListener>();
    const notify: ChangeListener = (changes) => {
      for (const listener of listeners) listener(changes);
    };
    const apiClient: Context['apiClient'] = (clientOptions = {}) => {
      const client = new ApiClient({
        baseUrl: config.baseUrl,
        tokens: clientOptions.tokens ?? config.tokens,
        budget: (tokenName) => budgets.budgetFor(tokenName),
        logger,
        timeoutMs: clientOptions.timeoutMs,
        retry: clientOptions.retry ?? options.clientRetry,
      });
      cleanups.add(() => client.close());
      return client;
    };
    const client = apiClient();
    const engine = new SyncEngine({ client, store, logger, overlapSeconds: config.sync.overlapSeconds, onChanges: notify });

    let writeQueue: WriteQueue | undefined;
    const openWriteQueue = (): WriteQueue => {
      if (!budgets.redis) {
        throw new Error(`the write queue needs Redis, and REDIS_URL (${maskUrlPassword(config.redisUrl)}) did not answer when this process started`);
      }
      const queue: WriteQueueLocation = {
        redis: budgets.redis,
        queueName: options.redisKeys?.queueName ?? deploymentQueueName(config),
        prefix: options.redisKeys?.queuePrefix,
      };
      const intake = new WriteIntake({ db, queue, tokenNames: Object.keys(config.tokens), logger });
      cleanups.add(() => intake.close());
      return {
        intake,
        enqueueWrite: (kind, payload, enqueueOptions) => intake.enqueueWrite(kind, payload, enqueueOptions),
        enqueue: (kind, payload, enqueueOptions) => intake.enqueue(kind, payload, enqueueOptions),
        getWrite: (id) => intake.getWrite(id),
        handleHttp: (request, response) => handleWritesRequest(request, response, { intake, writeApiKey: config.http.writeApiKey, logger }),
        async startWorker(workerOptions = {}) {
          // Its own connection: the worker's transactions never wait behind the sync's.
          const workerDb = openMirror(config.dbPath);
          cleanups.add(() => {
            workerDb.close();
          });
          const worker = await startWriteWorker({
            db: workerDb,
            queue,
            api: { baseUrl: config.baseUrl, tokens: config.tokens, budget: (tokenName) => budgets.budgetFor(tokenName), retry: options.clientRetry },
            logger,
            onChanges: notify,
            ...workerOptions,
          });
          cleanups.add(() => worker.close());
          return worker;
        },
      };
    };

    return {
      config,
      logger,
      db,
      store,
      budgets,
      client,
      engine,
      onChanges(listener) {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
      writeQueue() {
        writeQueue ??= openWriteQueue();
        return writeQueue;
      },
      webhookDispatcher(dispatcherOptions = {}) {
        if (config.webhooks.length === 0) return null;
        const dispatcherDb = openMirror(config.dbPath);
        cleanups.add(() => {
          dispatcherDb.close();
        });
        const dispatcher = new WebhookDispatcher({ db: dispatcherDb, endpoints: config.webhooks, logger, ...dispatcherOptions });
        cleanups.add(() => dispatcher.stop());
        return dispatcher;
      },
      apiClient,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
