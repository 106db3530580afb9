/**
 * The console's plots' data (docs/operations.md "Operator console"): a small ring per connection,
 * in the daemon's memory, of what the mirror already says at each sample: each stream's lag (now −
 * cursor, seconds), each webhook endpoint's delivery lag (seconds behind its oldest undelivered
 * event), and the requests this daemon sent per sample interval against the rate limit. One sample
 * per interval (default a minute), the last 180 kept (3 hours); lost at a restart, like the recent
 * runs. `HistorySampler` takes the samples on a timer (jobs/daemon.ts starts one per connection).
 */
import { silentLogger, type Logger } from '../logging/logger.ts';
import { MirrorStore } from '../mirror/mirror-store.ts';
import type { SqlExecutor } from '../mirror/sql/executor.ts';
import type { WebhookEndpointConfig } from '../config/schema.ts';
import { listWebhookEndpoints } from '../notify/webhooks/admin.ts';
import type { StreamName } from '../streams/definitions.ts';
import type { RoundReports } from '../daemon/part-supervisor.ts';

/** Default interval between samples, ms: a minute, the API's rate window (spec §8). */
export const HISTORY_SAMPLE_MS = 60_000;

/** Default samples kept per series: 180, three hours at one a minute. */
export const HISTORY_CAPACITY = 180;

/** One point of a plot: when (ISO 8601) and the value (seconds, or requests). */
export interface HistoryPoint {
  at: string;
  value: number;
}

/** What one sample read. A stream not synced yet (no cursor) has no lag to plot: left out. */
export interface HistoryReading {
  /** Per stream, now − cursor, seconds. */
  streamLagSeconds: Record<string, number>;
  /** Per webhook endpoint, seconds behind its oldest undelivered event (0 when caught up). */
  endpointLagSeconds: Record<string, number>;
  /** Requests this daemon was granted since the previous sample (null at the first: nothing to compare with). */
  requests: number | null;
}

/** What the console renders: each series' points, oldest first, and the request limit per sample interval. */
export interface HistorySnapshot {
  /** Interval between samples, ms. */
  sampleMs: number;
  streams: Record<string, HistoryPoint[]>;
  endpoints: Record<string, HistoryPoint[]>;
  /** Requests per sample interval (this daemon's). */
  requests: HistoryPoint[];
  /** The rate limit over one sample interval: `rateLimit.perMinute` × sampleMs / `rateLimit.windowMs`. */
  requestLimit: number;
}

/** A ring of one connection's samples. */
export class ConsoleHistory {
  readonly sampleMs: number;
  readonly capacity: number;
  readonly #requestLimit: number;
  readonly #streams = new Map<string, HistoryPoint[]>();
  readonly #endpoints = new Map<string, HistoryPoint[]>();
  readonly #requests: HistoryPoint[] = [];

  /**
   * @param options.requestLimit requests allowed per sample interval (the limit line of the requests plot)
   * @param options.sampleMs interval between samples, ms (default 60000)
   * @param options.capacity samples kept per series (default 180)
   * @throws RangeError for a sampleMs or capacity below 1
   */
  constructor(options: { requestLimit: number; sampleMs?: number; capacity?: number }) {
    this.sampleMs = options.sampleMs ?? HISTORY_SAMPLE_MS;
    this.capacity = options.capacity ?? HISTORY_CAPACITY;
    if (!(this.sampleMs >= 1) || !(this.capacity >= 1)) throw new RangeError(`ConsoleHistory: sampleMs and capacity must be >= 1, got ${this.sampleMs} and ${this.capacity}`);
    this.#requestLimit = options.requestLimit;
  }

  /** Adds one sample taken at `at`; the oldest point of a full series is dropped. */
  record(at: Date, reading: HistoryReading): void {
    const iso = at.toISOString();
    for (const [stream, value] of Object.entries(reading.streamLagSeconds)) this.#push(this.#series(this.#streams, stream), { at: iso, value });
    for (const [endpoint, value] of Object.entries(reading.endpointLagSeconds)) this.#push(this.#series(this.#endpoints, endpoint), { at: iso, value });
    if (reading.requests !== null) this.#push(this.#requests, { at: iso, value: reading.requests });
  }

