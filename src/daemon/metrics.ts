/**
 * The daemon's metrics (`GET /metrics`), in the Prometheus text exposition format, with prom-client.
 *
 * Figures the daemon counts itself (runs, their errors and durations, changes recorded, skipped
 * ticks) are updated as they happen; figures kept elsewhere are read at scrape time:
 *   - the mirror (its SQL executor, asynchronous: prom-client awaits each `collect`): records per
 *     stream, last success, cursor, changelog seq, quarantined records, record clock lag;
 *   - the API clients' `stats` and the rate budget's `stats()` (spec §8): requests, 429s, retries,
 *     slots granted per priority, time spent waiting for the budget;
 *   - the webhook dispatcher's `stats()`: deliveries, failures, lag in events and seconds.
 * Counters read from a source restart at 0 with the process, as Prometheus counters may.
 *
 * Every series except prom-client's process metrics carries a `connection` label (the configured
 * connection's name, `default` without `connections`; docs/operations.md "Many companies"), left out
 * of the list below.
 *
 * Metric names (all prefixed `bizops_`; `stream` is a configured stream of src/streams/definitions.ts):
 *   stream_last_success_timestamp_seconds{stream}   gauge, Unix seconds of the last successful run
 *   stream_cursor_timestamp_seconds{stream}         gauge, the cursor (server time) of incremental syncs (a partitioned
 *                                                   stream: its oldest partition's)
 *   partition_cursor_timestamp_seconds{stream,partition}  gauge, a partitioned stream's cursor per partition
 *   partition_last_success_timestamp_seconds{stream,partition}  gauge, a partition's last successful run
 *   partition_records{stream,partition,state}       gauge, a partition's mirrored records: state live|tombstoned
 *   partition_condition{stream,partition,condition} gauge, 1 for the partition's own condition, 0 for the others
 *   partition_consecutive_failures{stream,partition}  gauge, a partition's failed runs in a row
 *   partition_records_quarantined{stream,partition} gauge, rows of `rejected_records` a partition listed
 *   stream_partitions{stream}                       gauge, partitions of a partitioned stream that have a sync state
 *   stream_records{stream,state}                    gauge, mirrored records: state live|tombstoned
 *   stream_supported{stream}                        gauge, 0 when the list endpoint answered 404
 *   stream_changes_recorded_total{stream}           counter, changelog events appended by this process
 *   stream_runs_total{stream,reason,status}         counter, runs ended (reason backfill|sync|reconcile)
 *   stream_run_errors_total{stream,reason}          counter, runs that failed
 *   stream_incomplete_scans_total{stream,reason}    counter, scans short of the list total: reason ended-early|unstable-order
 *   stream_run_duration_seconds{stream,reason}      histogram, wall-clock time of a run
 *   stream_ticks_skipped_total{stream}              counter, schedule ticks skipped: the stream was still running
 *   stream_ticks_rested_total{stream}               counter, schedule ticks a quiet stream rested (adaptive polling)
 *   stream_poll_interval_ticks{stream}              gauge, the stream's polling interval in ticks of its schedule (1: every tick)
 *   stream_condition{stream,condition}              gauge, 1 for the stream's condition (ok|failing|stale|unsupported), 0 for the others
 *   stream_consecutive_failures{stream}             gauge, failed runs in a row since the last success
 *   stream_stale_after_seconds{stream}              gauge, how long without a success makes the stream stale
 *   stream_condition_events_total{stream,type}      counter, stream.failing|stale|recovered|unsupported events appended by this process
 *   records_rejected_total{stream}                  counter, records quarantined (new `record.rejected` changes) by this process
 *   records_quarantined{stream}                     gauge, rows of `rejected_records` now
 *   clock_skew_seconds{stream}                      gauge, how far record timestamps lag the cursor's clock (the overlap widens by it)
 *   changelog_last_seq                              gauge, the highest `changes.seq`
 *   api_requests_total                              counter, API requests sent (retries and 429s included)
 *   api_rate_limited_total                          counter, 429 answers
 *   api_retries_total                               counter, requests that were retries
 *   rate_budget_granted_total{priority}             counter, slots granted: write|incremental|backfill
 *   rate_budget_wait_seconds_total                  counter, time requests spent waiting for the budget
 *   rate_budget_pauses_total                        counter, pauses after a 429's Retry-After
 *   webhook_deliveries_total{endpoint}              counter, events delivered (2xx)
 *   webhook_failures_total{endpoint}                counter, failed delivery attempts
 *   webhook_lag_events{endpoint}                    gauge, changelog events not yet delivered
 *   webhook_lag_seconds{endpoint}                   gauge, age of the oldest undelivered event
 *   webhook_consecutive_failures{endpoint}          gauge, failed attempts in a row (any event) since the last 2xx
 *   webhook_held_events{endpoint}                   gauge, events held back behind a failing event of their record
 *   webhook_in_flight{endpoint}                     gauge, delivery requests in flight
 *   webhook_endpoint_enabled{endpoint}              gauge, 0 while disabled (410 Gone, or failing too long)
 *   webhook_endpoint_disabled{endpoint,reason}      gauge, 1 while disabled, reason `gone` or `failing`; 0 with reason `none` while enabled
 *   webhook_failed_events{endpoint}                 gauge, events given up on after the retry schedule, not yet re-sent
 *   sink_deliveries_total{sink,kind}                counter, events a sink acknowledged (docs/sinks.md)
 *   sink_failures_total{sink,kind}                 counter, failed publish attempts
 *   sink_lag_events{sink,kind}                      gauge, changelog events not yet published
 *   sink_lag_seconds{sink,kind}                     gauge, age of the oldest event not yet published
 *   sink_consecutive_failures, sink_held_events, sink_in_flight, sink_enabled, sink_failed_events {sink,kind}: as the webhook_ ones
 *   consumer_lag_events{consumer}                   gauge, changelog events after a named consumer's cursor
 *   consumer_lag_seconds{consumer}                  gauge, age of the oldest event after its cursor
 *   daemon_part_running{part}                       gauge, 1 while the part runs (or stands by for a replica), 0 while starting, retrying or stopped
 * plus prom-client's default process metrics (`process_*`, `nodejs_*`).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ApiClientStats } from '../client/client.ts';
import { PRIORITIES, type RateBudgetStats } from '../client/rate-budget.ts';
import { RecordClockStore } from '../mirror/record-clock-store.ts';
import { RECORD_REJECTED, RejectedRecords } from '../mirror/rejected-records.ts';
import type { AppendedChange, MirrorStore, SyncState } from '../mirror/mirror-store.ts';
import type { StreamDefinition } from '../streams/define-stream.ts';
import { STREAMS, type StreamName } from '../streams/definitions.ts';
import type { RunReason, RunResult } from '../sync/sync-engine.ts';
import { STREAM_CONDITION_EVENTS } from '../sync/stream-conditions.ts';
import { STREAM_CONDITIONS, type StreamCondition } from '../mirror/stream-condition-store.ts';
import { partIsUp, type PartState } from './part-supervisor.ts';

/** Where scrape-time figures come from. */
export interface DaemonMetricsSources {
  streams: readonly StreamName[];
  store: {
    readSyncState(stream: StreamName): Promise<SyncState>;
    /** The sync states of a partitioned stream's partitions (docs/sync.md "Partitioned streams"); absent: the partition gauges are not exported. */
    listPartitionStates?(stream: StreamName): Promise<SyncState[]>;
    /** Rows of a stream table, or (`partition`) of one partition's. */
    countRecords(stream: StreamDefinition, partition?: string): Promise<{ live: number; deleted: number }>;
    lastSeq(): Promise<number>;
  };
  /** Every API client of the process (the sync's and the readiness probe's): their counters are summed. */
  apiClients: readonly { readonly stats: ApiClientStats }[];
  budget: { stats(): RateBudgetStats };
  /** The webhook dispatcher; absent when no endpoint is configured. Its `stats()` reads the mirror (asynchronous). */
  webhooks?: { stats(): readonly WebhookStatsLike[] | Promise<readonly WebhookStatsLike[]> } | null;
  /** The quarantine and the record clock (src/mirror/rejected-records.ts, record-clock-store.ts); absent: those gauges are not exported. */
  pageTrust?: { countRejected(stream: StreamName, partition?: string): Promise<number>; recordClockLagSeconds(stream: StreamName): Promise<number> };
  /** Also export prom-client's default process metrics (default true). */
  processMetrics?: boolean;
  /** Each stream's operational condition (src/sync/stream-conditions.ts); absent: the condition gauges are not exported. */
  conditions?: { read(stream: StreamName, partition?: string): Promise<{ condition: StreamCondition; failedRuns: number }> };
  /** Each stream's stale threshold, seconds (src/daemon/stale-streams.ts); absent: `bizops_stream_stale_after_seconds` is not exported. */
  staleAfterSeconds?: (stream: StreamName) => number | undefined;
  /** The leases this daemon competes for, and which it holds (src/daemon/lease-keeper.ts); absent: `bizops_leases_held` is not exported. */
  leases?: { readonly names: readonly string[]; holds(name: string): boolean };
  /** The parts the daemon started and their states (src/daemon/part-supervisor.ts); absent: `bizops_daemon_part_running` is not exported. */
  parts?: { statuses(): readonly { part: string; state: PartState }[] };
  /**
   * SQLite: how many of this process's writes to the mirror file gave up because another process
   * held its write lock (src/mirror `mirrorFileLockedCount`); absent (PostgreSQL):
   * `bizops_mirror_file_locked_total` is not exported for the connection.
   */
  mirrorFileLocked?: () => number;
  /** The named consumers of the changelog with their lag (src/notify/pull); absent: their gauges are not exported. */
  consumers?: () => Promise<readonly { name: string; lagEvents: number; lagSeconds: number }[]>;
}

