/**
 * Job: the daemon (`bizops-sync daemon`). Wiring only, on the parts of jobs/context.ts. For each
 * connection of the deployment (openDeployment: one Redis connection, one budget per company):
 *
 *   context (logger, mirror, rate budgets, API client, sync engine)
 *     -> write queue (intake, worker, POST /writes) when Redis answers; off otherwise (one warning)
 *     -> lease keeper (src/daemon/lease-keeper.ts): the mirror's `stream:<stream>` and `webhooks`
 *        leases, so that a replica on the same mirror runs what this daemon does not hold
 *     -> webhook delivery while holding `webhooks` (a dispatcher on its own connection, fenced),
 *        woken by every change the process records
 *     -> readiness: the answers the sync client got (ApiAnswers); a probe (an API client without
 *        retries, on the same budgets) only when they are older than 15 min
 *     -> scheduler (node-cron: incremental syncs, reconciliation, a backfill at start where needed;
 *        only the streams whose lease this daemon holds; a stream taken over runs at once)
 * and once for the process:
 *     -> metrics (src/daemon/metrics.ts), a `connection` label on every per-connection series
 *     -> HTTP server (/healthz, /readyz of every connection, /metrics, /openapi.json; the write API,
 *        the changelog and named consumers, the event schemas and the operator console, each behind
 *        its key: one route table, jobs/daemon-routes.ts)
 *     -> per connection, the changelog's retention (changes.retainDays), hourly
 *
 * The parts that run on their own (lease keeper, webhook delivery, write worker, retention, stale
 * watch, console samples, scheduler) start through each connection's part supervisor
 * (src/daemon/part-supervisor.ts): a start that fails is tried again until it runs, and `/readyz`
 * and `bizops_daemon_part_running` show each part's state.
 *
 * `stop()` undoes it in order: each connection's parts stop once (abort runs, checkpoints stand, and
 * stop cron first; the dispatcher; the leases last, released: a replica takes them at its next
 * round), then close the HTTP server, close the context's parts, flush the log.
 */
import { deploymentSecrets, type Config, type DeploymentConfig } from '../src/config/index.ts';
import { ConsoleHistory, HISTORY_SAMPLE_MS, HistorySampler, RecentRuns, RunRetries, type ConsoleConnection } from '../src/console/index.ts';
import { assertApiReachable, type ApiClientOptions, type ApiClientStats } from '../src/client/index.ts';
import {
  ChangelogRetention,
  startDaemonHttpServer,
  DaemonMetrics,
  pageTrustSource,
  LeaseKeeper,
  LeasedWebhookDelivery,
  PartSupervisor,
  partsReadiness,
  type PartSupervisorOptions,
  ApiAnswers,
  apiReadinessCheck,
  combineReadiness,
  probeBudget,
  ReadinessProbe,
  StaleStreamWatch,
  StreamScheduler,
  unsupportedStreams,
  failingPartitions,
  type RunningHttpServer,
  type ConnectionMetricsSources,
  DaemonRecord,
  type DaemonIdentity,
} from '../src/daemon/index.ts';
import { mirrorKey, reachableUrl } from '../src/status/index.ts';
import { changelogActivity, confirmLease, Leases, mirrorFileLockedCount, PROCESS_LEASE_HOLDER, streamLeaseName, WEBHOOKS_LEASE } from '../src/mirror/index.ts';
import type { Logger } from '../src/logging/index.ts';
import { ChangeSignal, listConsumers, listenForChanges } from '../src/notify/index.ts';
import type { WebhookDispatcherOptions } from '../src/notify/webhooks/index.ts';
import { STREAM_LIST, STREAMS, type StreamName } from '../src/streams/index.ts';
import { assertBaseUrlServes, WrongBaseUrlError } from '../src/sync/index.ts';
import type { MountedRoute } from '../src/http/index.ts';
import { daemonNotFound, daemonRouteTable } from './daemon-routes.ts';
import { deploymentLogger, mirrorLocation, openDeployment, Teardown, type Context, type ContextOptions, type WriteQueue } from './context.ts';

