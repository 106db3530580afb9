/**
 * Wiring shared by every job: configuration -> logger -> mirror -> rate budget -> API client -> sync
 * engine. Jobs and CLI commands build one context, use it, and close it.
 */
import type { Config } from '../src/config/schema.ts';
import { ApiClient, type ApiClientOptions } from '../src/client/client.ts';
import { LocalRateBudget } from '../src/client/local-rate-budget.ts';
import type { RateBudget } from '../src/client/rate-budget.ts';
import { createLogger, type Logger } from '../src/logging/logger.ts';
import { openMirror, type MirrorDatabase } from '../src/mirror/database.ts';
import { MirrorStore } from '../src/mirror/store.ts';
import { SyncEngine, type SyncEngineOptions } from '../src/sync/engine.ts';

export interface Context {
  config: Config;
  logger: Logger;
  db: MirrorDatabase;
  store: MirrorStore;
  budget: RateBudget;
  client: ApiClient;
  engine: SyncEngine;
  close(): Promise<void>;
}

export interface ContextOptions {
  logger?: Logger;
  /**
   * A budget to use instead of a new in-process one (the CLI and the daemon pass the Redis-backed
   * budget). A budget passed in is the caller's to close.
   */
  budget?: RateBudget;
  engine?: Pick<SyncEngineOptions, 'onChanges'>;
  /** Retry timing of the API client (tests shorten it). */
  clientRetry?: ApiClientOptions['retry'];
}

/** Builds the context for `config`. The caller must `close()` it. */
export function createContext(config: Config, options: ContextOptions = {}): Context {
  const logger = options.logger ?? createLogger({ secrets: Object.values(config.tokens) });
  const db = openMirror(config.dbPath);
  const store = new MirrorStore(db);
  const budget = options.budget ?? new LocalRateBudget({ limit: config.rateLimit.perMinute, windowMs: config.rateLimit.windowMs });
  const client = new ApiClient({ baseUrl: config.baseUrl, tokens: config.tokens, budget, logger, retry: options.clientRetry });
  const engine = new SyncEngine({ client, store, logger, overlapSeconds: config.sync.overlapSeconds, ...options.engine });
  return {
    config,
    logger,
    db,
    store,
    budget,
    client,
    engine,
    async close() {
      await client.close();
      if (!options.budget) await budget.close?.();
      db.close();
    },
  };
}