/** `DaemonMetricsSources.pageTrust` read from the mirror of `store`: quarantined records and record clock lag per stream. */
export function pageTrustSource(store: MirrorStore): NonNullable<DaemonMetricsSources['pageTrust']> {
  const rejected = new RejectedRecords(store);
  const recordClock = new RecordClockStore(store.executor);
  return { countRejected: (stream, partition) => rejected.count(stream, partition), recordClockLagSeconds: (stream) => recordClock.streamLag(stream) };
}

/** The dispatcher's per-endpoint figures used here (src/notify `WebhookEndpointStats`). */
export interface WebhookStatsLike {
  name: string;
  /** `webhook` (absent: webhook) or a sink's kind: sinks have the `bizops_sink_*` series. */
  kind?: string;
  enabled: boolean;
  deliveries: number;
  failures: number;
  lagEvents: number;
  lagSeconds: number;
  consecutiveFailures: number;
  /** Events given up on and not yet re-sent. */
  failedEvents?: number;
  /** Events held back behind a failing event of their record. */
  heldEvents?: number;
  /** Requests in flight. */
  inFlight?: number;
  /** `gone` or `failing` while disabled; null while enabled. */
  disabledKind?: string | null;
}

/** Run durations span a one-page sync (tens of ms) to a large backfill (minutes). */
const DURATION_BUCKETS_SECONDS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];