/** How the daemon is started; everything else comes from the configuration. */
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
  /** Redis key names (tests and benchmarks give each run its own). */
  redisKeys?: ContextOptions['redisKeys'];
  /** How often the changelog's retention runs, ms (tests shorten it). Default hourly. */
  retentionIntervalMs?: number;
  /** How often the console's plots take a sample, ms (tests shorten it). Default a minute (src/console `HISTORY_SAMPLE_MS`). */
  consoleSampleMs?: number;
  /** The backoff of a part's start tried again (src/daemon/part-supervisor.ts; tests shorten it). Default 1 s doubling up to 30 s. */
  partRetry?: Pick<PartSupervisorOptions, 'minDelayMs' | 'maxDelayMs'>;
  /**
   * SQLite: how long opening the mirror waits for another process's lock, ms. Default 5000. Once
   * open, the daemon's statements never wait on it synchronously (`ContextOptions.sqliteNonBlocking`).
   */
  sqliteBusyTimeoutMs?: number;
}

/** What the daemon runs for one connection. */
export interface RunningConnection {
  /** The connection's name (`default` without `connections`). */
  name: string;
  context: Context;
  scheduler: StreamScheduler;
  readiness: ReadinessProbe;
  /** Null when the connection has no webhook endpoint. Delivers only while `leases` holds `webhooks`. */
  dispatcher: LeasedWebhookDelivery | null;
  /** Null when Redis did not answer (the write API and worker are off). */
  writes: WriteQueue | null;
  /** The connection's leases: which streams (and whether the webhooks) this daemon runs. */
  leases: LeaseKeeper;
  /** Wakes the read routes' long-polls when changes are appended. */
  changeSignal: ChangeSignal;
  /** Prunes the changelog older than `changes.retainDays`. */
  retention: ChangelogRetention;
  /** The runs the scheduler finished lately (the console's "Recent runs"). */
  runs: RecentRuns;
  /** Checks the connection's streams for staleness (`stream.stale` events). */
  staleWatch: StaleStreamWatch;
  /** The console's plots' samples (taken while the console is on: `http.readApiKey`). */
  history: ConsoleHistory;
  /** The retry streaks of the sync's list requests (the console's state cells). */
  retries: RunRetries;
  /** Starts every part above until it runs, and says each one's state (`/readyz` `parts`, `bizops_daemon_part_running`). */
  parts: PartSupervisor;
}

/**
 * A started daemon (`startDaemon`): its HTTP address, every connection's parts, and the first
 * connection's parts at the top level (what callers of a single connection used before connections).
 */
export interface RunningDaemon {
  /** The HTTP server's base URL (`http://127.0.0.1:8080`). */
  url: string;
  /** Every connection's parts, in the order of the configuration. */
  connections: readonly RunningConnection[];
  /** The first connection's (the only one without `connections`). */
  context: Context;
  scheduler: StreamScheduler;
  readiness: ReadinessProbe;
  dispatcher: LeasedWebhookDelivery | null;
  metrics: DaemonMetrics;
  /** Every route the HTTP server mounted (method, documented path, operationId): what `/openapi.json` lists. */
  routes(): MountedRoute[];
  /** Graceful stop (module comment). Safe to call twice. */
  stop(): Promise<void>;
}

/** The part delivering webhooks and sinks (src/daemon/part-supervisor.ts), while this daemon holds the `webhooks` lease. */
const WEBHOOKS_PART = 'webhooks';
/** Why the webhooks part stands by. */
const REPLICA_HOLDS_WEBHOOKS = 'a replica holds the webhooks lease';

/** A deployment of one connection, for callers holding a single connection's Config. */
function asDeployment(input: Config | DeploymentConfig): DeploymentConfig {
  return 'connections' in input && Array.isArray(input.connections) ? input : { connections: [input as Config], named: false };
}

/**
 * Starts the daemon for every connection of `input` (one Config: that connection alone): each
 * connection's schedules, write worker and webhook delivery run at once, on one HTTP port.
 * @throws Error naming the key when a schedule or a webhook endpoint is invalid, or when the HTTP
 *   port cannot be bound (`http.port: cannot listen on ...`); nothing is left running then
 */
