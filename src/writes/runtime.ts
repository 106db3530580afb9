/**
 * Wiring of the write queue from the configuration, for the CLI (`enqueue`, `worker`) and the daemon:
 * the shared Redis rate budget(s), the intake, the worker and the HTTP routes, built the same way in
 * every process so that they all share one budget and one queue.
 *
 *   const writes = createWriteRuntime(config, { db, logger, onChanges });
 *   const worker = await writes.startWorker({ concurrency: 4 });
 *   httpServer routeFirst: (req, res) => writes.handleHttp(req, res)
 *   await writes.enqueue('deal.close', { dealId: 'deal_1', status: 'WON' });
 *   await worker.close(); await writes.close();
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Redis } from 'ioredis';
import type { Config } from '../config/schema.ts';
import { rateBudgetKey, RedisRateBudget } from '../client/redis-rate-budget.ts';
import { silentLogger, type Logger } from '../logging/logger.ts';
import type { MirrorDatabase } from '../mirror/database.ts';
import type { AppendedChange } from '../mirror/store.ts';
import { handleWritesRequest } from './http.ts';
import { WriteIntake, type EnqueueOptions, type EnqueueResult } from './intake.ts';
import type { WriteKindName, WritePayload } from './kinds/index.ts';
import type { WriteQueueLocation } from './queue.ts';
import type { BudgetSource } from './slot-listener.ts';
import type { WriteRecord } from './store.ts';
import { startWriteWorker, type WriteWorkerHandle, type WriteWorkerOptions } from './worker.ts';

/** Per-process options of `createWriteRuntime`; everything else comes from the configuration. */
export interface WriteRuntimeOptions {
  db: MirrorDatabase;
  logger?: Logger;
  /** Queue name / prefix overrides (tests); the Redis URL comes from `config.redisUrl`. */
  queue?: Omit<WriteQueueLocation, 'redis'>;
  /** Rate-budget key prefix override (tests). */
  budgetPrefix?: string;
  onChanges?: (changes: AppendedChange[]) => void;
}

/**
 * The write queue's parts for one process, built by `createWriteRuntime`: the intake, the shared rate
 * budget(s), and shortcuts to enqueue, read writes, serve the HTTP routes and start a worker.
 */
export interface WriteRuntime {
  intake: WriteIntake;
  /**
   * The shared rate budget (company scope) for every client of this process, or the budget of the
   * `default` token when the scope is `token`. Give it to the sync engine's ApiClient too.
   */
  budget: RedisRateBudget;
  /** The budget for a token name: the same object for every name under company scope. */
  budgetFor(tokenName: string): RedisRateBudget;
  enqueueWrite<K extends WriteKindName>(kind: K, payload: WritePayload<K>, options?: EnqueueOptions): Promise<EnqueueResult>;
  enqueue(kind: string, payload: unknown, options?: EnqueueOptions): Promise<EnqueueResult>;
  getWrite(id: string): WriteRecord | undefined;
  /** `POST /writes`, `GET /writes/{id}` (http.ts); false when not one of them or `http.writeApiKey` is unset. */
  handleHttp(request: IncomingMessage, response: ServerResponse): Promise<boolean>;
  /** Starts a write worker in this process. */
  startWorker(options?: Partial<Pick<WriteWorkerOptions, 'concurrency' | 'lockDurationMs' | 'stalledIntervalMs' | 'ambiguousSettleMs' | 'writeThrough'>>): Promise<WriteWorkerHandle>;
  /** Closes the intake, the budgets and the Redis connection (not the database, not workers). */
  close(): Promise<void>;
}

/**
 * The queue of one deployment: `bizops-writes.<companyId>.<api host>`, so that workers of another
 * company or another API (staging next to production) on the same Redis never take its jobs.
 */
export function deploymentQueueName(config: Pick<Config, 'companyId' | 'baseUrl'>): string {
  const host = new URL(config.baseUrl).host.replace(/[^A-Za-z0-9.-]/g, '_');
  return `bizops-writes.${config.companyId.replace(/[^A-Za-z0-9.-]/g, '_')}.${host}`;
}

/** Builds the write queue's parts from `config` (rate budget per `config.rateLimit`, Redis at `config.redisUrl`). */
export function createWriteRuntime(config: Config, options: WriteRuntimeOptions): WriteRuntime {
  const logger = options.logger ?? silentLogger;
  const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: null });
  let reported = false;
  redis.on('error', (error: Error) => {
    // Commands fail (and are reported) on their own; log the connection problem once, not per retry.
    if (!reported) logger.warn({ error: error.message }, 'Redis connection problem (write queue and rate budget)');
    reported = true;
  });
  redis.on('ready', () => {
    reported = false;
  });
  const queue: WriteQueueLocation = { redis, queueName: deploymentQueueName(config), ...options.queue };
  const budgets = new Map<string, RedisRateBudget>();
  const budgetFor = (tokenName: string): RedisRateBudget => {
    const key = rateBudgetKey(config, config.rateLimit.scope === 'token' ? tokenName : 'default');
    let budget = budgets.get(key);
    if (!budget) {
      budget = new RedisRateBudget({ redis, key, limit: config.rateLimit.perMinute, windowMs: config.rateLimit.windowMs, prefix: options.budgetPrefix });
      budgets.set(key, budget);
    }
    return budget;
  };
  const budgetSource: BudgetSource = config.rateLimit.scope === 'token' ? budgetFor : budgetFor('default');
  const intake = new WriteIntake({ db: options.db, queue, tokenNames: Object.keys(config.tokens), logger });
  return {
    intake,
    budget: budgetFor('default'),
    budgetFor,
    enqueueWrite: (kind, payload, enqueueOptions) => intake.enqueueWrite(kind, payload, enqueueOptions),
    enqueue: (kind, payload, enqueueOptions) => intake.enqueue(kind, payload, enqueueOptions),
    getWrite: (id) => intake.getWrite(id),
    handleHttp: (request, response) => handleWritesRequest(request, response, { intake, writeApiKey: config.http.writeApiKey, logger }),
    startWorker: (workerOptions = {}) =>
      startWriteWorker({
        db: options.db,
        queue,
        api: { baseUrl: config.baseUrl, tokens: config.tokens, budget: budgetSource },
        logger,
        onChanges: options.onChanges,
        ...workerOptions,
      }),
    async close() {
      await intake.close();
      for (const budget of budgets.values()) await budget.close();
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