function unixSeconds(iso: string | null): number | undefined {
  if (iso === null) return undefined;
  const ms = Date.parse(iso);
  return Number.isFinite(ms) ? ms / 1000 : undefined;
}

/** One connection's sources (`DaemonMetricsSources` without `processMetrics`) and its name, the `connection` label. */
export interface ConnectionMetricsSources extends Omit<DaemonMetricsSources, 'processMetrics'> {
  name: string;
}

/** Sources of a deployment of several connections: each series carries its connection's name. */
export interface DeploymentMetricsSources {
  connections: readonly ConnectionMetricsSources[];
  /** Also export prom-client's default process metrics (default true). */
  processMetrics?: boolean;
}

/** The daemon's metric registry; see the module comment for the names. */
export class DaemonMetrics {
  readonly registry = new Registry();
  /** The name `record*` calls without a connection count under: the first connection's (`default` alone). */
  readonly #firstConnection: string;
  readonly #changes: Counter<'connection' | 'stream'>;
  readonly #runs: Counter<'connection' | 'stream' | 'reason' | 'status'>;
  readonly #runErrors: Counter<'connection' | 'stream' | 'reason'>;
  readonly #runDuration: Histogram<'connection' | 'stream' | 'reason'>;
  readonly #skippedTicks: Counter<'connection' | 'stream'>;
  readonly #restedTicks: Counter<'connection' | 'stream'>;
  readonly #pollInterval: Gauge<'connection' | 'stream'>;
  readonly #incompleteScans: Counter<'connection' | 'stream' | 'reason'>;
  readonly #rejected: Counter<'connection' | 'stream'>;
  readonly #conditionEvents: Counter<'connection' | 'stream' | 'type'>;