export async function startDaemon(input: Config | DeploymentConfig, options: DaemonOptions = {}): Promise<RunningDaemon> {
  const deployment = asDeployment(input);
  const startedAt = new Date().toISOString();
  // `http` is process-wide (the same in every connection): the first connection's is the process's.
  const processWide = deployment.connections[0]!;
  const logger = options.logger ?? deploymentLogger(deployment);
  // An unsupported stream is asked again at every start (its first sync, whatever its last probe).
  // Each connection's sync client tells its console which streams' list requests are being retried.
  const retriesOf = new Map<string, RunRetries>();
  // Each connection's readiness reads the answers its sync client got (src/daemon/readiness.ts): no request of its own while runs talk to the API.
  const answersOf = new Map<string, ApiAnswers>();
  const clientHooks = (config: Config) => {
    const retries = new RunRetries();
    retriesOf.set(config.connection, retries);
    const answers = new ApiAnswers();
    answersOf.set(config.connection, answers);
    return [retries.hooks(), answers.hooks()];
  };
  const opened = await openDeployment(deployment, {
    logger,
    clientRetry: options.clientRetry,
    clientHooks,
    checkMirror: true,
    redisKeys: options.redisKeys,
    probeUnsupportedAtStart: true,
    sqliteBusyTimeoutMs: options.sqliteBusyTimeoutMs,
    // Health, metrics and readiness keep answering while another process holds the SQLite file's
    // write lock (a replica beside a paused holder): no statement waits on it synchronously.
    sqliteNonBlocking: true,
  });
  const cleanups = new Teardown(logger);
  cleanups.add(() => opened.close());
  const cleanup = () => cleanups.run();

  try {
    const timeoutMs = options.readinessTimeoutMs ?? 5000;
    const connections: RunningConnection[] = [];
    const metricSources: ConnectionMetricsSources[] = [];
    for (const context of opened.contexts) {
      const config = context.config;
      // The write queue shares the rate budgets in Redis with every other process; without Redis the
      // daemon still syncs (the context warned once) and the write API stays off.
      const writes = context.budgets.shared ? await context.writeQueue() : null;
      // Every part below is started through the supervisor: a start that fails (the SQLite file busy,
      // the database or Redis away) is tried again until it runs (src/daemon/part-supervisor.ts).
      const parts = new PartSupervisor({ logger: context.logger, secrets: deploymentSecrets(deployment.connections), ...options.partRetry });
      const leases = new Leases(context.store.executor, config.sync.leaseSeconds);
      const dispatcher =
        config.webhooks.length === 0 && config.sinks.length === 0
          ? null
          : new LeasedWebhookDelivery({
              create: async (lease) => (await context.webhookDispatcher({ ...options.webhooks, ...lease }))!,
              confirm: (tx, lease) => confirmLease(tx, lease, leases.seconds),
              logger: context.logger,
            });

      // A closed port or a host name that does not resolve refuses to start, one line naming the address
      // (src/client/reachability.ts); a host that answers anything at all starts, ready or not.
      await assertApiReachable(config.baseUrl, deployment.named ? { key: `connections.${config.connection}.baseUrl` } : {});
      // The probe never waits for a budget slot: a paused budget is reported (ready, with the wait), not waited on.
      const budget = context.budgets.budgetFor('default');
      const answers = answersOf.get(config.connection) ?? new ApiAnswers();
      const probeClient = context.apiClient({ tokens: { default: config.tokens.default! }, timeoutMs, retry: { maxRetries: 0, maxRateLimitRetries: 0 }, budget: probeBudget(budget), hooks: [answers.hooks()] });
      const probeStream = config.sync.streams.includes('onboardings') ? 'onboardings' : (config.sync.streams[0] ?? 'onboardings');
      const readiness = new ReadinessProbe({
        check: apiReadinessCheck(probeClient, STREAMS[probeStream].request.path, budget),
        cacheMs: config.http.readinessCacheSeconds * 1000,
        timeoutMs,
        answers,
        budget,
      });
      // A wrong base URL refuses to start (src/sync/base-url-check.ts): the first probe's list
      // answered 404, and so does every other stream's. Unreachable or refused: the daemon starts, not ready.
      if ((await readiness.current()).status === 404) {
        try {
          await assertBaseUrlServes(probeClient, undefined, { streams: STREAM_LIST, priority: 'incremental' });
        } catch (error) {
          throw deployment.named && error instanceof WrongBaseUrlError ? error.naming(`connections.${config.connection}.baseUrl`) : error;
        }
      }
      // The same holder as the engine's runs (PROCESS_LEASE_HOLDER): a run renews the lease the keeper holds.
      // Its rounds are its retries (every third of a lease): each round's failures show on its part.
      const leaseRounds = parts.rounds('leases');
      const keeper: LeaseKeeper = new LeaseKeeper({
        leases,
        holder: PROCESS_LEASE_HOLDER,
        names: [...config.sync.streams.map(streamLeaseName), ...(dispatcher ? [WEBHOOKS_LEASE] : [])],
        logger: context.logger,
        // A stream a one-off run waits for (--wait) is released once its run in progress (if any) ended.
        mayYield: (name) => !(name.startsWith('stream:') && context.engine.isRunning(name.slice('stream:'.length) as StreamName)),
        onAcquired: (lease) => {
          if (lease.name === WEBHOOKS_LEASE) void parts.start(WEBHOOKS_PART);
          // A stream taken over (from a replica that died) runs at once, resuming its checkpoint.
          else if (lease.name.startsWith('stream:')) scheduler.trigger(lease.name.slice('stream:'.length) as StreamName, 'sync');
        },
        onLost: (name) => {
          if (name === WEBHOOKS_LEASE) void parts.standBy(WEBHOOKS_PART, REPLICA_HOLDS_WEBHOOKS);
        },
        onRoundEnded: (failures) => {
          const first = [...failures][0];
          if (first) leaseRounds.failing(new Error(`${first[0]}: ${first[1].message}`));
          else leaseRounds.working();
          // Found held by a replica (no failure asking for it): delivery stands by until the lease comes here.
          if (dispatcher && !failures.has(WEBHOOKS_LEASE) && !keeper.holds(WEBHOOKS_LEASE) && parts.status(WEBHOOKS_PART)?.state === 'starting') {
            void parts.standBy(WEBHOOKS_PART, REPLICA_HOLDS_WEBHOOKS);
          }
        },
      });
      const changeSignal = new ChangeSignal();
      // Staleness no run reveals: checked on a timer for the streams this daemon holds (src/daemon/stale-streams.ts).
      const staleWatch = new StaleStreamWatch({
        conditions: context.conditions,
        streams: config.sync.streams.map((stream) => ({ stream, schedule: config.sync.streamSchedules[stream] ?? config.sync.schedule })),
        staleAfterSchedules: config.sync.staleAfterSchedules,
        staleMinimumSeconds: config.sync.staleMinimumSeconds,
        mayCheck: (stream) => keeper.holds(streamLeaseName(stream)),
        // A quiet stream rested by adaptive polling is allowed its rest (its last success is that old by plan).
        pollFactor: (stream) => scheduler.pollFactor(stream),
        onChanges: (changes) => context.notifyChanges(changes),
        logger: context.logger,
        rounds: parts.rounds('stale-watch'),
      });
      // The write worker's client joins when the worker starts.
      const apiClients: { readonly stats: ApiClientStats }[] = [context.client, probeClient];
      metricSources.push({
        conditions: context.conditions,
        staleAfterSeconds: (stream) => staleWatch.thresholdSeconds(stream),
        name: config.connection,
        consumers: () => listConsumers(context.connection),
        streams: config.sync.streams,
        store: context.store,
        pageTrust: pageTrustSource(context.store),
        apiClients,
        budget: context.budgets,
        webhooks: dispatcher,
        leases: keeper,
        parts,
        ...(context.connection.dialect === 'sqlite' ? { mirrorFileLocked: () => mirrorFileLockedCount(config.dbPath) } : {}),
      });
      // Read now: the scheduler asks at start() which streams have a cursor (their first run is a sync).
      const runs = new RecentRuns();
      const retries = retriesOf.get(config.connection) ?? new RunRetries();
      const sampleMs = options.consoleSampleMs ?? HISTORY_SAMPLE_MS;
      const history = new ConsoleHistory({ sampleMs, requestLimit: (config.rateLimit.perMinute * sampleMs) / config.rateLimit.windowMs });
      const withCursor = new Set<StreamName>();
      for (const stream of config.sync.streams) if ((await context.store.readSyncState(stream)).cursor !== null) withCursor.add(stream);
      const scheduler = new StreamScheduler({
        engine: context.engine,
        mayRun: (stream) => keeper.holds(streamLeaseName(stream)),
        streams: config.sync.streams,
        schedule: config.sync.schedule,
        streamSchedules: config.sync.streamSchedules,
        reconcileSchedule: config.sync.reconcileSchedule,
        hasCursor: (stream) => withCursor.has(stream),
        maxPollFactor: config.sync.maxPollFactor,
        maxScanFactor: config.sync.maxScanFactor,
        activity: changelogActivity(context.connection),
        logger: context.logger,
        onRunFinished: (result, durationMs) => {
          metrics.recordRun(result, durationMs, config.connection);
          metrics.recordPollInterval(result.stream, scheduler.pollFactor(result.stream), config.connection);
          runs.record(result, durationMs);
          retries.runEnded(result.stream);
        },
        onTickSkipped: (stream, reason) => metrics.recordSkippedTick(stream, reason, config.connection),
        onTickRested: (stream, factor) => metrics.recordRestedTick(stream, factor, config.connection),
      });
      const retention = new ChangelogRetention({
        executor: context.connection,
        retainDays: config.changes.retainDays,
        endpoints: [...config.webhooks.map((endpoint) => endpoint.name), ...config.sinks.map((sink) => sink.name)],
        ...(options.retentionIntervalMs === undefined ? {} : { intervalMs: options.retentionIntervalMs }),
        logger: context.logger,
        rounds: parts.rounds('retention'),
      });
      // Stopped in the reverse order: the scheduler first (runs aborted, their checkpoints stand), then
      // the rest, the write worker and webhook delivery, and the leases last (released: a replica takes them).
      parts.add({
        name: 'leases',
        start: () => keeper.start(),
        stop: () => keeper.stop(),
      });
      if (dispatcher) {
        parts.add(
          {
            name: WEBHOOKS_PART,
            start: async () => {
              const lease = keeper.lease(WEBHOOKS_LEASE);
              if (!lease) throw new Error('the webhooks lease is not held');
              await dispatcher.begin(lease);
            },
            stop: () => dispatcher.end(),
          },
          'waiting for the webhooks lease',
        );
      }
      if (writes) {
        parts.add({
          name: 'writes',
          start: async (run) => {
            // Its sweeps recur: each one's outcome shows on the part.
            const worker = await writes.startWorker({ sweepRounds: run });
            if (!apiClients.includes(worker.client)) apiClients.push(worker.client);
            stopWorker = () => worker.close();
          },
          stop: () => stopWorker(),
        });
      }
      let stopWorker = (): Promise<void> => Promise.resolve();
      parts.add({
        name: 'retention',
        required: false,
        start: async (run) => {
          await retention.runOnce(run.signal);
          retention.start(retention.intervalMs);
        },
        stop: () => retention.stop(),
      });
      parts.add({ name: 'stale-watch', required: false, start: () => Promise.resolve(staleWatch.start()), stop: () => staleWatch.stop() });
      if (processWide.http.readApiKey) {
        // The console's plots: the mirror's lags and this daemon's requests, sampled into a small ring.
        const budget = context.budgets.budgetFor('default');
        const sampler = new HistorySampler(
          history,
          {
            executor: context.store.executor,
            streams: config.sync.streams,
            webhooks: config.webhooks,
            grantedRequests: () => Object.values(budget.stats().granted).reduce((sum, granted) => sum + granted, 0),
          },
          context.logger,
          parts.rounds('console-history'),
        );
        parts.add({ name: 'console-history', required: false, start: () => Promise.resolve(sampler.start()), stop: () => Promise.resolve(sampler.stop()) });
      }
      parts.add({ name: 'scheduler', start: () => Promise.resolve(scheduler.start()), stop: () => scheduler.stop() });
      connections.push({ name: config.connection, context, scheduler, readiness, dispatcher, writes, leases: keeper, changeSignal, retention, runs, staleWatch, history, retries, parts });
    }
    const metrics = new DaemonMetrics({ connections: metricSources, processMetrics: options.processMetrics });
    for (const { name, context, dispatcher } of connections) {
      context.onChanges((changes) => {
        metrics.recordChanges(changes, name);
        dispatcher?.notify();
        connections.find((connection) => connection.name === name)?.changeSignal.notify();
      });
    }
    // The read routes' long-polls wake on every commit of another process too (PostgreSQL; SQLite polls).
    if (processWide.http.readApiKey) {
      for (const connection of connections) {
        const listening = await listenForChanges(connection.context.connection, () => connection.changeSignal.notify());
        if (listening) cleanups.add(() => listening.close());
      }
    }

    // The port's routes (jobs/daemon-routes.ts): each connection's changelog and write API.
    const routedConnections = connections.map((connection) => ({
      name: connection.name,
      changes: { executor: connection.context.connection, signal: connection.changeSignal },
      writes: connection.writes?.routes ?? null,
    }));
    const routes = daemonRouteTable(routedConnections, {
      readKey: processWide.http.readApiKey,
      writeKey: processWide.http.writeApiKey,
      console: {
        readKey: processWide.http.readApiKey,
        writeKey: processWide.http.writeApiKey,
        connections: connections.map(consoleConnection),
        secrets: deploymentSecrets(deployment.connections),
        logger,
      },
    });
    // Which process answers, and which mirror each connection serves: `status` asks /readyz and checks both.
    const identity: DaemonIdentity = {
      instance: PROCESS_LEASE_HOLDER,
      pid: process.pid,
      startedAt,
      mirrors: Object.fromEntries(connections.map((connection) => [connection.name, mirrorKey(connection.context.config.dbPath)] as const)),
    };
    const http: RunningHttpServer = await startDaemonHttpServer({
      host: processWide.http.host,
      port: processWide.http.port,
      readiness: async () => ({
        ...combineReadiness(
          Object.fromEntries(
            await Promise.all(
              connections.map(
                async (connection) =>
                  [
                    connection.name,
                    partsReadiness(
                      {
                        ...(await connection.readiness.current()),
                        leases: connection.leases.held(),
                        ...(connection.leases.yielded().length > 0 ? { yielded: connection.leases.yielded() } : {}),
                        unsupported: await unsupportedStreams(connection.context.store, connection.context.config.sync.streams).catch(() => []),
                        failingPartitions: await failingPartitions(connection.context.conditions, connection.context.config.sync.streams).catch(() => []),
                      },
                      connection.parts.statuses(),
                    ),
                  ] as const,
              ),
            ),
          ),
        ),
        daemon: identity,
      }),
      metrics: () => metrics.render(),
      routes,
      notFound: daemonNotFound(routedConnections, routes),
      logger,
    });
    cleanups.add(() => http.close());

    for (const connection of connections) {
      // Every part stops once, through its supervisor, before the HTTP server closes.
      cleanups.add(() => connection.parts.stopAll());
      const parts = connection.parts;
      // Leases first (the first round takes every free one: webhook delivery starts if `webhooks` is
      // among them). Each start below waits for its part's first attempt only: a part that cannot
      // start yet (the mirror busy, Redis away) is tried again in the background, and shown.
      await parts.start('leases');
      // Endpoints registered before the first run: a new endpoint starts at the changelog's end as it is now.
      if (connection.dispatcher && connection.leases.holds(WEBHOOKS_LEASE)) await parts.start(WEBHOOKS_PART);
      if (connection.writes) await parts.start('writes');
      void parts.start('retention');
      await parts.start('stale-watch');
      if (processWide.http.readApiKey) await parts.start('console-history');
      await parts.start('scheduler');
      const config = connection.context.config;
      // Where this daemon answers and its parts' states, in the mirror for `status` (src/daemon/daemon-record.ts):
      // written now and every third of a lease while the mirror takes writes; deleted at the stop.
      const record = new DaemonRecord({
        executor: connection.context.store.executor,
        instance: PROCESS_LEASE_HOLDER,
        connection: connection.name,
        url: reachableUrl(processWide.http.host, http.port),
        startedAt,
        parts: () => parts.statuses(),
        intervalMs: (config.sync.leaseSeconds * 1000) / 3,
        logger: connection.context.logger,
      });
      cleanups.add(() => record.stop());
      await record.start();
      connection.context.logger.info(
        { url: http.url, streams: config.sync.streams, webhooks: config.webhooks.map((endpoint) => endpoint.name), sinks: config.sinks.map((sink) => sink.name), database: mirrorLocation(config.dbPath), leases: connection.leases.held() },
        deployment.named ? 'connection started' : 'daemon started',
      );
    }
    if (deployment.named) logger.info({ url: http.url, connections: connections.map((connection) => connection.name) }, 'daemon started');

    let stopping: Promise<void> | undefined;
    const first = connections[0]!;
    return {
      url: http.url,
      connections,
      context: first.context,
      scheduler: first.scheduler,
      readiness: first.readiness,
      dispatcher: first.dispatcher,
      metrics,
      routes: () => http.registered(),
      stop() {
        stopping ??= (async () => {
          logger.info(
            { running: connections.flatMap((connection) => connection.scheduler.activeRuns().map((run) => (deployment.named ? { connection: connection.name, ...run } : run))) },
            'daemon stopping: aborting runs (their checkpoints stand), stopping the schedule and webhook delivery',
          );
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

/** What the operator console (src/console/) reads of a running connection. */
function consoleConnection(connection: RunningConnection): ConsoleConnection {
  const config = connection.context.config;
  return {
    name: connection.name,
    executor: connection.context.store.executor,
    webhooks: config.webhooks,
    sinks: config.sinks,
    streams: config.sync.streams,
    runs: connection.runs,
    history: connection.history,
    retries: connection.retries,
    activeRuns: () => connection.scheduler.activeRuns(),
    heldLeases: () => connection.leases.held(),
    afterAction: () => connection.dispatcher?.notify(),
  };
}
