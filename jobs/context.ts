/**
 * The composition root: the one place that builds a process's parts from the configuration. Every
 * job (jobs/*.ts) opens a Context, uses it, and closes it; nothing under src/ builds another part.
 *
 *   config -> logger
 *          -> mirror (SQLite file or PostgreSQL schema: records, changelog, sync state, writes)
 *          -> rate budgets (Redis, shared by every process; in-process when Redis does not answer)
 *          -> API client (the budgets and retries as layers around one request function)
 *          -> sync engine
 *          -> write queue (intake, worker, HTTP routes: needs Redis)      built on demand
 *          -> webhook dispatcher (SQLite: its own connection; PostgreSQL: the pool)  built on demand
 *
 * What is built on demand is also loaded on demand (`await import`): a process that only syncs
 * never loads BullMQ nor the webhook sender.
 *
 * A deployment of several connections (companies) gets one Context per connection from
 * `openDeployment`, all on one set of SharedParts: one Redis connection and one rate budget per
 * company (`company:<companyId>@<host>`), so two connections on one company spend one budget.
 *
 * The Redis-or-local decision is made here once per process (`openSharedParts`): when Redis does not
 * answer, the process paces alone with an in-process budget, says so in one warning, and the write
 * queue stays off.
 */
import type { Route } from '../src/http/index.ts';
import type { Redis } from 'ioredis';
import { deploymentSecrets, tokenSetting, type Config, type DeploymentConfig } from '../src/config/index.ts';
import {
  ApiClient,
  LocalRateBudget,
  PRIORITIES,
  rateBudgetKey,
  RedisRateBudget,
  connectProducer,
  type ApiClientOptions,
  type RateBudget,
  type RateBudgetStats,
} from '../src/client/index.ts';
import { createLogger, maskUrlPassword, type Logger } from '../src/logging/index.ts';
import { mirrorHealthCheck, MirrorStore, type SqlConnection, type AppendedChange } from '../src/mirror/index.ts';
import type { WebhookDispatcher, WebhookDispatcherOptions } from '../src/notify/webhooks/index.ts';
import { StreamConditions, SyncEngine } from '../src/sync/index.ts';
// Types only: the write queue (BullMQ) and the webhook dispatcher are loaded when first asked for.
import type { WriteKindName, WritePayload, WriteRecord } from '../src/writes/index.ts';
import type { EnqueueOptions, EnqueueResult, WriteIntake, WriteQueueLocation, WriteWorkerHandle, WriteWorkerOptions } from '../src/writes/queue/index.ts';
import { classifyMirrorError, MirrorDamagedError, openMirrorAt } from './open-mirror.ts';

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
   * `required`: like `shared`, but when Redis does not answer `openContext` throws
   * RedisUnavailableError naming REDIS_URL (`enqueue`, `worker`: jobs that need the write queue).
   */
  rateBudget?: 'shared' | 'local' | 'required';
  /** Retry timing of the API clients (tests shorten it). */
  clientRetry?: ApiClientOptions['retry'];
  /**
   * Layers added to the connection's own API client (`Context.client`: the sync's lists, after the
   * rate budget's layer): the daemon's console hears its list requests' retries through one.
   */
  clientHooks?: (config: Config) => ApiClientOptions['hooks'];
  /**
   * SQLite: run `PRAGMA quick_check` on the mirror file before anything else opens (the daemon
   * does): a damaged file refuses to start with MirrorDamagedError. Default false (it reads the
   * whole file). PostgreSQL keeps its own storage consistent: there the open itself (connected,
   * migrated, stream tables checked) is the start-up check.
   */
  checkMirror?: boolean;
  /**
   * The engine's first sync of each unsupported stream asks its list whatever its last probe (the
   * daemon: `SyncEngineOptions.probeUnsupportedAtStart`). Default false.
   */
  probeUnsupportedAtStart?: boolean;
  /**
   * Who holds the stream leases this context's runs take (`SyncEngineOptions.leaseHolder`); default
   * this process (`PROCESS_LEASE_HOLDER`). Tests give a second in-process "process" its own name.
   */
  leaseHolder?: string;
  /** SQLite: how long a statement waits for another connection's lock, ms (`OpenMirrorOptions.busyTimeoutMs`; tests shorten it). Default 5000. */
  sqliteBusyTimeoutMs?: number;
  /**
   * SQLite: once open, never wait on another process's write lock with the event loop blocked (the
   * daemon): a write that finds the file locked fails with MirrorFileLockedError after a few short
   * timers and is tried again at its part's next round (src/mirror/sql/sqlite.ts). Default false:
   * the one-off commands wait `sqliteBusyTimeoutMs`.
   */
  sqliteNonBlocking?: boolean;
  /** Redis key names: tests give each run its own. Defaults: budgets `bizops:rate`, queue `bizops` / `deploymentQueueName(config)`. */
  redisKeys?: { budgetPrefix?: string; queuePrefix?: string; queueName?: string };
  /**
   * Parts shared with the other connections of this process (`openDeployment`): their Redis
   * connection and budgets are used, and not closed by this context. `rateBudget` is then ignored.
   */
  shared?: SharedParts;
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
  /** The write with this id, or undefined. */
  getWrite(id: string): Promise<WriteRecord | undefined>;
  /** `POST /writes`, `GET /writes/{id}` for the daemon's route table (off there while `http.writeApiKey` is unset). */
  routes: Route[];
  /**
   * Starts a write worker in this process, on its own API client and mirror connection (SQLite: its
   * own handle on the file, closed with the worker; PostgreSQL: the context's pool); the context's
   * `close` stops it.
   */
  startWorker(
    options?: Partial<Pick<WriteWorkerOptions, 'concurrency' | 'lockDurationMs' | 'stalledIntervalMs' | 'ambiguousSettleMs' | 'writeThrough' | 'sweepIntervalMs' | 'sweepRounds' | 'claimSeconds' | 'ledgerSettleMs'>>,
  ): Promise<WriteWorkerHandle>;
}

