/**
 * Runs one schedule against the real parts: the simulator (in this process, served over HTTP), a
 * `bizops-sync daemon` process (and, as the schedule says, a replica, `worker` processes and
 * one-off commands), the soak's own Redis, the mirror (a SQLite file, or a schema of the soak's own
 * PostgreSQL server), two webhook receivers, a Redis Streams sink on a Redis of its own and a NATS
 * JetStream sink on a NATS server of its own (each read as a consumer reads it) and a pull consumer. Steps change the world and break
 * things; then everything is healed, the soak waits for quiescence, and the oracle judges.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SIMULATED_STREAMS, startSimulator, type Fault, type RunningSimulator, type StreamName } from '@bizops-sync/simulator';
import { LIST_PAGE_LIMIT } from '../src/client/paginate.ts';
import { isStorable } from '../src/client/storable-json.ts';
import { RecordChains } from './chain.ts';
import { openMirrorReader, type MirrorReader } from './mirror-reader.ts';
import { finalChecks, mirrorDifferences, stepChecks, type OracleInput } from './oracle.ts';
import { SoakProcess, runCommand } from './processes.ts';
import { SoakRandom } from './random.ts';
import { SoakReceiver } from './receiver.ts';
import { NatsStreamReader } from './nats-reader.ts';
import { SinkStreamReader } from './stream-reader.ts';
import type { Schedule, Step } from './schedule.ts';
import type { SoakServices } from './services.ts';
import { TruthTimeline } from './truth.ts';
import { writePayload, writeRequestMatch, type SoakWrite } from './writes.ts';

/** One thing the oracle found wrong: which check, and what it saw. */
export interface Failure {
  check: string;
  message: string;
  /** The step (1-based) after which it was seen; absent for the final checks. */
  step?: number;
}

/** What one schedule did: its failures, and counts for the soak's report. */
export interface ScheduleResult {
  failures: Failure[];
  /** Faults injected, by kind (`list:capped-list`, `process:kill-daemon`, ...). */
  faults: Record<string, number>;
  /** Truth changes, by kind. */
  changes: Record<string, number>;
  /** Records compared at the end (mirror rows against the truth). */
  recordsChecked: number;
  /** Changelog events, and events received by the sinks, checked against the chains. */
  eventsChecked: number;
  writes: number;
  seconds: number;
  /** The processes' last log lines, when it failed. */
  logs: string[];
}

/** Options of one run. */
export interface RunOptions {
  services: SoakServices;
  /** A planted bug's name (BIZOPS_SOAK_PLANT for the processes); see soak/README.md. */
  plant?: string;
  /** Progress lines. */
  log(line: string): void;
  /** Stop early (the budget ran out): heal and judge what was done. */
  shouldStop?(): boolean;
}

const READ_KEY = 'soak-read-key-0123456789';
/** Text neither mirror can store (src/client/storable-json.ts): an unpaired surrogate, NUL. */
const UNSTORABLE = { surrogate: 'broken \ud800 text', nul: 'nul \u0000 text' } as const;
/** The stream each list path serves. */
const STREAM_BY_PATH: Record<string, StreamName> = Object.fromEntries(SIMULATED_STREAMS.map((stream) => [stream.path, stream.name]));
const WRITE_KEY = 'soak-write-key-0123456789';
/** The Redis Streams sink's one stream key (its `key` setting: every event in one stream). */
const FEED_KEY = 'soak:feed';
/** Between two steps, so the daemon's schedule (every second) gets to run. */
const STEP_GAP_MS = 350;
/** How long quiescence may take before the oracle judges what it has. */
const QUIESCENCE_MS = 60_000;
/**
 * How long the writes and the sinks may take to settle once the mirror is equal: a target's pause
 * after a database error is at most 5 s (src/notify/delivery/sink-delivery.ts), a broker taken for
 * down is probed every 5 to 30 s.
 */
const SINKS_WAIT_MS = 40_000;

let scheduleCounter = 0;

/** A webhook secret: `whsec_` + base64 of 32 random bytes. */
function webhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `probe` until it returns true or `timeoutMs` passes; returns whether it did. */
async function until(probe: () => Promise<boolean> | boolean, timeoutMs: number, intervalMs = 250): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await probe()) return true;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) return false;
    await sleep(intervalMs);
  }
}

/** One schedule's running parts. */
class ScheduleRun {
  readonly schedule: Schedule;
  readonly options: RunOptions;
  readonly failures: Failure[] = [];
  readonly faults: Record<string, number> = {};
  readonly writes: SoakWrite[] = [];
  readonly random: SoakRandom;
  simulator!: RunningSimulator;
  timeline!: TruthTimeline;
  dir!: string;
  location!: string;
  configFile!: string;
  receivers!: { a: SoakReceiver; b: SoakReceiver };
  /** The Redis Streams sink `feed`, as a reader of its stream key sees it. */
  feed: SinkStreamReader | undefined;
  /** The NATS JetStream sink `jet`, as a reader of its JetStream stream sees it. */
  jet: NatsStreamReader | undefined;
  reader: MirrorReader | undefined;
  daemon: SoakProcess | undefined;
  replica: SoakProcess | undefined;
  readonly workers: SoakProcess[] = [];
  /** Records made unstorable and not cleaned yet (cleaned by `heal`). */
  readonly poisoned: { stream: 'deals' | 'customers'; id: string; field: string; clean: string }[] = [];
  /** Marks of writes that had to be refused: none may reach the API. */
  readonly refusedMarks: string[] = [];
  readonly oneOffs: SoakProcess[] = [];
  readonly ended: SoakProcess[] = [];
  readonly consumer = new RecordChains();
  readonly consumed = new Set<string>();
  consumerProblems: string[] = [];
  #processCounter = 0;
  #consumerTimer: NodeJS.Timeout | undefined;
  #consuming = false;
  #redisBack: Promise<void> | undefined;

