/**
 * Job: the daemon (`bizops-sync daemon`, issue 3). Wiring only:
 *
 *   config -> context (logger, mirror, rate budget, API client, sync engine)
 *          -> webhook dispatcher (src/notify, its own SQLite connection), woken by the engine's onChanges
 *          -> readiness probe (its own API client without retries, sharing the rate budget)
 *          -> metrics (src/daemon/metrics.ts)
 *          -> write queue (src/writes: intake, worker, POST /writes) and the Redis rate budget it shares with the sync
 *          -> HTTP server (/healthz, /readyz, /metrics; the write API first)
 *          -> scheduler (node-cron: incremental syncs, reconciliation, a backfill at start where needed)
 *
 * `stop()` undoes it in order: abort runs (checkpoints stand) and stop cron, stop the dispatcher,
 * close the HTTP server, close connections, flush the log.
 */
import type { Config } from '../src/config/schema.ts';
import { maskUrlPassword } from '../src/config/load.ts';
import { ApiClient, type ApiClientOptions } from '../src/client/client.ts';
import { startDaemonHttpServer, type FirstRoute, type RunningHttpServer } from '../src/daemon/http-server.ts';
import { DaemonMetrics } from '../src/daemon/metrics.ts';
import { apiReadinessCheck, ReadinessProbe } from '../src/daemon/readiness.ts';
import { StreamScheduler } from '../src/daemon/scheduler.ts';
import { createLogger, type Logger } from '../src/logging/logger.ts';
import { openMirror, type MirrorDatabase } from '../src/mirror/database.ts';
import type { AppendedChange } from '../src/mirror/store.ts';
import { WebhookDispatcher, type WebhookDispatcherOptions } from '../src/notify/index.ts';
import { STREAMS } from '../src/streams/definitions.ts';
import { createWriteRuntime, type WriteRuntime } from '../src/writes/runtime.ts';
import { createContext, type Context } from './context.ts';
import { redisAnswers } from './rate-budget.ts';

export interface DaemonOptions {
  logger?: Logger;
  /** Retry timing of the sync's API client (tests shorten it). */
  clientRetry?: ApiClientOptions['retry'];
  /** Webhook delivery tuning (tests and benchmarks scale time down). */
  webhooks?: Pick<WebhookDispatcherOptions, 'pollMs' | 'timeoutMs' | 'scheduleMs' | 'jitterRatio' | 'stopGraceMs'>;
  /** How long one readiness probe may take, ms. Default 5000. */
  readinessTimeoutMs?: number;
  /** Export prom-client's default process metrics (default true). */
  processMetrics?: boolean;
}