  /** A copy of every series, for a page or `/console.json`. */
  snapshot(): HistorySnapshot {
    const copy = (series: Map<string, HistoryPoint[]>) => Object.fromEntries([...series].map(([name, points]) => [name, [...points]]));
    return { sampleMs: this.sampleMs, streams: copy(this.#streams), endpoints: copy(this.#endpoints), requests: [...this.#requests], requestLimit: this.#requestLimit };
  }

  #series(map: Map<string, HistoryPoint[]>, name: string): HistoryPoint[] {
    let series = map.get(name);
    if (!series) map.set(name, (series = []));
    return series;
  }

  #push(series: HistoryPoint[], point: HistoryPoint): void {
    series.push(point);
    if (series.length > this.capacity) series.splice(0, series.length - this.capacity);
  }
}

/** What a sampler reads for one connection. */
export interface HistorySource {
  /** The connection's mirror (the daemon's own connection to it). */
  executor: SqlExecutor;
  /** The streams it runs. */
  streams: readonly StreamName[];
  /** Its webhook endpoints. */
  webhooks: readonly WebhookEndpointConfig[];
  /** Requests granted by its rate budget so far (a counter): the requests plot is its growth per sample. */
  grantedRequests(): number;
}

/** Takes a sample of `source` every `history.sampleMs` (the first at `start`) into `history`. */
export class HistorySampler {
  readonly #history: ConsoleHistory;
  readonly #source: HistorySource;
  readonly #logger: Logger;
  readonly #rounds: RoundReports | undefined;
  #timer: NodeJS.Timeout | undefined;
  #lastGranted: number | undefined;
  #sampling: Promise<void> | undefined;

  /** `rounds`: told how each sample went (the daemon's `console-history` part: src/daemon/part-supervisor.ts). */
  constructor(history: ConsoleHistory, source: HistorySource, logger: Logger = silentLogger, rounds?: RoundReports) {
    this.#history = history;
    this.#source = source;
    this.#logger = logger;
    this.#rounds = rounds;
  }

  /** Takes the first sample now, then one every interval (the timer does not keep the process alive). */
  start(): void {
    if (this.#timer) return;
    void this.sample();
    this.#timer = setInterval(() => void this.sample(), this.#history.sampleMs);
    this.#timer.unref();
  }

  /** Stops sampling; resolves once a sample under way is recorded. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#sampling;
  }

  /** Takes one sample now (one at a time: a call while one is under way waits for it). A mirror that cannot be read skips the sample. */
  async sample(now: Date = new Date()): Promise<void> {
    if (this.#sampling) return this.#sampling;
    this.#sampling = (async () => {
      try {
        const reading = await this.#read(now);
        this.#history.record(now, reading);
        this.#rounds?.working();
      } catch (error) {
        this.#rounds?.failing(error);
        this.#logger.debug({ err: { message: (error as Error).message } }, 'console history: sample skipped (the mirror could not be read)');
      } finally {
        this.#sampling = undefined;
      }
    })();
    return this.#sampling;
  }

  async #read(now: Date): Promise<HistoryReading> {
    const store = new MirrorStore(this.#source.executor);
    const streamLagSeconds: Record<string, number> = {};
    for (const stream of this.#source.streams) {
      const { cursor } = await store.readSyncState(stream);
      if (cursor !== null) streamLagSeconds[stream] = Math.max(0, Math.round((now.getTime() - Date.parse(cursor)) / 1000));
    }
    const endpointLagSeconds: Record<string, number> = {};
    if (this.#source.webhooks.length > 0) {
      for (const endpoint of await listWebhookEndpoints(this.#source.executor, { webhooks: this.#source.webhooks }, { attempts: 0, now })) {
        if (endpoint.configured && endpoint.registered) endpointLagSeconds[endpoint.name] = endpoint.lagEvents > 0 ? Math.round(endpoint.lagSeconds) : 0;
      }
    }
    const granted = this.#source.grantedRequests();
    const requests = this.#lastGranted === undefined ? null : Math.max(0, granted - this.#lastGranted);
    this.#lastGranted = granted;
    return { streamLagSeconds, endpointLagSeconds, requests };
  }
}
