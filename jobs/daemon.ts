/**
 * Job: the daemon (`bizops-sync daemon`). Wiring only, on the parts of jobs/context.ts:
 *
 *   context (logger, mirror, rate budgets, API client, sync engine)
 *     -> write queue (intake, worker, POST /writes) when Redis answers; off otherwise (one warning)
 *     -> webhook dispatcher (its own SQLite connection), woken by every change the process records
 *     -> readiness probe (an API client without retries, on the same budgets)
 *     -> metrics (src/daemon/metrics.ts)
 *     -> HTTP server (/healthz, /readyz, /metrics; the write API first)
 *     -> scheduler (node-cron: incremental syncs, reconciliation, a backfill at start where needed)
 *
 * `stop()` undoes it in order: abort runs (checkpoints stand) and stop cron, stop the dispatcher,
 * close the HTTP server, close the context's parts, flush the log.
 */
import type { Config } from '../src/config/schema.ts';
import type { ApiClientOptions } from '../src/client/client.ts';
import { startDaemonHttpServer, type FirstRoute, type RunningHttpServer } from '../src/daemon/http-server.ts';
import { DaemonMetrics, pageTrustSource } from '../src/daemon/metrics.ts';
import { apiReadinessCheck, probeBudget, ReadinessProbe } from '../src/daemon/readiness.ts';
import { StreamScheduler } from '../src/daemon/scheduler.ts';
import type { Logger } from '../src/logging/logger.ts';
import type { WebhookDispatcher, WebhookDispatcherOptions } from '../src/notify/index.ts';
import { STREAMS } from '../src/streams/definitions.ts';
import { openContext, processLogger, Teardown, type Context } from './context.ts';

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
  const logger = options.logger ?? processLogger(config);
  const context = await openContext(config, { logger, clientRetry: options.clientRetry, checkMirror: true });
  const cleanups = new Teardown(logger);
  cleanups.add(() => context.close());
  const cleanup = () => cleanups.run();

  try {
    // The write queue shares the rate budgets in Redis with every other process; without Redis the
    // daemon still syncs (the context warned once) and the write API stays off.
    const writes = context.budgets.shared ? context.writeQueue() : null;
    const worker = writes ? await writes.startWorker() : null;
    const dispatcher: WebhookDispatcher | null = context.webhookDispatcher(options.webhooks);

    const timeoutMs = options.readinessTimeoutMs ?? 5000;
    // The probe never waits for a budget slot: a paused budget is reported (ready, with the wait), not waited on.
    const budget = context.budgets.budgetFor('default');
    const probeClient = context.apiClient({ tokens: { default: config.tokens.default! }, timeoutMs, retry: { maxRetries: 0, maxRateLimitRetries: 0 }, budget: probeBudget(budget) });
    const probeStream = config.sync.streams.includes('onboardings') ? 'onboardings' : (config.sync.streams[0] ?? 'onboardings');
    const readiness = new ReadinessProbe({
      check: apiReadinessCheck(probeClient, STREAMS[probeStream].request.path, budget),
      cacheMs: config.http.readinessCacheSeconds * 1000,
      timeoutMs,
    });

    const metrics = new DaemonMetrics({
      streams: config.sync.streams,
      store: context.store,
      pageTrust: pageTrustSource(context.store),
      apiClients: worker ? [context.client, probeClient, worker.client] : [context.client, probeClient],
      budget: context.budgets,
      webhooks: dispatcher,
      processMetrics: options.processMetrics,
    });
    context.onChanges((changes) => {
      metrics.recordChanges(changes);
      dispatcher?.notify();
    });

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
    cleanups.add(() => http.close());

    dispatcher?.start();
    cleanups.add(() => dispatcher?.stop());
    scheduler.start();
    cleanups.add(() => scheduler.stop());
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