/**
 * Everything a job works with, built from the configuration by `openContext` (see this module's
 * header for the graph). One Context per process and job; `close()` releases every part it built,
 * in reverse order.
 */
export interface Context {
  config: Config;
  logger: Logger;
  /**
   * This process's connection to the mirror (migrated, stream tables checked): a SQLite file, or a
   * pool on a PostgreSQL schema (docs/mirror.md "PostgreSQL").
   */
  connection: SqlConnection;
  store: MirrorStore;
  budgets: RateBudgets;
  /** The sync's API client (token `default`). */
  client: ApiClient;
  engine: SyncEngine;
  /** Each stream's operational condition (`stream.*` events): the engine notes every run; the daemon checks staleness. */
  conditions: StreamConditions;
  /** Adds a listener for change rows appended by this process's engine and write worker; returns its removal. */
  onChanges(listener: ChangeListener): () => void;
  /** Hands change rows another part of this process appended (the daemon's stale watch) to the listeners. */
  notifyChanges(changes: readonly AppendedChange[]): void;
  /**
   * The write queue, built (and its modules, BullMQ among them, loaded) on first use; later calls
   * resolve to the same one.
   * @throws Error naming REDIS_URL when the budgets are not shared (Redis did not answer, or `rateBudget: 'local'`)
   */
  writeQueue(): Promise<WriteQueue>;
  /**
   * The delivery dispatcher for `config.webhooks` and `config.sinks` (its modules, and each configured
   * sink kind's client, loaded on the first call), or null when
   * none is configured. Not started. SQLite: on its own connection to the file; PostgreSQL: on the
   * context's pool.
   */
  webhookDispatcher(options?: Pick<WebhookDispatcherOptions, 'pollMs' | 'timeoutMs' | 'scheduleMs' | 'jitterRatio' | 'stopGraceMs' | 'onAttempt' | 'fence' | 'mayDeliver'>): Promise<WebhookDispatcher | null>;
  /** Another API client on the same budgets (the readiness probe's, without retries). Closed with the context. */
  apiClient(options?: Pick<ApiClientOptions, 'timeoutMs' | 'retry' | 'hooks'> & { tokens?: Record<string, string>; budget?: ApiClientOptions['budget'] }): ApiClient;
  /** Releases everything built, last built first. Safe to call twice. */
  close(): Promise<void>;
}

/**
 * Redis at REDIS_URL does not answer, and this job cannot run without it (`enqueue`, `worker`). The
 * message names REDIS_URL (password masked) and the connection error.
 */