  /**
   * @param sources one connection's sources (labelled `connection="default"`), or every
   *   connection's (`{ connections: [{ name, ... }] }`)
   */
  constructor(sources: DaemonMetricsSources | DeploymentMetricsSources) {
    const registers = [this.registry];
    const connections: readonly ConnectionMetricsSources[] = 'connections' in sources ? sources.connections : [{ ...sources, name: 'default' }];
    this.#firstConnection = connections[0]?.name ?? 'default';
    if (sources.processMetrics ?? true) collectDefaultMetrics({ register: this.registry });
    /** Every (connection, stream) pair with its connection's sources. */
    const streamsOf = function* (): Generator<{ connection: string; stream: StreamName; source: ConnectionMetricsSources }> {
      for (const source of connections) for (const stream of source.streams) yield { connection: source.name, stream, source };
    };

    this.#changes = new Counter({ name: 'bizops_stream_changes_recorded_total', help: 'Changelog events appended by this process, per stream.', labelNames: ['connection', 'stream'], registers });
    this.#runs = new Counter({ name: 'bizops_stream_runs_total', help: 'Stream runs ended, by reason (backfill, sync, reconcile) and status.', labelNames: ['connection', 'stream', 'reason', 'status'], registers });
    this.#runErrors = new Counter({ name: 'bizops_stream_run_errors_total', help: 'Stream runs that failed (the checkpoint stands; the next run resumes).', labelNames: ['connection', 'stream', 'reason'], registers });
    this.#runDuration = new Histogram({
      name: 'bizops_stream_run_duration_seconds',
      help: 'Wall-clock duration of stream runs, seconds.',
      labelNames: ['connection', 'stream', 'reason'],
      buckets: DURATION_BUCKETS_SECONDS,
      registers,
    });
    this.#skippedTicks = new Counter({ name: 'bizops_stream_ticks_skipped_total', help: 'Schedule ticks skipped because the stream was still running.', labelNames: ['connection', 'stream'], registers });
    this.#restedTicks = new Counter({
      name: 'bizops_stream_ticks_rested_total',
      help: 'Schedule ticks on which a quiet stream was not polled (adaptive polling: its interval had not passed).',
      labelNames: ['connection', 'stream'],
      registers,
    });
    this.#pollInterval = new Gauge({
      name: 'bizops_stream_poll_interval_ticks',
      help: 'The stream\'s polling interval, in ticks of its schedule (1: every tick; grows while its polls find no change).',
      labelNames: ['connection', 'stream'],
      registers,
    });
    this.#incompleteScans = new Counter({
      name: 'bizops_stream_incomplete_scans_total',
      help: 'Runs whose scan listed fewer distinct records than the list total (reason ended-early or unstable-order): no miss counted, cursor kept.',
      labelNames: ['connection', 'stream', 'reason'],
      registers,
    });
    this.#rejected = new Counter({ name: 'bizops_records_rejected_total', help: 'Records quarantined because they failed their schema (record.rejected changes), per stream.', labelNames: ['connection', 'stream'], registers });
    this.#conditionEvents = new Counter({
      name: 'bizops_stream_condition_events_total',
      help: 'Operational events appended by this process (stream.failing, stream.stale, stream.recovered, stream.unsupported), per stream.',
      labelNames: ['connection', 'stream', 'type'],
      registers,
    });
    for (const { connection, stream } of streamsOf()) {
      for (const type of STREAM_CONDITION_EVENTS) this.#conditionEvents.inc({ connection, stream, type }, 0);
      this.#rejected.inc({ connection, stream }, 0);
      this.#changes.inc({ connection, stream }, 0);
      for (const reason of ['ended-early', 'unstable-order'] as const) this.#incompleteScans.inc({ connection, stream, reason }, 0);
      this.#skippedTicks.inc({ connection, stream }, 0);
      this.#restedTicks.inc({ connection, stream }, 0);
      this.#pollInterval.set({ connection, stream }, 1);
      for (const reason of ['backfill', 'sync', 'reconcile'] as const) this.#runErrors.inc({ connection, stream, reason }, 0);
    }

    new Gauge({
      name: 'bizops_stream_last_success_timestamp_seconds',
      help: 'Unix time of the last successful run of the stream.',
      labelNames: ['connection', 'stream'],
      registers,
      async collect() {
        this.reset();
        for (const { connection, stream, source } of streamsOf()) {
          const at = unixSeconds((await source.store.readSyncState(stream)).lastSuccessAt);
          if (at !== undefined) this.set({ connection, stream }, at);
        }
      },
    });
    new Gauge({
      name: 'bizops_stream_cursor_timestamp_seconds',
      help: 'The stream cursor (server time at the start of the last successful run), Unix seconds.',
      labelNames: ['connection', 'stream'],
      registers,
      async collect() {
        this.reset();
        for (const { connection, stream, source } of streamsOf()) {
          const at = unixSeconds((await source.store.readSyncState(stream)).cursor);
          if (at !== undefined) this.set({ connection, stream }, at);
        }
      },
    });
    new Gauge({
      name: 'bizops_partition_cursor_timestamp_seconds',
      help: "A partitioned stream's cursor per partition (server time at the start of the partition's last successful run), Unix seconds.",
      labelNames: ['connection', 'stream', 'partition'],
      registers,
      async collect() {
        this.reset();
        for (const { connection, stream, source } of streamsOf()) {
          if (!STREAMS[stream].partitions || !source.store.listPartitionStates) continue;
          for (const state of await source.store.listPartitionStates(stream)) {
            const at = unixSeconds(state.cursor);
            if (at !== undefined) this.set({ connection, stream, partition: state.partition }, at);
          }
        }
      },
    });
    // Each partition wherever its stream is: its last success, rows, condition and quarantine, a `partition` label each.
    const partitionsOf = async function* (): AsyncGenerator<{ connection: string; stream: StreamName; partition: string; state: SyncState; source: ConnectionMetricsSources }> {
      for (const { connection, stream, source } of streamsOf()) {
        if (!STREAMS[stream].partitions || !source.store.listPartitionStates) continue;
        for (const state of await source.store.listPartitionStates(stream)) yield { connection, stream, partition: state.partition, state, source };
      }
    };
    new Gauge({
      name: 'bizops_partition_last_success_timestamp_seconds',
      help: "A partitioned stream's partition: Unix time of its last successful run.",
      labelNames: ['connection', 'stream', 'partition'],
      registers,
      async collect() {
        this.reset();
        for await (const { connection, stream, partition, state } of partitionsOf()) {
          const at = unixSeconds(state.lastSuccessAt);
          if (at !== undefined) this.set({ connection, stream, partition }, at);
        }
      },
    });
    new Gauge({
      name: 'bizops_partition_records',
      help: 'A partitioned stream\'s records in the mirror per partition (the rows whose partition field holds its value): state="live" or "tombstoned".',
      labelNames: ['connection', 'stream', 'partition', 'state'],
      registers,
      async collect() {
        this.reset();
        for await (const { connection, stream, partition, source } of partitionsOf()) {
          const counts = await source.store.countRecords(STREAMS[stream], partition);
          this.set({ connection, stream, partition, state: 'live' }, counts.live);
          this.set({ connection, stream, partition, state: 'tombstoned' }, counts.deleted);
        }
      },
    });
    if (connections.some((source) => source.conditions)) {
      new Gauge({
        name: 'bizops_partition_condition',
        help: "1 for a partition's own operational condition (ok, failing, stale, unsupported), 0 for the others.",
        labelNames: ['connection', 'stream', 'partition', 'condition'],
        registers,
        async collect() {
          this.reset();
          for await (const { connection, stream, partition, source } of partitionsOf()) {
            if (!source.conditions) continue;
            const { condition } = await source.conditions.read(stream, partition);
            for (const each of STREAM_CONDITIONS) this.set({ connection, stream, partition, condition: each }, each === condition ? 1 : 0);
          }
        },
      });
      new Gauge({
        name: 'bizops_partition_consecutive_failures',
        help: "Failed runs of a partition in a row since its last success.",
        labelNames: ['connection', 'stream', 'partition'],
        registers,
        async collect() {
          this.reset();
          for await (const { connection, stream, partition, source } of partitionsOf()) if (source.conditions) this.set({ connection, stream, partition }, (await source.conditions.read(stream, partition)).failedRuns);
        },
      });
    }
    if (connections.some((source) => source.pageTrust)) {
      new Gauge({
        name: 'bizops_partition_records_quarantined',
        help: 'Records in rejected_records now that a partition listed (failed their schema), per partition.',
        labelNames: ['connection', 'stream', 'partition'],
        registers,
        async collect() {
          this.reset();
          for await (const { connection, stream, partition, source } of partitionsOf()) if (source.pageTrust) this.set({ connection, stream, partition }, await source.pageTrust.countRejected(stream, partition));
        },
      });
    }
    new Gauge({
      name: 'bizops_stream_partitions',
      help: 'Partitions of a partitioned stream that have a sync state (0: none configured or mirrored yet, nothing is requested).',
      labelNames: ['connection', 'stream'],
      registers,
      async collect() {
        this.reset();
        for (const { connection, stream, source } of streamsOf()) {
          if (!STREAMS[stream].partitions || !source.store.listPartitionStates) continue;
          this.set({ connection, stream }, (await source.store.listPartitionStates(stream)).length);
        }
      },
    });
    new Gauge({
      name: 'bizops_stream_supported',
      help: '1 while the stream can be listed; 0 after its list endpoint answered 404.',
      labelNames: ['connection', 'stream'],
      registers,
      async collect() {
        for (const { connection, stream, source } of streamsOf()) this.set({ connection, stream }, (await source.store.readSyncState(stream)).supported ? 1 : 0);
      },
    });
    if (connections.some((source) => source.conditions)) {
      new Gauge({
        name: 'bizops_stream_condition',
        help: "1 for the stream's operational condition (ok, failing, stale, unsupported), 0 for the others (docs/operations.md \"Operational events\").",
        labelNames: ['connection', 'stream', 'condition'],
        registers,
        async collect() {
          for (const { connection, stream, source } of streamsOf()) {
            if (!source.conditions) continue;
            const { condition } = await source.conditions.read(stream);
            for (const each of STREAM_CONDITIONS) this.set({ connection, stream, condition: each }, each === condition ? 1 : 0);
          }
        },
      });
      new Gauge({
        name: 'bizops_stream_consecutive_failures',
        help: 'Failed runs of the stream in a row since its last success.',
        labelNames: ['connection', 'stream'],
        registers,
        async collect() {
          for (const { connection, stream, source } of streamsOf()) if (source.conditions) this.set({ connection, stream }, (await source.conditions.read(stream)).failedRuns);
        },
      });
    }
    if (connections.some((source) => source.staleAfterSeconds)) {
      new Gauge({
        name: 'bizops_stream_stale_after_seconds',
        help: 'How long without a successful run makes the stream stale, seconds (sync.staleAfterSchedules x its schedule interval, at least sync.staleMinimumSeconds).',
        labelNames: ['connection', 'stream'],
        registers,
        collect() {
          for (const { connection, stream, source } of streamsOf()) {
            const seconds = source.staleAfterSeconds?.(stream);
            if (seconds !== undefined) this.set({ connection, stream }, seconds);
          }
        },
      });
    }
    new Gauge({
      name: 'bizops_stream_records',
      help: 'Records in the mirror: state="live" (listed upstream) or "tombstoned".',
      labelNames: ['connection', 'stream', 'state'],
      registers,
      async collect() {
        for (const { connection, stream, source } of streamsOf()) {
          const counts = await source.store.countRecords(STREAMS[stream]);
          this.set({ connection, stream, state: 'live' }, counts.live);
          this.set({ connection, stream, state: 'tombstoned' }, counts.deleted);
        }
      },
    });
    if (connections.some((source) => source.pageTrust)) {
      new Gauge({
        name: 'bizops_records_quarantined',
        help: 'Records in rejected_records now (failed their schema; they leave when a run accepts them), per stream.',
        labelNames: ['connection', 'stream'],
        registers,
        async collect() {
          for (const { connection, stream, source } of streamsOf()) if (source.pageTrust) this.set({ connection, stream }, await source.pageTrust.countRejected(stream));
        },
      });
      new Gauge({
        name: 'bizops_clock_skew_seconds',
        help: "How far the stream's record timestamps were seen to lag the cursor's clock (server Date), seconds; incremental syncs widen their overlap by it.",
        labelNames: ['connection', 'stream'],
        registers,
        async collect() {
          for (const { connection, stream, source } of streamsOf()) if (source.pageTrust) this.set({ connection, stream }, await source.pageTrust.recordClockLagSeconds(stream));
        },
      });
    }
    if (connections.some((source) => source.leases)) {
      new Gauge({
        name: 'bizops_leases_held',
        help: 'Leases this daemon holds (1) or leaves to a replica (0): stream:<stream> and webhooks (docs/operations.md "Running two daemons (replicas)").',
        labelNames: ['connection', 'lease'],
        registers,
        collect() {
          this.reset();
          for (const source of connections) for (const lease of source.leases?.names ?? []) this.set({ connection: source.name, lease }, source.leases!.holds(lease) ? 1 : 0);
        },
      });
    }
    if (connections.some((source) => source.parts)) {
      new Gauge({
        name: 'bizops_daemon_part_running',
        help: 'Each part the daemon starts (leases, webhooks, scheduler, writes, retention, stale-watch, console-history): 1 while it runs or stands by for a replica holding its lease, 0 while it is starting, retrying or stopped (docs/operations.md "The daemon\'s parts").',
        labelNames: ['connection', 'part'],
        registers,
        collect() {
          this.reset();
          for (const source of connections) for (const { part, state } of source.parts?.statuses() ?? []) this.set({ connection: source.name, part }, partIsUp(state) ? 1 : 0);
        },
      });
    }
    new Gauge({
      name: 'bizops_changelog_last_seq',
      help: 'The highest changelog seq.',
      labelNames: ['connection'],
      registers,
      async collect() {
        for (const source of connections) this.set({ connection: source.name }, await source.store.lastSeq());
      },
    });

    const apiTotal = (source: ConnectionMetricsSources, pick: (stats: ApiClientStats) => number) => source.apiClients.reduce((sum, client) => sum + pick(client.stats), 0);
    const perConnectionCounter = (name: string, help: string, value: (source: ConnectionMetricsSources) => number) =>
      new Counter({
        name,
        help,
        labelNames: ['connection'],
        registers,
        collect() {
          this.reset();
          for (const source of connections) this.inc({ connection: source.name }, value(source));
        },
      });
    perConnectionCounter('bizops_api_requests_total', 'API requests sent, retries and 429s included.', (source) => apiTotal(source, (stats) => stats.requests));
    perConnectionCounter('bizops_api_rate_limited_total', 'API answers with status 429 (spec §7).', (source) => apiTotal(source, (stats) => stats.rateLimited));
    perConnectionCounter('bizops_api_retries_total', 'API requests that were retries.', (source) => apiTotal(source, (stats) => stats.retries));
    new Counter({
      name: 'bizops_rate_budget_granted_total',
      help: "Rate budget slots granted, by priority (write, incremental, backfill); connections on one company show their shared budget's figures each.",
      labelNames: ['connection', 'priority'],
      registers,
      collect() {
        this.reset();
        for (const source of connections) {
          const stats = source.budget.stats();
          for (const priority of PRIORITIES) this.inc({ connection: source.name, priority }, stats.granted[priority]);
        }
      },
    });
    perConnectionCounter('bizops_rate_budget_wait_seconds_total', 'Time requests spent waiting for the rate budget, seconds.', (source) => source.budget.stats().waitedMs / 1000);
    const lockedSources = connections.filter((source) => source.mirrorFileLocked);
    if (lockedSources.length > 0) {
      new Counter({
        name: 'bizops_mirror_file_locked_total',
        help: 'Writes to the SQLite mirror file that found it write-locked by another process and gave up without waiting (tried again at the next round or tick).',
        labelNames: ['connection'],
        registers,
        collect() {
          this.reset();
          for (const source of lockedSources) this.inc({ connection: source.name }, source.mirrorFileLocked!());
        },
      });
    }
    perConnectionCounter('bizops_rate_budget_pauses_total', "Rate budget pauses after a 429's Retry-After.", (source) => source.budget.stats().pauses);

    const consumerSources = connections.filter((source) => source.consumers);
    if (consumerSources.length > 0) {
      const perConsumer = (name: string, help: string, pick: (consumer: { lagEvents: number; lagSeconds: number }) => number) =>
        new Gauge({
          name,
          help,
          labelNames: ['connection', 'consumer'] as const,
          registers,
          async collect() {
            const figures: { connection: string; consumer: { name: string; lagEvents: number; lagSeconds: number } }[] = [];
            for (const source of consumerSources) for (const consumer of await source.consumers!()) figures.push({ connection: source.name, consumer });
            this.reset();
            for (const { connection, consumer } of figures) this.set({ connection, consumer: consumer.name }, pick(consumer));
          },
        });
      perConsumer('bizops_consumer_lag_events', 'Changelog events after the named consumer\'s cursor (the last seq it acknowledged).', (consumer) => consumer.lagEvents);
      perConsumer('bizops_consumer_lag_seconds', 'Age of the oldest event after the named consumer\'s cursor, seconds (0 when caught up).', (consumer) => consumer.lagSeconds);
    }

    const webhookSources = connections.filter((source) => source.webhooks);
    if (webhookSources.length > 0) {
      const eachEndpoint = async (): Promise<{ connection: string; stats: WebhookStatsLike }[]> => {
        const figures: { connection: string; stats: WebhookStatsLike }[] = [];
        for (const source of webhookSources) for (const stats of await source.webhooks!.stats()) if ((stats.kind ?? 'webhook') === 'webhook') figures.push({ connection: source.name, stats });
        return figures;
      };
      const perEndpoint = (name: string, help: string, type: 'counter' | 'gauge', pick: (stats: WebhookStatsLike) => number) => {
        const options = {
          name,
          help,
          labelNames: ['connection', 'endpoint'] as const,
          registers,
        };
        if (type === 'counter') {
          new Counter({
            ...options,
            async collect() {
              const figures = await eachEndpoint();
              this.reset();
              for (const { connection, stats } of figures) this.inc({ connection, endpoint: stats.name }, pick(stats));
            },
          });
        } else {
          new Gauge({
            ...options,
            async collect() {
              const figures = await eachEndpoint();
              this.reset();
              for (const { connection, stats } of figures) this.set({ connection, endpoint: stats.name }, pick(stats));
            },
          });
        }
      };
      perEndpoint('bizops_webhook_deliveries_total', 'Webhook events delivered with a 2xx, by endpoint.', 'counter', (stats) => stats.deliveries);
      perEndpoint('bizops_webhook_failures_total', 'Failed webhook delivery attempts, by endpoint.', 'counter', (stats) => stats.failures);
      perEndpoint('bizops_webhook_lag_events', 'Changelog events not yet delivered to the endpoint.', 'gauge', (stats) => stats.lagEvents);
      perEndpoint('bizops_webhook_lag_seconds', 'Age of the oldest event not yet delivered to the endpoint, seconds.', 'gauge', (stats) => stats.lagSeconds);
      perEndpoint('bizops_webhook_consecutive_failures', 'Failed attempts in a row (any event) since the endpoint\'s last 2xx.', 'gauge', (stats) => stats.consecutiveFailures);
      perEndpoint('bizops_webhook_held_events', 'Events held back behind a failing event of their record (retried on the schedule).', 'gauge', (stats) => stats.heldEvents ?? 0);
      perEndpoint('bizops_webhook_in_flight', 'Webhook requests in flight to the endpoint.', 'gauge', (stats) => stats.inFlight ?? 0);
      perEndpoint('bizops_webhook_endpoint_enabled', '1 while the endpoint receives events; 0 while disabled (410 Gone, or failing too long).', 'gauge', (stats) => (stats.enabled ? 1 : 0));
      perEndpoint('bizops_webhook_failed_events', 'Events the endpoint gave up on after the retry schedule, not yet re-sent (webhooks replay --failed).', 'gauge', (stats) => stats.failedEvents ?? 0);
      new Gauge({
        name: 'bizops_webhook_endpoint_disabled',
        help: '1 while the endpoint is disabled, by reason (gone: 410; failing: no 2xx for disableAfterDays); 0 with reason "none" while enabled.',
        labelNames: ['connection', 'endpoint', 'reason'] as const,
        registers,
        async collect() {
          const figures = await eachEndpoint();
          this.reset();
          for (const { connection, stats } of figures) {
            if (stats.enabled) this.set({ connection, endpoint: stats.name, reason: 'none' }, 0);
            else this.set({ connection, endpoint: stats.name, reason: stats.disabledKind ?? 'gone' }, 1);
          }
        },
      });
      const eachSink = async (): Promise<{ connection: string; stats: WebhookStatsLike }[]> => {
        const figures: { connection: string; stats: WebhookStatsLike }[] = [];
        for (const source of webhookSources) for (const stats of await source.webhooks!.stats()) if ((stats.kind ?? 'webhook') !== 'webhook') figures.push({ connection: source.name, stats });
        return figures;
      };
      const perSink = (name: string, help: string, type: 'counter' | 'gauge', pick: (stats: WebhookStatsLike) => number) => {
        const options = { name, help, labelNames: ['connection', 'sink', 'kind'] as const, registers };
        const labels = (connection: string, stats: WebhookStatsLike) => ({ connection, sink: stats.name, kind: stats.kind ?? 'sink' });
        if (type === 'counter') {
          new Counter({
            ...options,
            async collect() {
              const figures = await eachSink();
              this.reset();
              for (const { connection, stats } of figures) this.inc(labels(connection, stats), pick(stats));
            },
          });
        } else {
          new Gauge({
            ...options,
            async collect() {
              const figures = await eachSink();
              this.reset();
              for (const { connection, stats } of figures) this.set(labels(connection, stats), pick(stats));
            },
          });
        }
      };
      perSink('bizops_sink_deliveries_total', 'Events a sink acknowledged (published), by sink.', 'counter', (stats) => stats.deliveries);
      perSink('bizops_sink_failures_total', 'Failed publish attempts, by sink.', 'counter', (stats) => stats.failures);
      perSink('bizops_sink_lag_events', 'Changelog events not yet published to the sink (after its cursor, and held back).', 'gauge', (stats) => stats.lagEvents);
      perSink('bizops_sink_lag_seconds', 'Age of the oldest event not yet published to the sink, seconds.', 'gauge', (stats) => stats.lagSeconds);
      perSink('bizops_sink_consecutive_failures', "Failed attempts in a row (any event) since the sink's last acknowledgement.", 'gauge', (stats) => stats.consecutiveFailures);
      perSink('bizops_sink_held_events', 'Events held back behind a failing event of their record.', 'gauge', (stats) => stats.heldEvents ?? 0);
      perSink('bizops_sink_in_flight', 'Publishes in flight to the sink.', 'gauge', (stats) => stats.inFlight ?? 0);
      perSink('bizops_sink_enabled', '1 while the sink receives events; 0 while disabled (failing for disableAfterDays).', 'gauge', (stats) => (stats.enabled ? 1 : 0));
      perSink('bizops_sink_failed_events', 'Events the sink gave up on after the retry schedule, not yet published again (sinks replay --failed).', 'gauge', (stats) => stats.failedEvents ?? 0);
    }
  }

  /** Counts a finished run of `connection` (default: the first connection): its status, its error, its duration (ms). */
  recordRun(result: RunResult, durationMs: number, connection = this.#firstConnection): void {
    const labels = { connection, stream: result.stream, reason: result.reason };
    this.#runs.inc({ ...labels, status: result.status });
    if (result.status === 'failed') this.#runErrors.inc(labels);
    if (result.scan?.outcome === 'incomplete') this.#incompleteScans.inc({ connection, stream: result.stream, reason: result.scan.reason ?? 'ended-early' });
    this.#runDuration.observe(labels, durationMs / 1000);
  }

  /** Counts changelog events just appended by `connection`'s engine or worker (its `onChanges`). */
  recordChanges(changes: readonly AppendedChange[], connection = this.#firstConnection): void {
    const perStream = new Map<string, number>();
    for (const change of changes) {
      perStream.set(change.stream, (perStream.get(change.stream) ?? 0) + 1);
      if (change.type === RECORD_REJECTED) this.#rejected.inc({ connection, stream: change.stream });
      if ((STREAM_CONDITION_EVENTS as readonly string[]).includes(change.type)) this.#conditionEvents.inc({ connection, stream: change.stream, type: change.type });
    }
    for (const [stream, count] of perStream) this.#changes.inc({ connection, stream }, count);
  }

  /** Counts a schedule tick of `connection` skipped because the stream was still running. */
  recordSkippedTick(stream: StreamName, _reason: RunReason, connection = this.#firstConnection): void {
    this.#skippedTicks.inc({ connection, stream });
  }

  /** Counts a schedule tick on which a quiet stream of `connection` rested, and its interval now (ticks). */
  recordRestedTick(stream: StreamName, factor: number, connection = this.#firstConnection): void {
    this.#restedTicks.inc({ connection, stream });
    this.#pollInterval.set({ connection, stream }, factor);
  }

  /** The polling interval of a stream of `connection` now, in ticks of its schedule (after each run). */
  recordPollInterval(stream: StreamName, factor: number, connection = this.#firstConnection): void {
    this.#pollInterval.set({ connection, stream }, factor);
  }

  /** The exposition text and its content type. @throws when a source fails (e.g. the database is closed). */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