export interface RunningDaemon {
  /** The HTTP server's base URL (`http://127.0.0.1:8080`). */
  url: string;
  context: Context;
  scheduler: StreamScheduler;
  metrics: DaemonMetrics;
  readiness: ReadinessProbe;
  /** Null when no webhook endpoint is configured. */
  dispatcher: WebhookDispatcher | null;
  /** Graceful stop (module comment). Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * Starts the daemon: everything runs until `stop()`.
 * @throws Error naming the key when a schedule or a webhook endpoint is invalid, or when the HTTP
 *   port cannot be bound (`http.port: cannot listen on ...`); nothing is left running then
 */
export async function startDaemon(config: Config, options: DaemonOptions = {}): Promise<RunningDaemon> {
  const logger = options.logger ?? createLogger({ secrets: [...Object.values(config.tokens), ...config.webhooks.map((endpoint) => endpoint.secret)] });
  const cleanups: (() => Promise<void> | void)[] = [];
  const cleanup = async () => {
    for (const step of cleanups.reverse()) {
      try {
        await step();
      } catch (error) {
        logger.error({ err: error }, 'daemon shutdown step failed');
      }
    }
  };

  try {
    // Late-bound: the engine is built before the dispatcher and the metrics that hear its changes.
    let onChanges: (changes: readonly AppendedChange[]) => void = () => undefined;

    // The write queue and the one rate budget shared with every other process, both in Redis. When
    // Redis does not answer, the daemon still syncs (pacing alone) and the write API stays off.
    let writes: WriteRuntime | null = null;
    if (await redisAnswers(config.redisUrl)) {
      const writesDb = openMirror(config.dbPath);
      cleanups.push(() => {
        writesDb.close();
      });
      writes = createWriteRuntime(config, { db: writesDb, logger, onChanges: (changes) => onChanges(changes) });
      const runtime = writes;
      cleanups.push(() => runtime.close());
    } else {
      logger.warn(
        { redis: maskUrlPassword(config.redisUrl) },
        'Redis does not answer: the write queue is off and the sync paces with an in-process rate budget',
      );
    }
    const context = createContext(config, {
      logger,
      budget: writes?.budget,
      clientRetry: options.clientRetry,
      engine: { onChanges: (changes) => onChanges(changes) },
    });
    cleanups.push(() => context.close());
    const worker = writes ? await writes.startWorker() : null;
    if (worker) cleanups.push(() => worker.close());

    let dispatcher: WebhookDispatcher | null = null;
    if (config.webhooks.length > 0) {
      const dispatcherDb: MirrorDatabase = openMirror(config.dbPath);
      cleanups.push(() => {
        dispatcherDb.close();
      });
      dispatcher = new WebhookDispatcher({ db: dispatcherDb, endpoints: config.webhooks, logger, ...options.webhooks });
    }

    const probeClient = new ApiClient({
      baseUrl: config.baseUrl,
      tokens: { default: config.tokens.default! },
      budget: context.budget,
      logger,
      timeoutMs: options.readinessTimeoutMs ?? 5000,
      retry: { maxRetries: 0, maxRateLimitRetries: 0 },
    });
    cleanups.push(() => probeClient.close());
    const probePath = config.sync.streams.includes('onboardings') ? STREAMS.onboardings.path : STREAMS[config.sync.streams[0] ?? 'onboardings'].path;
    const readiness = new ReadinessProbe({
      check: apiReadinessCheck(probeClient, probePath),
      cacheMs: config.http.readinessCacheSeconds * 1000,
      timeoutMs: options.readinessTimeoutMs ?? 5000,
    });

    const metrics = new DaemonMetrics({
      streams: config.sync.streams,
      store: context.store,
      apiClients: worker ? [context.client, probeClient, worker.client] : [context.client, probeClient],
      budget: context.budget,
      webhooks: dispatcher,
      processMetrics: options.processMetrics,
    });
    onChanges = (changes) => {
      metrics.recordChanges(changes);
      dispatcher?.notify();
    };

    const scheduler = new StreamScheduler({
      engine: context.engine,
      streams: config.sync.streams,
      schedule: config.sync.schedule,
      streamSchedules: config.sync.streamSchedules,
      reconcileSchedule: config.sync.reconcileSchedule,
      hasCursor: (stream) => context.store.readSyncState(stream).cursor !== null,
      logger,
      onRunFinished: (result, durationMs) => metrics.recordRun(result, durationMs),
      onTickSkipped: (stream, reason) => metrics.recordSkippedTick(stream, reason),
    });

    const routeFirst: FirstRoute | undefined = writes ? (request, response) => writes.handleHttp(request, response) : undefined;
    const http: RunningHttpServer = await startDaemonHttpServer({
      host: config.http.host,
      port: config.http.port,
      readiness: () => readiness.current(),
      metrics: () => metrics.render(),
      routeFirst,
      logger,
    });
    cleanups.push(() => http.close());

    dispatcher?.start();
    cleanups.push(() => dispatcher?.stop());
    scheduler.start();
    cleanups.push(() => scheduler.stop());
    logger.info(
      { url: http.url, streams: config.sync.streams, webhooks: config.webhooks.map((endpoint) => endpoint.name), database: config.dbPath },
      'daemon started',
    );

    let stopping: Promise<void> | undefined;
    return {
      url: http.url,
      context,
      scheduler,
      metrics,
      readiness,
      dispatcher,
      stop() {
        stopping ??= (async () => {
          logger.info({ running: scheduler.activeRuns() }, 'daemon stopping: aborting runs (their checkpoints stand), stopping the schedule and webhook delivery');
          await cleanup();
          logger.info('daemon stopped');
          logger.flush();
        })();
        return stopping;
      },
    };
  } catch (error) {
    await cleanup();
    throw error;
  }
}