export class RedisUnavailableError extends Error {
  override name = 'RedisUnavailableError';
}

/** A logger that masks every secret of `config` (tokens, webhook secrets). */
export function processLogger(config: Config, options: { level?: string } = {}): Logger {
  return createLogger({ secrets: deploymentSecrets([config]), ...options });
}

/** A logger that masks every secret of every connection of `deployment`. */
export function deploymentLogger(deployment: DeploymentConfig, options: { level?: string } = {}): Logger {
  return createLogger({ secrets: deploymentSecrets(deployment.connections), ...options });
}

/**
 * The logger of one connection: `logger` with a `connection` field on every line when the
 * deployment names its connections; `logger` itself for the single `default` connection.
 */
export function connectionLogger(logger: Logger, config: Config, named: boolean): Logger {
  return named ? logger.child({ connection: config.connection }) : logger;
}

// Re-exported: opening a mirror for reading lives apart so that readers need not load the worker.
export { classifyMirrorError, damagedMirrorError, MirrorDamagedError, MirrorMissingError, mirrorLocation, openExistingMirror, openMirrorAt } from './open-mirror.ts';

/**
 * Connects to Redis at `redisUrl` for the rate budgets and the write queue's producer, or returns
 * null (one warning) when it does not answer. Connection problems later are logged once per outage.
 * @throws RedisUnavailableError naming REDIS_URL when it does not answer and `mode` is `required`
 */
async function connectRedis(redisUrl: string, logger: Logger, mode: 'shared' | 'required'): Promise<Redis | null> {
  let redis: Redis;
  try {
    // A producer connection (src/writes/queue/write-queue.ts): commands fail at once while Redis is down, never queue.
    redis = await connectProducer(redisUrl);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    if (mode === 'required') {
      throw new RedisUnavailableError(`REDIS_URL (${maskUrlPassword(redisUrl)}) does not answer (${maskUrlPassword(reason)}): the write queue needs Redis; start it or fix REDIS_URL`);
    }
    logger.warn(
      { redis: maskUrlPassword(redisUrl), error: maskUrlPassword(reason) },
      'Redis does not answer: pacing with an in-process rate budget, not shared with other processes of this deployment; the write queue is off',
    );
    return null;
  }
  let reported = false;
  redis.on('error', (error: Error) => {
    // Commands fail (and are reported) on their own; log the connection problem once, not per retry.
    if (!reported) logger.warn({ error: error.message }, 'Redis connection problem (write queue and rate budget)');
    reported = true;
  });
  redis.on('ready', () => {
    reported = false;
  });
  return redis;
}

/**
 * What the connections of one process share (`openDeployment`): one Redis connection and one rate
 * budget object per budget key, so that two connections on one company spend one budget (spec §8)
 * even when Redis does not answer. A Context given these closes neither.
 */
export interface SharedParts {
  /** The producer connection to Redis; null when the budgets are in-process. */
  redis: Redis | null;
  /** Budgets by key (`rateBudgetKey`: `company:<id>@<host>` or `token:<hash>@<host>`). */
  budgets: Map<string, RateBudget>;
  /** Key prefix of the budgets in Redis (tests). */
  budgetPrefix?: string;
}

/**
 * The rate budgets of one connection on `shared` (a Redis connection or none, and the budget map):
 * in Redis when there is a connection, else in-process.
 */
function rateBudgetsOn(config: Config, shared: SharedParts, owned: boolean): RateBudgets & { redis: Redis | null } {
  const redis = shared.redis;
  /** The budget keys this connection spent from: its `stats()` sums these only. */
  const mine = new Set<string>();
  return {
    shared: redis !== null,
    redis,
    budgetFor(tokenName) {
      const key = rateBudgetKey(config, config.rateLimit.scope === 'token' ? tokenName : 'default');
      let budget = shared.budgets.get(key);
      if (!budget) {
        const limits = { limit: config.rateLimit.perMinute, windowMs: config.rateLimit.windowMs };
        budget = redis
          ? new RedisRateBudget({ redis, key, prefix: shared.budgetPrefix, redisWaitMs: Math.round(config.rateLimit.redisWaitSeconds * 1000), ...limits })
          : new LocalRateBudget(limits);
        shared.budgets.set(key, budget);
      }
      mine.add(key);
      return budget;
    },
    stats() {
      const total: RateBudgetStats = { granted: { write: 0, incremental: 0, backfill: 0 }, waitedMs: 0, pauses: 0 };
      for (const key of mine) {
        const stats = shared.budgets.get(key)!.stats();
        for (const priority of PRIORITIES) total.granted[priority] += stats.granted[priority];
        total.waitedMs += stats.waitedMs;
        total.pauses += stats.pauses;
      }
      return total;
    },
    async close() {
      if (!owned) return;
      await closeSharedParts(shared);
    },
  };
}