  constructor(schedule: Schedule, options: RunOptions) {
    this.schedule = schedule;
    this.options = options;
    this.random = new SoakRandom(schedule.seed ^ 0x5eed);
  }

  fault(kind: string): void {
    this.faults[kind] = (this.faults[kind] ?? 0) + 1;
  }

  env(): NodeJS.ProcessEnv {
    return {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      BIZOPS_CONFIG: this.configFile,
      BIZOPS_LOG_FORMAT: 'json',
      BIZOPS_LOG_LEVEL: 'info',
      ...(this.options.plant ? { BIZOPS_SOAK_PLANT: this.options.plant } : {}),
    };
  }

  spawn(kind: string, args: string[]): SoakProcess {
    this.#processCounter += 1;
    return new SoakProcess(`${kind}#${this.#processCounter}`, args, this.env());
  }

  async setUp(): Promise<void> {
    const { schedule, options } = this;
    scheduleCounter += 1;
    await options.services.redis.flush();
    this.simulator = await startSimulator({
      seed: schedule.seed,
      size: schedule.sizes,
      // The limit the daemon is configured with: the oracle expects no 429 at all.
      rateLimit: { limit: 40, windowMs: 1000 },
      ...(schedule.recordClockLagMs ? { recordClockLagMs: schedule.recordClockLagMs } : {}),
      ...(schedule.bursts ? { createdInBursts: schedule.bursts } : {}),
    });
    this.timeline = new TruthTimeline(this.simulator);
    this.dir = mkdtempSync(join(tmpdir(), 'bizops-soak-'));
    if (schedule.backend === 'postgres') {
      const postgres = await options.services.postgres();
      this.location = postgres.mirrorUrl(`soak_${process.pid}_${scheduleCounter}`);
    } else {
      this.location = join(this.dir, 'mirror.db');
    }
    this.receivers = { a: new SoakReceiver('a', webhookSecret()), b: new SoakReceiver('b', webhookSecret()) };
    await this.receivers.a.listen();
    await this.receivers.b.listen();
    await options.services.sinkRedis.flush();
    this.feed = new SinkStreamReader('feed', options.services.sinkRedis.url, FEED_KEY);
    // A JetStream stream (and subjects) of this schedule's own on the soak's NATS server.
    const natsStream = `SOAK${process.pid}N${scheduleCounter}`;
    this.jet = new NatsStreamReader('jet', options.services.nats.url, natsStream);
    this.configFile = join(this.dir, 'bizops-sync.json');
    writeFileSync(
      this.configFile,
      JSON.stringify(
        {
          baseUrl: this.simulator.url,
          tokens: { default: String(this.simulator.tokens.admin), employee: String(this.simulator.tokens.employee) },
          dbPath: this.location,
          redisUrl: options.services.redis.url,
          rateLimit: { perMinute: 40, windowMs: 1000, redisWaitSeconds: 30 },
          api: { requestDeadlineSeconds: 4 },
          sync: {
            schedule: '*/1 * * * * *',
            reconcileSchedule: '*/3 * * * * *',
            // Short enough for takeovers within a schedule; at 2 s a loaded machine's live PostgreSQL
            // transactions outlasted the idle-in-transaction limit (a third of a lease).
            leaseSeconds: 4,
            maxPollFactor: 1,
            overlapSeconds: 30,
            databaseWaitSeconds: 30,
          },
          writes: { sweepSeconds: 1, claimSeconds: 2, ledgerSettleSeconds: 2 },
          http: { port: 0, readApiKey: READ_KEY, writeApiKey: WRITE_KEY, readinessCacheSeconds: 1 },
          webhooks: [
            { name: 'a', url: this.receivers.a.url, secret: this.receivers.a.secret, ordering: 'record', maxInFlight: 8 },
            { name: 'b', url: this.receivers.b.url, secret: this.receivers.b.secret, ordering: 'endpoint', events: ['deal.*', 'transaction.*', 'qa_action.*', 'onboarding.*', 'write.*'] },
          ],
          // A Redis Streams sink on a Redis of its own that a step takes away (docs/sinks.md).
          // A NATS JetStream sink on a NATS server of its own that a step kills and starts again.
          sinks: [
            { name: 'feed', kind: 'redis-stream', url: options.services.sinkRedis.url, key: FEED_KEY, ackTimeoutSeconds: 2 },
            { name: 'jet', kind: 'nats', url: options.services.nats.url, subjectPrefix: natsStream.toLowerCase(), stream: natsStream, createStream: true, ackTimeoutSeconds: 2 },
          ],
        },
        null,
        2,
      ),
    );
    this.daemon = this.spawn('daemon', ['daemon']);
    const url = await this.daemon.httpUrl(60_000);
    // The named consumer reads from the changelog's start, whatever daemon serves it.
    await fetch(`${url}/consumers/soak`, { method: 'PUT', headers: { authorization: `Bearer ${READ_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ after: 0 }) });
    const ready = await until(async () => (await this.mirrorDiff()) === '', 60_000, 500);
    if (!ready) this.failures.push({ check: 'start', message: `the first backfill did not make the mirror equal to the truth within 60 s: ${await this.mirrorDiff()}` });
    this.#consumerTimer = setInterval(() => {
      void this.consume();
      void this.feed?.read();
      void this.jet?.read();
    }, 300);
  }

  async openReader(): Promise<MirrorReader> {
    this.reader ??= await openMirrorReader(this.location);
    return this.reader;
  }

  /** '' when the mirror equals the truth, else a summary of the differences. */
  async mirrorDiff(): Promise<string> {
    try {
      const reader = await this.openReader();
      const { summary } = await mirrorDifferences(reader, this.simulator);
      return summary;
    } catch (error) {
      await this.reader?.close().catch(() => undefined);
      this.reader = undefined;
      return `the mirror could not be read: ${String(error)}`;
    }
  }

  /** Every daemon-like process that serves the HTTP port now (not paused). */
  servingUrls(): string[] {
    return [this.daemon, this.replica].filter((daemon): daemon is SoakProcess => daemon !== undefined && daemon.alive && !daemon.paused && daemon.url !== undefined).map((daemon) => daemon.url!);
  }

  /** The pull consumer: reads its named consumer's events from a serving daemon and acknowledges them. */
  async consume(): Promise<void> {
    if (this.#consuming) return;
    this.#consuming = true;
    try {
      for (const url of this.servingUrls()) {
        const signal = AbortSignal.timeout(3000);
        const response = await fetch(`${url}/consumers/soak/changes?limit=500`, { headers: { authorization: `Bearer ${READ_KEY}` }, signal });
        if (response.status !== 200) continue;
        const page = (await response.json()) as { events: { id: string; type: string; data: { seq: number; stream: string; record_id: string; record?: unknown } }[]; next: number };
        for (const event of page.events) {
          if (this.consumed.has(event.id)) continue;
          this.consumed.add(event.id);
          this.consumer.append({ eventId: event.id, type: event.type, seq: Number(event.data.seq), stream: String(event.data.stream), recordId: String(event.data.record_id), record: event.data.record ?? null });
        }
        if (page.events.length > 0) {
          await fetch(`${url}/consumers/soak/ack`, { method: 'POST', headers: { authorization: `Bearer ${READ_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ seq: page.next }), signal });
        }
        return;
      }
    } catch {
      // the daemon is away or slow: the next round reads again (at least once)
    } finally {
      this.#consuming = false;
    }
  }

  /**
   * Processes that exited without being asked to: each a failure. But a worker that ended during
   * its start (before its write worker started) with exit 1 and the mirror's one line for a
   * PostgreSQL server that went away (`cannot connect to` / `lost the connection to the PostgreSQL
   * mirror`) made the documented start-up failure (docs/operations.md "Start-up failures"): it is
   * started again, as its supervisor would, and its writes are the next worker's.
   */
  crashes(): string[] {
    const lines: string[] = [];
    for (const worker of [...this.workers]) {
      if (worker.alive || worker.expectedExit || worker.workerStarted || worker.child.exitCode !== 1) continue;
      if (!/^bizops-sync: (cannot connect to|lost the connection to) the PostgreSQL mirror/.test(worker.tail.at(-1) ?? '')) continue;
      worker.expectedExit = true;
      this.fault('process:worker-start-failed');
      this.workers.push(this.spawn('worker', ['worker', '--concurrency', '2']));
    }
    for (const process of [this.daemon, this.replica, ...this.workers]) {
      if (process && !process.alive && !process.expectedExit) {
        lines.push(`${process.describeExit()} without being asked to; its last lines:\n    ${process.tail.slice(-8).join('\n    ')}`);
        process.expectedExit = true;
      }
    }
    return lines;
  }

  /**
   * Whether a fault hiding records of `path` from one complete scan may be injected now: no earlier
   * hiding fault of that list is pending, and since the last one was taken a complete scan has read
   * the list's last page unhidden. Two hiding faults taken by two complete scans in a row hide the
   * records from two scans, which is what a record really gone looks like (the two-scan rule): a
   * schedule never asks that of the sync. Waits at most 30 s (no daemon scanning: false, the fault
   * is skipped).
   */
  async hidingSettled(path: string): Promise<boolean> {
    const isHiding = (fault: Fault): boolean => fault.match?.path === path && ('atOffset' in fault || 'cap' in fault);
    const hidden = this.hidingPaths.get(path);
    if (!hidden) return true;
    if (!(await until(() => !this.simulator.faults.list().some((entry) => isHiding(entry.fault)), 30_000, 50))) return false;
    const from = this.simulator.requests.length;
    return until(
      () =>
        this.simulator.requests.slice(from).some((request) => {
          if (request.method !== 'GET' || !request.path.endsWith(path) || request.status !== 200) return false;
          const query = new URLSearchParams(request.query);
          return Object.entries(hidden).every(([key, value]) => query.get(key) === value);
        }),
      30_000,
      50,
    );
  }

  /** The lists a hiding fault was injected on in this schedule, with the query of the page it hid (`null`: a parameter absent). */
  private readonly hidingPaths = new Map<string, Record<string, string | null>>();

  injectList(fault: Record<string, unknown> & { kind: string }, path: string, times: number): void {
    const kind =
      fault.kind === 'status'
        ? `status-${String(fault.status)}`
        : fault.kind === 'truncate-list' && fault.cutTotal
          ? 'truncate-list-cut-total'
          : fault.kind === 'id-less-item' && fault.instead
            ? 'id-less-item-instead'
            : fault.kind === 'timestamp-style'
              ? `timestamp-style-${String(fault.style)}`
              : fault.kind;
    const { hide, ...rest } = fault;
    let query: Record<string, string | null> | undefined;
    if (typeof hide === 'number') {
      // The last `hide` records of the list (of its largest partition, for a partitioned stream) are
      // not served to one complete scan (no `updatedAfter`: the scans whose misses count): the fault
      // matches that scan's last page (`limit` the client's page size, `offset` the page holding
      // them), so neither an earlier page nor a `limit=1` probe takes it, and it hides them at most
      // up to that page's start.
      const stream = STREAM_BY_PATH[path]!;
      const partitions = this.simulator.world
        .partitionQueries(stream)
        .map((partition) => ({ partition, size: this.simulator.world.groundTruth(stream, Object.keys(partition).length ? partition : undefined).length }))
        .sort((left, right) => right.size - left.size);
      const { partition, size } = partitions[0] ?? { partition: {}, size: 0 };
      const lastPage = Math.max(0, Math.floor((size - 1) / LIST_PAGE_LIMIT) * LIST_PAGE_LIMIT);
      const at = Math.max(1, lastPage, size - hide);
      if (rest.kind === 'capped-list') rest.cap = at;
      else rest.atOffset = at;
      query = { ...partition, updatedAfter: null, limit: String(LIST_PAGE_LIMIT), offset: String(lastPage) };
      this.hidingPaths.set(path, query);
    }
    this.simulator.faults.inject({ ...(rest as unknown as Fault), match: { method: 'GET', path, ...(query ? { query } : {}) }, times } as Fault);
    this.fault(`list:${kind}`);
  }

  async startDaemon(): Promise<SoakProcess> {
    await this.redisUp();
    const daemon = this.spawn('daemon', ['daemon']);
    await daemon.httpUrl(60_000).catch((error: unknown) => this.failures.push({ check: 'process', message: String(error) }));
    return daemon;
  }

  /**
   * Waits (at most 30 s) until every live `worker` process has started: one still starting exits 1
   * when Redis does not answer (its promise), so Redis is not taken away under it.
   */
  async workersStarted(): Promise<void> {
    await until(() => this.workers.every((worker) => !worker.alive || worker.workerStarted), 30_000, 100);
  }

  /** Waits for Redis when a restart step took it away (a process started now would pace alone). */
  async redisUp(): Promise<void> {
    if (this.#redisBack) await this.#redisBack;
  }

  /**
   * Sends one write (the write API, or `bizops-sync enqueue` when no daemon answers) with its fault at
   * the API injected first; `latencyMs` is the answer's delay of a `latency` fault.
   * @returns the fault injected at the API (a `latency` fault is consumed once the write reaches the API)
   */
  async enqueue(step: Extract<Step, { do: 'write' }>, index: number, latencyMs = 1500): Promise<Fault | undefined> {
    const key = `s${this.schedule.seed}-${index}-${randomBytes(3).toString('hex')}`;
    const { payload, actAs } = writePayload(step.kind, key, step.pick, this.simulator, this.writes.length);
    const write: SoakWrite = { kind: step.kind, key, payload, ...(actAs ? { actAs } : {}) };
    let injected: Fault | undefined;
    if (step.fault !== 'none') {
      const { method, pathPattern } = writeRequestMatch(step.kind);
      const match = { method, path: pathPattern };
      const fault: Fault =
        step.fault === 'lose-response'
          ? { kind: 'lose-response-after-commit', match }
          : step.fault === 'reset'
            ? { kind: 'reset-mid-body', match }
            : step.fault === 'status-503'
              ? { kind: 'status', status: 503, match }
              : { kind: 'latency', ms: latencyMs, match };
      this.simulator.faults.inject(fault);
      this.fault(`write:${step.fault}`);
      injected = fault;
    }
    const body = JSON.stringify({ kind: step.kind, payload, idempotencyKey: key, ...(actAs ? { actAs } : {}) });
    if (step.via === 'http') {
      // The write API, sent again with the same key until a daemon answers 200/202 (a retry lands on the same write).
      for (let attempt = 0; attempt < 20 && !write.id; attempt += 1) {
        for (const url of this.servingUrls()) {
          try {
            const response = await fetch(`${url}/writes`, { method: 'POST', headers: { authorization: `Bearer ${WRITE_KEY}`, 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(5000) });
            if (response.status === 200 || response.status === 202) {
              write.id = ((await response.json()) as { write: { id: string } }).write.id;
              break;
            }
          } catch {
            // not answered: try again with the same key
          }
        }
        if (!write.id) await sleep(250);
      }
    }
    if (!write.id) {
      await this.redisUp();
      const args = ['enqueue', step.kind, '--data', JSON.stringify(payload), '--idempotency-key', key, '--json', ...(actAs ? ['--act-as', actAs] : [])];
      const result = await runCommand('enqueue', args, this.env(), 60_000);
      if (result.code === 0) write.id = (JSON.parse(result.stdout) as { id: string }).id;
      else this.failures.push({ check: 'writes', message: `enqueue ${step.kind} exited ${result.code}: ${result.tail.slice(-3).join(' | ')}` });
    }
    if (write.id) this.writes.push(write);
    return injected;
  }

  async runStep(step: Step, index: number): Promise<void> {
    const { timeline } = this;
    switch (step.do) {
      case 'churn':
        timeline.churn(step.count);
        return;
      case 'delete':
        timeline.delete(step.stream, step.pick);
        return;
      case 'complete-onboarding':
        timeline.completeOnboarding(step.pick);
        return;
      case 'move-partition':
        timeline.movePartition(step.pick, step.to);
        return;
      case 'expose-fields':
        timeline.exposeFields();
        this.fault('list:field-appears');
        return;
      case 'tie-burst':
        timeline.tieBurst(step.count, this.random);
        return;
      case 'list-fault':
        if (typeof step.fault.hide === 'number' && !(await this.hidingSettled(step.path))) {
          this.fault('list:hide-skipped');
          return;
        }
        this.injectList(step.fault, step.path, step.times);
        return;
      case 'write':
        await this.enqueue(step, index);
        return;
      case 'poison-record': {
        // A record no mirror can store, listed for a while, then cleaned upstream: quarantined, never a failing sync.
        const poisoned = this.timeline.poison(step.stream, step.pick, UNSTORABLE[step.text]);
        this.fault(`hostile:poison-${step.text}`);
        if (!poisoned) return;
        this.poisoned.push(poisoned);
        await sleep(step.cleanAfterMs);
        this.timeline.cleanPoison(poisoned);
        this.poisoned.splice(this.poisoned.indexOf(poisoned), 1);
        return;
      }
      case 'unstorable-write': {
        // A write whose text no mirror can store: refused at intake naming the field, nothing kept, nothing sent.
        const key = `s${this.schedule.seed}-${index}-bad`;
        const payload = { type: 'INCOME', amount: 1200, description: `soak ${key} ${UNSTORABLE[step.text]}` };
        if (isStorable(payload)) throw new Error('the unstorable write is storable by the project\'s own rule');
        this.fault(`hostile:write-${step.text}`);
        let refused: string | undefined;
        if (step.via === 'http' && this.servingUrls().length > 0) {
          const response = await fetch(`${this.servingUrls()[0]}/writes`, { method: 'POST', headers: { authorization: `Bearer ${WRITE_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ kind: 'transaction.create', payload, idempotencyKey: key }) }).catch(() => undefined);
          if (response && response.status !== 400) refused = `POST /writes answered ${response.status}, not 400`;
        } else {
          const result = await runCommand('enqueue', ['enqueue', 'transaction.create', '--data', JSON.stringify(payload), '--idempotency-key', key], this.env(), 60_000);
          if (result.code !== 2) refused = `enqueue exited ${result.code}, not 2`;
        }
        if (refused) this.failures.push({ check: 'writes', step: index + 1, message: `an unstorable write (${step.text} in description): ${refused}` });
        this.refusedMarks.push(`soak ${key}`);
        return;
      }
      case 'write-burst': {
        // Writes claimed and waiting for the rate budget when Redis loses their jobs, a sweep (every
        // second, and on a reconnect) running meanwhile: the sweepers must not send any twice. Redis
        // is flushed first: a budget that lost its state grants one request at a time until an
        // answer's rate-limit headers arrive (docs/rate-budget.md "When Redis is away"), and the
        // answers are slowed, so the writes after the first wait, claimed, while Redis loses them.
        const kinds = ['transaction.create', 'email.send', 'location.create'] as const;
        const latencyMs = step.latencyMs ?? 1500;
        const redis = this.options.services.redis;
        // A `worker` process beside the daemon, as deployments run them: its sweeper and free slots too.
        await this.redisUp();
        if (!this.workers.some((worker) => worker.alive && !worker.paused)) {
          this.fault('process:worker-start');
          this.workers.push(this.spawn('worker', ['worker', '--concurrency', '2']));
        }
        await this.workersStarted();
        await redis.flush();
        this.simulator.faults.inject({ kind: 'latency', ms: latencyMs, match: { method: 'GET' }, times: 2 });
        const burst = Array.from({ length: step.count }, (_, offset) => ({ do: 'write' as const, kind: kinds[offset % kinds.length]!, fault: 'latency' as const, via: 'http' as const, pick: offset * 7919 + index }));
        await Promise.all(burst.map((write, offset) => this.enqueue(write, index * 100 + offset, latencyMs)));
        // Claimed but not sent yet: the window a second claim must not get into.
        const reader = await this.openReader().catch(() => undefined);
        if (reader) await until(async () => (await reader.all<{ id: string }>("SELECT id FROM writes WHERE status = 'queued' AND claim_token IS NOT NULL")).length > 0, 3000, 25);
        await sleep(step.flushAfterMs);
        if (step.redis === 'restart') {
          this.fault('redis:restart-during-writes');
          await redis.kill();
          this.#redisBack = sleep(step.downMs ?? 0).then(() => redis.start());
          await this.#redisBack;
        } else {
          this.fault('redis:flush-during-writes');
          await redis.flush();
        }
        // The writes' answers come while the step waits: a sweep runs in between.
        await sleep(latencyMs + 1000);
        return;
      }
      case 'kill-daemon': {
        const victim = this.daemon;
        if (!victim?.alive) return;
        this.fault('process:kill-daemon');
        await victim.kill();
        this.ended.push(victim);
        await sleep(step.downMs);
        this.daemon = await this.startDaemon();
        return;
      }
      case 'api-down': {
        const victim = this.daemon;
        if (!victim?.alive) return;
        this.fault(step.outlast ? 'api:down-at-start-outlasted' : 'api:down-at-start');
        await victim.kill();
        this.ended.push(victim);
        await this.simulator.refuseConnections();
        await this.redisUp();
        const starting = this.spawn('daemon', ['daemon']);
        if (step.outlast) {
          // The daemon tries for 10 s, then ends with exit 1 and one line naming the address and the cause.
          const timer = setTimeout(() => starting.child.kill('SIGKILL'), 60_000);
          const { code } = await starting.exited;
          clearTimeout(timer);
          starting.expectedExit = true;
          this.ended.push(starting);
          const lines = starting.tail.filter((line) => line !== '' && !line.startsWith('{'));
          if (code !== 1 || lines.length !== 1 || !/cannot reach the API at .*\(ECONNREFUSED\)/.test(lines[0]!)) {
            this.failures.push({ check: 'process', step: index + 1, message: `a daemon started while the API refused connections: exit ${code} (1 promised) with ${lines.length} plain line(s) (one naming the address and the cause promised): ${JSON.stringify(lines.slice(-3))}` });
          }
          await this.simulator.acceptConnections();
          this.daemon = await this.startDaemon();
        } else {
          // Back within the daemon's 10 s of trying: it starts.
          await sleep(step.ms);
          await this.simulator.acceptConnections();
          await starting.httpUrl(60_000).catch((error: unknown) => this.failures.push({ check: 'process', step: index + 1, message: `a daemon started while the API was away for ${step.ms} ms: ${String(error)}` }));
          this.daemon = starting;
        }
        return;
      }
      case 'pause-daemon': {
        const victim = this.random.chance(0.7) ? this.daemon : (this.replica ?? this.daemon);
        if (!victim?.alive) return;
        this.fault('process:pause-daemon');
        victim.pause();
        await sleep(step.ms);
        victim.resume();
        return;
      }
      case 'restart-daemon': {
        const victim = this.daemon;
        if (!victim?.alive) return;
        this.fault('process:restart-daemon');
        const code = await victim.stop();
        if (code !== 0) this.failures.push({ check: 'process', step: index + 1, message: `${victim.name} exited with ${code} after SIGTERM (0 promised); last lines:\n    ${victim.tail.slice(-6).join('\n    ')}` });
        this.ended.push(victim);
        this.daemon = await this.startDaemon();
        return;
      }
      case 'restart-daemon-brokers-paused': {
        // The sinks' brokers stop answering (SIGSTOP: connections open, nothing answered), then the
        // daemon is stopped (SIGTERM): its sinks' close must not wait for them past the daemon's
        // forced exit (exit 0 promised), and nothing it did not get acknowledged is lost.
        const victim = this.daemon;
        if (!victim?.alive) return;
        this.fault('process:restart-daemon-brokers-paused');
        const brokers = [this.options.services.sinkRedis, this.options.services.nats];
        for (const broker of brokers) broker.pause();
        let code: number | null;
        try {
          code = await victim.stop();
        } finally {
          for (const broker of brokers) broker.resume();
        }
        if (code !== 0) this.failures.push({ check: 'process', step: index + 1, message: `${victim.name} exited with ${code} after SIGTERM with the sinks' brokers paused (0 promised); last lines:\n    ${victim.tail.slice(-6).join('\n    ')}` });
        this.ended.push(victim);
        this.daemon = await this.startDaemon();
        return;
      }
      case 'replica': {
        if (step.on && !this.replica?.alive) {
          this.fault('process:replica-start');
          this.replica = await this.startDaemon();
        } else if (!step.on && this.replica?.alive) {
          this.fault('process:replica-kill');
          await this.replica.kill();
          this.ended.push(this.replica);
        }
        return;
      }
      case 'one-off': {
        await this.redisUp();
        const command = this.spawn(step.command, [step.command, ...(step.command === 'verify' ? ['--json'] : [])]);
        this.oneOffs.push(command);
        this.fault(`process:one-off-${step.command}-${step.end}`);
        if (step.end === 'finish') {
          const timer = setTimeout(() => command.child.kill('SIGKILL'), 60_000);
          await command.exited;
          clearTimeout(timer);
          // 0, 1 (verify: drift while the world moves), 75 (the daemon holds the stream) are answers; a crash is not.
          const code = command.child.exitCode;
          if (code === null || ![0, 1, 75].includes(code)) this.failures.push({ check: 'process', step: index + 1, message: `${command.describeExit()}; last lines:\n    ${command.tail.slice(-6).join('\n    ')}` });
        } else {
          await sleep(this.random.int(300, 1500));
          if (step.end === 'kill') {
            await command.kill();
          } else {
            command.pause();
            await sleep(this.random.int(500, 3000));
            command.resume();
            await command.kill();
          }
        }
        return;
      }
      case 'worker': {
        if (step.action === 'start') {
          if (this.workers.filter((worker) => worker.alive).length >= 2) return;
          await this.redisUp();
          this.fault('process:worker-start');
          this.workers.push(this.spawn('worker', ['worker', '--concurrency', '2']));
          return;
        }
        const worker = this.workers.find((candidate) => candidate.alive);
        if (!worker) return;
        if (step.action === 'kill') {
          this.fault('process:worker-kill');
          await worker.kill();
        } else {
          this.fault('process:worker-pause');
          worker.pause();
          await sleep(this.random.int(1000, 4000));
          worker.resume();
        }
        return;
      }
      case 'redis': {
        const redis = this.options.services.redis;
        if (step.action === 'flush') {
          this.fault('redis:flush');
          await redis.flush();
          return;
        }
        this.fault('redis:restart-empty');
        await this.workersStarted();
        await redis.kill();
        // The steps go on while Redis is away; a process started meanwhile waits for it.
        this.#redisBack = sleep(step.downMs).then(() => redis.start());
        await this.#redisBack;
        return;
      }
      case 'postgres': {
        const postgres = await this.options.services.postgres();
        if (step.action === 'terminate') {
          this.fault('postgres:terminate-backends');
          await postgres.terminateBackends();
        } else {
          this.fault('postgres:restart');
          await postgres.shutdown();
          await sleep(this.random.int(200, 2000));
          await postgres.start();
        }
        return;
      }
      case 'receiver': {
        const receiver = this.receivers[step.endpoint];
        const records = this.simulator.world.deals;
        const record = step.mode === 'reject-record' && records.length > 0 ? `deals/${records[step.pick % records.length]!.id}` : undefined;
        this.fault(`receiver:${step.mode}`);
        const hot = record ?? (records.length > 0 ? `deals/${records[step.pick % records.length]!.id}` : undefined);
        await receiver.misbehave(step.mode, step.ms, record);
        if (hot) {
          // One record changes while its event fails, and again once the receiver is back: its later
          // events must wait behind the failed one.
          // It changes once more halfway through: an event recorded while an earlier one of its record is failing.
          const id = hot.slice('deals/'.length);
          this.timeline.touchDeal(id, `soak title ${index}.0`);
          await sleep(step.ms / 2);
          this.timeline.touchDeal(id, `soak title ${index}.m`);
          await sleep(step.ms / 2 + 300);
          for (let round = 1; round < 3; round += 1) {
            this.timeline.touchDeal(id, `soak title ${index}.${round}`);
            await sleep(400);
          }
        }
        return;
      }
      case 'write-through-race': {
        // A deals page read before a deal.close, sent after its write-through committed: no event may
        // set the deal back to the page's older version (docs/sync.md "Write-throughs during a run").
        const open = this.simulator.world.deals.filter((deal) => deal.status === 'OPEN');
        if (open.length === 0) return;
        // Changed now, so that the daemon's next incremental page of deals lists it.
        this.timeline.touchDeal(open[step.pick % open.length]!.id, `soak title ${index}.race`);
        let release: () => void = () => undefined;
        const gate = new Promise<void>((resolve) => (release = resolve));
        const before = this.simulator.requests.length;
        this.simulator.faults.inject({ kind: 'hold-answer', until: gate, match: { method: 'GET', path: '/deals' } });
        try {
          const held = await until(() => this.simulator.requests.slice(before).some((request) => request.method === 'GET' && request.path.endsWith('/deals')), 30_000, 50);
          if (!held) {
            this.fault('write:through-race-skipped');
            return;
          }
          this.fault('write:through-during-held-page');
          // The same pick among the same open deals: the deal touched above.
          await this.enqueue({ do: 'write', kind: 'deal.close', fault: 'none', via: 'http', pick: step.pick }, index);
          const id = this.writes.at(-1)?.id;
          const reader = await this.openReader().catch(() => undefined);
          if (id && reader) await until(async () => !['queued', 'sending'].includes((await reader.all<{ status: string }>('SELECT status FROM writes WHERE id = ?', [id]))[0]?.status ?? 'queued'), 30_000, 50);
        } finally {
          release();
        }
        return;
      }
      case 'sink-outage': {
        // The sink's broker away (killed; its append-only file keeps what it acknowledged), while a
        // record changes before and during: nothing lost, each record's events in order once back.
        const broker = this.options.services.sinkRedis;
        const deals = this.simulator.world.deals;
        const id = deals.length > 0 ? deals[step.pick % deals.length]!.id : undefined;
        this.fault('sink:redis-stream-away');
        if (id) this.timeline.touchDeal(id, `soak title ${index}.0`);
        await sleep(300);
        await broker.kill();
        if (id) this.timeline.touchDeal(id, `soak title ${index}.1`);
        await sleep(step.ms);
        await broker.start();
        if (id) this.timeline.touchDeal(id, `soak title ${index}.2`);
        return;
      }
      case 'nats-outage': {
        // The NATS server killed and started again on its port and store, while a record changes
        // before, during and after: nothing lost, each record's events in order, duplicates only of
        // one event id.
        const server = this.options.services.nats;
        const deals = this.simulator.world.deals;
        const id = deals.length > 0 ? deals[step.pick % deals.length]!.id : undefined;
        this.fault('sink:nats-away');
        if (id) this.timeline.touchDeal(id, `soak title ${index}.0`);
        await sleep(300);
        await server.kill();
        if (id) this.timeline.touchDeal(id, `soak title ${index}.1`);
        await sleep(step.ms);
        await server.start();
        if (id) this.timeline.touchDeal(id, `soak title ${index}.2`);
        return;
      }
      case 'wait':
        await sleep(step.ms);
        return;
    }
  }

  /** Clears every fault and brings every part back, leaving one daemon (and the live replica and workers). */
  async heal(): Promise<void> {
    this.simulator.faults.clear();
    await this.simulator.acceptConnections();
    await this.options.services.sinkRedis.start().catch(() => undefined);
    await this.options.services.nats.start().catch(() => undefined);
    for (const poisoned of this.poisoned.splice(0)) this.timeline.cleanPoison(poisoned);
    await this.redisUp();
    await this.receivers.a.heal();
    await this.receivers.b.heal();
    for (const process of [this.daemon, this.replica, ...this.workers, ...this.oneOffs]) process?.resume();
    for (const command of this.oneOffs) if (command.alive) await command.kill();
    if (this.schedule.backend === 'postgres') {
      const postgres = await this.options.services.postgres();
      await postgres.start().catch(() => undefined);
    }
    if (!this.daemon?.alive) this.daemon = await this.startDaemon();
  }

  /** Everything the oracle reads. */
  oracleInput(): OracleInput {
    return {
      simulator: this.simulator,
      timeline: this.timeline,
      receivers: this.receivers,
      sinks: [this.feed, this.jet].filter((sink) => sink !== undefined).map((sink) => ({ name: sink.name, events: ['*'], chains: sink.chains, problems: sink.problems, read: () => sink.read() })),
      consumer: this.consumer,
      writes: this.writes,
      refusedMarks: this.refusedMarks,
      schedule: this.schedule,
    };
  }

  async tearDown(): Promise<void> {
    if (this.#consumerTimer) clearInterval(this.#consumerTimer);
    this.feed?.close();
    await Promise.race([this.jet?.close(), sleep(5000)]);
    for (const process of [this.daemon, this.replica, ...this.workers, ...this.oneOffs]) {
      if (process?.alive) await process.kill();
    }
    await this.reader?.close().catch(() => undefined);
    await this.receivers?.a.close();
    await this.receivers?.b.close();
    await this.simulator?.close();
    if (this.schedule.backend === 'postgres' && this.location) {
      const schema = new URL(this.location).searchParams.get('schema');
      const postgres = await this.options.services.postgres();
      await postgres.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  logs(): string[] {
    const lines: string[] = [];
    for (const process of [this.daemon, this.replica, ...this.ended, ...this.workers]) {
      if (process) lines.push(`--- ${process.name} (last warnings and errors)`, ...process.warnings.slice(-15), `--- ${process.name} (last lines)`, ...process.tail.slice(-10));
    }
    return lines;
  }
}

/** Runs `schedule` to its end and judges it. Never throws: a broken part is a failure. */
export async function runSchedule(schedule: Schedule, options: RunOptions): Promise<ScheduleResult> {
  const started = Date.now();
  const run = new ScheduleRun(schedule, options);
  let recordsChecked = 0;
  let eventsChecked = 0;
  let logs: string[] = [];
  try {
    await run.setUp();
    const setUpSeconds = (Date.now() - started) / 1000;
    for (const [index, step] of schedule.steps.entries()) {
      if (options.shouldStop?.()) break;
      const stepStarted = Date.now();
      await run.runStep(step, index);
      if (process.env.SOAK_VERBOSE) options.log(`  step ${index + 1} ${JSON.stringify(step)}: ${((Date.now() - stepStarted) / 1000).toFixed(1)} s`);
      await sleep(STEP_GAP_MS);
      for (const message of run.crashes()) run.failures.push({ check: 'process', step: index + 1, message });
      const reader = await run.openReader().catch(() => undefined);
      if (reader) {
        for (const message of await stepChecks(reader, run.oracleInput()).catch((error: unknown) => [`the mirror could not be read: ${String(error)}`])) {
          if (/could not be read/.test(message)) continue;
          run.failures.push({ check: message.split(':')[0]!, step: index + 1, message });
        }
      }
      if (run.failures.length > 0) break;
    }
    const stepsDone = Date.now();
    await run.heal();
    // Quiescence: the truth stands still; wait for the mirror, the writes and the sinks to settle.
    await until(async () => (await run.mirrorDiff()) === '', QUIESCENCE_MS, 500);
    const quiet = Date.now();
    // The sinks and the writes get their own wait (SINKS_WAIT_MS).
    const deadline = quiet + SINKS_WAIT_MS;
    const reader = await run.openReader();
    const final = await finalChecks(reader, run.oracleInput(), {
      deadline,
      location: run.location,
      verify: async () => {
        await run.redisUp();
        const result = await runCommand('verify', ['verify', '--json'], run.env(), 120_000);
        return { code: result.code, output: result.stdout.slice(0, 2000) };
      },
      changesCommand: async () => {
        const result = await runCommand('changes', ['changes', '--since', '0'], run.env(), 120_000);
        return { code: result.code, output: result.stdout };
      },
    });
    options.log(`  set-up ${setUpSeconds.toFixed(1)} s, steps ${((stepsDone - started) / 1000 - setUpSeconds).toFixed(1)} s, mirror equal after ${((quiet - stepsDone) / 1000).toFixed(1)} s, final checks ${((Date.now() - quiet) / 1000).toFixed(1)} s`);
    recordsChecked = final.recordsChecked;
    eventsChecked = final.eventsChecked;
    for (const message of final.problems) run.failures.push({ check: message.split(':')[0]!, message });
    for (const message of run.crashes()) run.failures.push({ check: 'process', message });
    // A graceful stop of every daemon: exit 0 promised.
    for (const daemon of [run.daemon, run.replica]) {
      if (!daemon?.alive) continue;
      const code = await daemon.stop();
      if (code !== 0) run.failures.push({ check: 'process', message: `${daemon.name} exited with ${code} after SIGTERM at the end (0 promised); last lines:\n    ${daemon.tail.slice(-6).join('\n    ')}` });
    }
  } catch (error) {
    run.failures.push({ check: 'harness', message: `the soak itself failed: ${(error as Error).stack ?? String(error)}` });
  } finally {
    if (run.failures.length > 0) logs = run.logs();
    await run.tearDown().catch(() => undefined);
  }
  return {
    failures: run.failures,
    faults: run.faults,
    changes: run.timeline?.changes ?? {},
    recordsChecked,
    eventsChecked,
    writes: run.writes.length,
    seconds: (Date.now() - started) / 1000,
    logs,
  };
}