/** Closes every budget of `shared`, then its Redis connection. */
async function closeSharedParts(shared: SharedParts): Promise<void> {
  for (const budget of shared.budgets.values()) await budget.close?.();
  shared.budgets.clear();
  const redis = shared.redis;
  if (redis) await redis.quit().catch(() => redis.disconnect());
}

/**
 * Opens the parts every connection of a process shares: Redis when it answers (mode `shared` or
 * `required`; see ContextOptions.rateBudget), and an empty budget map.
 * @throws RedisUnavailableError when Redis does not answer and `mode` is `required`
 */
export async function openSharedParts(redisUrl: string, logger: Logger, mode: 'shared' | 'local' | 'required', budgetPrefix?: string): Promise<SharedParts> {
  const redis = mode === 'local' ? null : await connectRedis(redisUrl, logger, mode);
  return { redis, budgets: new Map(), budgetPrefix };
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

  /** Adds the step undoing the part just built; returns its removal (the part was undone already). */
  add(step: () => Promise<void> | void): () => void {
    this.#steps.push(step);
    return () => {
      const index = this.#steps.indexOf(step);
      if (index >= 0) this.#steps.splice(index, 1);
    };
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
    // The mirror first: a path, file or server that cannot be used fails before any other connection is opened.
    // PostgreSQL: a process paused inside a transaction has its session ended after a third of a
    // lease, so the other replicas go on (src/mirror/sql/postgres.ts idleInTransactionTimeoutMs).
    const idleInTransactionTimeoutMs = Math.round((config.sync.leaseSeconds * 1000) / 3);
    const connection = await openMirrorAt(config.dbPath, { idleInTransactionTimeoutMs, busyTimeoutMs: options.sqliteBusyTimeoutMs, nonBlocking: options.sqliteNonBlocking ?? false });
    cleanups.add(() => connection.close());
    if (options.checkMirror && connection.dialect === 'sqlite') {
      let quickCheck: string;
      try {
        quickCheck = await mirrorHealthCheck(connection);
      } catch (error) {
        throw classifyMirrorError(config.dbPath, error);
      }
      if (quickCheck !== 'ok') {
        throw new MirrorDamagedError(`the mirror ${config.dbPath} is damaged (PRAGMA quick_check: ${quickCheck}); restore it from a backup, or move it away and run \`bizops-sync backfill\``);
      }
    }
    /**
     * A connection for a part that runs its own transactions beside the sync's (the write worker,
     * the webhook dispatcher). SQLite: a handle of its own on the file (a handle's transactions run
     * one at a time). PostgreSQL: the context's pool, whose transactions each take a pooled
     * connection of their own (docs/decisions.md); closed with the context.
     */
    // A part's connection to the mirror (SQLite: a handle of its own; PostgreSQL: the context's pool),
    // with its release: the part that opened it closes it when it stops or fails to start, so a start
    // tried again and again opens no handle it leaves open.
    const partConnection = async (): Promise<{ connection: SqlConnection; release: () => Promise<void> }> => {
      if (connection.dialect !== 'sqlite') return { connection, release: () => Promise.resolve() };
      const own = await openMirrorAt(config.dbPath, { idleInTransactionTimeoutMs, busyTimeoutMs: options.sqliteBusyTimeoutMs, nonBlocking: options.sqliteNonBlocking ?? false });
      const close = () => own.close();
      const forget = cleanups.add(close);
      return {
        connection: own,
        release: () => {
          forget();
          return close();
        },
      };
    };
    // A deployment's connections share Redis and the budget map (openDeployment); alone, the context owns them.
    const shared = options.shared ?? (await openSharedParts(config.redisUrl, logger, options.rateBudget ?? 'shared', options.redisKeys?.budgetPrefix));
    const budgets = rateBudgetsOn(config, shared, options.shared === undefined);
    cleanups.add(() => budgets.close());
    const store = new MirrorStore(connection);
    const listeners = new Set<ChangeListener>();
    const notify: ChangeListener = (changes) => {
      for (const listener of listeners) listener(changes);
    };
    const apiClient: Context['apiClient'] = (clientOptions = {}) => {
      const client = new ApiClient({
        baseUrl: config.baseUrl,
        tokens: clientOptions.tokens ?? config.tokens,
        budget: clientOptions.budget ?? ((tokenName) => budgets.budgetFor(tokenName)),
        logger,
        timeoutMs: clientOptions.timeoutMs,
        requestDeadlineMs: Math.round(config.api.requestDeadlineSeconds * 1000),
        retry: clientOptions.retry ?? options.clientRetry,
        ...(clientOptions.hooks ? { hooks: clientOptions.hooks } : {}),
        describeToken: (tokenName) => tokenSetting(config, tokenName),
      });
      cleanups.add(() => client.close());
      return client;
    };
    const client = apiClient({ hooks: options.clientHooks?.(config) });
    const conditions = new StreamConditions({ store, failingAfterRuns: config.sync.failingAfterRuns });
    const engine = new SyncEngine({
      conditions,
      client,
      company: config.companyId,
      store,
      logger,
      overlapSeconds: config.sync.overlapSeconds,
      unsupportedProbeSeconds: config.sync.unsupportedProbeSeconds,
      probeUnsupportedAtStart: options.probeUnsupportedAtStart ?? false,
      ...(options.leaseHolder !== undefined ? { leaseHolder: options.leaseHolder } : {}),
      leaseSeconds: config.sync.leaseSeconds,
      databaseWaitSeconds: config.sync.databaseWaitSeconds,
      massDeletionShare: config.sync.massDeletionShare,
      partitions: config.sync.partitions,
      onChanges: notify,
    });

    let writeQueue: Promise<WriteQueue> | undefined;
    const openWriteQueue = async (): Promise<WriteQueue> => {
      if (!budgets.redis) {
        throw new Error(`the write queue needs Redis, and REDIS_URL (${maskUrlPassword(config.redisUrl)}) did not answer when this process started`);
      }
      const { deploymentQueueName, startWriteWorker, WriteIntake, writeRoutes } = await import('../src/writes/queue/index.ts');
      const queue: WriteQueueLocation = {
        redis: budgets.redis,
        queueName: options.redisKeys?.queueName ?? deploymentQueueName(config),
        prefix: options.redisKeys?.queuePrefix,
      };
      const intake = new WriteIntake({ connection, queue, tokenNames: Object.keys(config.tokens), logger });
      cleanups.add(() => intake.close());
      return {
        intake,
        enqueueWrite: (kind, payload, enqueueOptions) => intake.enqueueWrite(kind, payload, enqueueOptions),
        enqueue: (kind, payload, enqueueOptions) => intake.enqueue(kind, payload, enqueueOptions),
        getWrite: (id) => intake.getWrite(id),
        routes: writeRoutes({ intake, logger }),
        async startWorker(workerOptions = {}) {
          // SQLite: its own connection, so the worker's transactions never wait behind the sync's.
          const workerConnection = await partConnection();
          let worker: WriteWorkerHandle;
          try {
            worker = await startWriteWorker({
              connection: workerConnection.connection,
              // The worker's own connection (maxRetriesPerRequest: null); the producer's fails fast.
              queue: { ...queue, workerRedis: config.redisUrl },
              api: {
                baseUrl: config.baseUrl,
                tokens: config.tokens,
                budget: (tokenName) => budgets.budgetFor(tokenName),
                retry: options.clientRetry,
                // The same request deadline as every other client of the process.
                requestDeadlineMs: Math.round(config.api.requestDeadlineSeconds * 1000),
                describeToken: (tokenName) => tokenSetting(config, tokenName),
              },
              sweepIntervalMs: Math.round(config.writes.sweepSeconds * 1000),
              claimSeconds: config.writes.claimSeconds,
              ledgerSettleMs: Math.round(config.writes.ledgerSettleSeconds * 1000),
              logger,
              onChanges: notify,
              ...workerOptions,
            });
          } catch (error) {
            await workerConnection.release();
            throw error;
          }
          const stop = worker.close.bind(worker);
          let closing: Promise<void> | undefined;
          // Closing the worker closes its connection too.
          const close = () =>
            (closing ??= (async () => {
              await stop();
              forget();
              await workerConnection.release();
            })());
          const forget = cleanups.add(close);
          return { ...worker, close };
        },
      };
    };

    return {
      config,
      logger,
      connection,
      store,
      budgets,
      client,
      engine,
      conditions,
      notifyChanges: notify,
      onChanges(listener) {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
      writeQueue() {
        writeQueue ??= openWriteQueue();
        return writeQueue;
      },
      async webhookDispatcher(dispatcherOptions = {}) {
        if (config.webhooks.length === 0 && config.sinks.length === 0) return null;
        const [{ WebhookDispatcher }, { sinkTargets }] = await Promise.all([import('../src/notify/webhooks/index.ts'), import('../src/notify/sinks/index.ts')]);
        // A delivery is bounded by the request deadline too (api.requestDeadlineSeconds), when it is the shorter.
        const timeoutMs = Math.min(15_000, Math.round(config.api.requestDeadlineSeconds * 1000));
        const targets = await sinkTargets(config.sinks);
        const own = await partConnection();
        let forget = () => {};
        let dispatcher: WebhookDispatcher;
        try {
          // Its stop closes its connection: a dispatcher that failed to start (and was stopped) holds none.
          const release = async () => {
            forget();
            await own.release();
          };
          dispatcher = new WebhookDispatcher({ connection: own.connection, endpoints: config.webhooks, targets, logger, timeoutMs, ...dispatcherOptions, release });
        } catch (error) {
          await own.release();
          await Promise.allSettled(targets.map((target) => target.sender.close()));
          throw error;
        }
        forget = cleanups.add(() => dispatcher.stop());
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

/**
 * The Contexts of every connection of a deployment, one per connection, in the order of the
 * configuration, on one set of SharedParts (`openDeployment`).
 */
export interface DeploymentContext {
  deployment: DeploymentConfig;
  /** The process logger (every connection's secrets masked); each Context's logger adds `connection`. */
  logger: Logger;
  /** True when the budgets live in Redis, shared with the other processes of the deployment. */
  shared: boolean;
  contexts: readonly Context[];
  /** The Context of connection `name`. @throws Error when no connection has that name */
  context(name: string): Context;
  /** Closes every Context (last opened first), then the shared Redis connection and budgets. Safe to call twice. */
  close(): Promise<void>;
}

/**
 * Opens a Context per connection of `deployment` (docs/architecture.md "The composition root"): one
 * Redis connection and one budget per company for all of them, each its own mirror, logger (with a
 * `connection` field when the connections are named), client, engine, write queue and dispatcher.
 * Options apply to every connection (`shared` is made here).
 * @throws what openContext throws, naming the connection's file; nothing stays open then
 */
export async function openDeployment(deployment: DeploymentConfig, options: Omit<ContextOptions, 'shared'> = {}): Promise<DeploymentContext> {
  const logger = options.logger ?? deploymentLogger(deployment);
  const first = deployment.connections[0]!;
  const shared = await openSharedParts(first.redisUrl, logger, options.rateBudget ?? 'shared', options.redisKeys?.budgetPrefix);
  const contexts: Context[] = [];
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      for (const context of contexts.splice(0).reverse()) await context.close();
      await closeSharedParts(shared);
    })();
    return closing;
  };
  try {
    for (const config of deployment.connections) {
      contexts.push(await openContext(config, { ...options, logger: connectionLogger(logger, config, deployment.named), shared }));
    }
  } catch (error) {
    await close();
    throw error;
  }
  const all = [...contexts];
  return {
    deployment,
    logger,
    shared: shared.redis !== null,
    contexts: all,
    context(name) {
      const found = all.find((context) => context.config.connection === name);
      if (!found) throw new Error(`no connection named "${name}"; configured: ${all.map((context) => context.config.connection).join(', ')}`);
      return found;
    },
    close,
  };
}
