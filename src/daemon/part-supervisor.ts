/**
 * The daemon's part supervisor (docs/operations.md "The daemon's parts"): every part the daemon
 * starts for a connection (the lease keeper, webhook and sink delivery, the scheduler, the write
 * worker and its sweeper, the changelog retention, the stale-streams watch, the console's plots)
 * is started through it, so that none is left stopped by a failure at its start, and each one's
 * state can be read (`/readyz` `parts`, `bizops_daemon_part_running`, and `status` through the
 * daemon's row in the mirror: daemon-record.ts).
 *
 * A part's start that throws (the SQLite file busy, the database or Redis away) is tried again on a
 * bounded exponential backoff (p-retry: `minDelayMs` doubling up to `maxDelayMs`, each wait
 * times a random factor in [1, 2)) until it
 * starts or the part is stood by or stopped; the backoff's wait is cancelled then. A part whose
 * work recurs once started (the lease keeper's rounds, the write sweeper's sweeps, the retention's
 * prunings, the stale watch's checks, the console's samples) says how its latest round went through
 * `RoundReports` (`PartRun` is one; `rounds(name)` gives one that reports to part `name`'s latest
 * start): a failed round shows the part `retrying` with the error and `failures` (rounds in a row),
 * `since` the first of them; the next round that works shows it `running` again.
 *
 * States (`PartState`):
 *   starting   not started yet (its first attempt runs, or it waits for something: `reason`)
 *   running    started, and its latest round (if it reports any) worked
 *   retrying   its start failed and is tried again (`error`: the last error's short form,
 *              `failures` in a row), or its latest round failed
 *   standby    not run here on purpose (a replica holds its lease: `reason`)
 *   stopped    the daemon stopped it
 *
 * Operations on one part run one after another in the order called; `stopAll` stops every started
 * part once, in the reverse order of `add`.
 */
import pRetry from 'p-retry';
import { silentLogger, type Logger } from '../logging/logger.ts';
import { maskSecrets } from '../logging/mask.ts';
import { shortError } from '../status/verdict.ts';

/** What a part is doing (module comment). */
export type PartState = 'starting' | 'running' | 'retrying' | 'standby' | 'stopped';

/** Every `PartState`, in the order of the module comment. */
export const PART_STATES: readonly PartState[] = ['starting', 'running', 'retrying', 'standby', 'stopped'];

/** One part's state as `/readyz` shows it. */
export interface PartStatus {
  /** The part's name (`leases`, `webhooks`, `scheduler`, ...). */
  part: string;
  state: PartState;
  /** Whether the daemon is ready only while this part runs (or stands by). */
  required: boolean;
  /** When the part entered this state (ISO 8601). */
  since: string;
  /** `retrying`: the last error's short form (secrets masked, about 80 characters at most). */
  error?: string;
  /** `retrying`: failed attempts (or rounds) in a row. */
  failures?: number;
  /** `starting` or `standby`: what it waits for, or why it does not run here. */
  reason?: string;
}

/**
 * How a part's recurring work reports each round (module comment). Never throws; a report while the
 * part is not started (or is stopping) changes nothing shown.
 */
export interface RoundReports {
  /** The part's latest round failed (it tries again on its own): the part shows `retrying` with `error`. */
  failing(error: unknown): void;
  /** The part's latest round worked: the part shows `running` again. */
  working(): void;
}

/** What a part's `start` is given: its round reports, and the abort of this start. */
export interface PartRun extends RoundReports {
  /** Aborted when the part is stood by or stopped while this start runs. */
  signal: AbortSignal;
}

/** A part the supervisor starts and stops. */
export interface PartDefinition {
  /** Its name: `/readyz` `parts` key and the metric's `part` label. */
  name: string;
  /** The daemon is not ready while a required part is starting, retrying or stopped. Default true. */
  required?: boolean;
  /**
   * Starts the part. Throws when it cannot: it is tried again after a backoff, so a start that
   * throws must leave nothing running.
   */
  start(run: PartRun): Promise<void>;
  /** Stops the started part. Called once per successful start. */
  stop(): Promise<void>;
}

/** Construction options of a PartSupervisor. */
export interface PartSupervisorOptions {
  /** The first wait after a failed start, ms. Default 1000. */
  minDelayMs?: number;
  /** The longest wait between two attempts, ms. Default 30000. */
  maxDelayMs?: number;
  /** Secrets masked out of the errors shown (the configured tokens, webhook secrets, sink URLs' passwords). */
  secrets?: readonly string[];
  logger?: Logger;
}

/** One part's bookkeeping. */
interface Supervised {
  definition: PartDefinition;
  status: PartStatus;
  /** True between a successful start and its stop. */
  started: boolean;
  /** The latest round's failure reported through `PartRun.failing`, or null. */
  roundFailure: { error: string; failures: number } | null;
  /** Aborts the start in progress (its backoff's wait). */
  attempt: AbortController | undefined;
  /** The part's operations, one after another. */
  queue: Promise<void>;
}

/** Starts, retries, stands by and stops the daemon's parts; see the module comment. */
export class PartSupervisor {
  readonly #parts = new Map<string, Supervised>();
  readonly #minDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #secrets: readonly string[];
  readonly #logger: Logger;
  #stopping: Promise<void> | undefined;

  /** @throws RangeError when a delay is not a positive number or `minDelayMs` exceeds `maxDelayMs` */
  constructor(options: PartSupervisorOptions = {}) {
    this.#minDelayMs = options.minDelayMs ?? 1000;
    this.#maxDelayMs = options.maxDelayMs ?? 30_000;
    if (!(this.#minDelayMs > 0) || !(this.#maxDelayMs >= this.#minDelayMs)) {
      throw new RangeError(`part retry delays must be positive ms with minDelayMs <= maxDelayMs, got ${this.#minDelayMs} and ${this.#maxDelayMs}`);
    }
    this.#secrets = options.secrets ?? [];
    this.#logger = (options.logger ?? silentLogger).child({ component: 'parts' });
  }

  /**
   * Registers a part, `starting` (with `waiting`: what it waits for before `start` is called).
   * @throws Error when a part of that name was added already
   */
  add(definition: PartDefinition, waiting?: string): void {
    if (this.#parts.has(definition.name)) throw new Error(`part ${definition.name} was added twice`);
    this.#parts.set(definition.name, {
      definition,
      status: { part: definition.name, state: 'starting', required: definition.required ?? true, since: new Date().toISOString(), ...(waiting ? { reason: waiting } : {}) },
      started: false,
      roundFailure: null,
      attempt: undefined,
      queue: Promise.resolve(),
    });
  }

  /**
   * Starts part `name` (after its earlier operations), retrying until it starts. Resolves once its
   * first attempt is over, started or not (retries go on in the background). A running part is left
   * as it is; after `stopAll`, nothing starts.
   * @throws Error when no part `name` was added
   */
  start(name: string): Promise<void> {
    const part = this.#part(name);
    if (this.#stopping) return Promise.resolve();
    part.attempt?.abort();
    const attempt = new AbortController();
    part.attempt = attempt;
    let firstAttemptOver!: () => void;
    const firstAttempt = new Promise<void>((resolve) => (firstAttemptOver = resolve));
    part.queue = part.queue.then(async () => {
      if (attempt.signal.aborted || part.started) {
        firstAttemptOver();
        return;
      }
      try {
        await pRetry(() => this.#startOnce(part, attempt.signal), {
          retries: Number.POSITIVE_INFINITY,
          factor: 2,
          minTimeout: this.#minDelayMs,
          maxTimeout: this.#maxDelayMs,
          randomize: true,
          signal: attempt.signal,
          onFailedAttempt: ({ error, attemptNumber, retryDelay }) => {
            const shown = this.#short(error);
            this.#set(part, { state: 'retrying', error: shown, failures: attemptNumber });
            this.#logger.warn({ part: name, attempt: attemptNumber, delayMs: retryDelay, err: { message: this.#masked(error) } }, `part ${name} did not start: trying again`);
            firstAttemptOver();
          },
        });
      } catch {
        // Aborted: stood by or stopped meanwhile (the step queued behind this one sets the state).
      } finally {
        if (part.attempt === attempt) part.attempt = undefined;
        firstAttemptOver();
      }
    });
    return firstAttempt;
  }

  /**
   * Stands part `name` by (a replica holds its lease): a start in progress is given up, a started
   * part stopped. Resolves when it is.
   * @throws Error when no part `name` was added
   */
  standBy(name: string, reason: string): Promise<void> {
    const part = this.#part(name);
    if (this.#stopping) return Promise.resolve();
    part.attempt?.abort();
    return this.#enqueue(part, async () => {
      await this.#stopStarted(part);
      this.#set(part, { state: 'standby', reason });
    });
  }

  /**
   * Stops every part once, the last added first: starts in progress are given up, started parts
   * stopped (a stop that throws is logged). Safe to call twice; nothing starts afterwards.
   */
  stopAll(): Promise<void> {
    this.#stopping ??= (async () => {
      for (const part of this.#parts.values()) part.attempt?.abort();
      for (const part of [...this.#parts.values()].reverse()) {
        await this.#enqueue(part, async () => {
          await this.#stopStarted(part);
          this.#set(part, { state: 'stopped' });
        });
      }
    })();
    return this.#stopping;
  }

  /** Every part's state, in the order added. */
  statuses(): PartStatus[] {
    return [...this.#parts.values()].map((part) => ({ ...part.status }));
  }

  /**
   * The round reports of part `name` (module comment), for work built before the part is added:
   * each report goes to the part's latest start (ignored while it is not started).
   * @throws Error (at the first report) when no part `name` was added by then
   */
  rounds(name: string): RoundReports {
    return {
      failing: (error) => this.#failing(this.#part(name), error),
      working: () => this.#working(this.#part(name)),
    };
  }

  /** Part `name`'s state, or undefined when no such part was added. */
  status(name: string): PartStatus | undefined {
    const part = this.#parts.get(name);
    return part ? { ...part.status } : undefined;
  }

  async #startOnce(part: Supervised, signal: AbortSignal): Promise<void> {
    part.roundFailure = null;
    const run: PartRun = {
      signal,
      failing: (error) => this.#failing(part, error),
      working: () => this.#working(part),
    };
    try {
      await part.definition.start(run);
    } catch (error) {
      // p-retry gives up at once on a TypeError (a programming error, it assumes); a part's start is tried again all the same.
      throw error instanceof TypeError ? new Error(error.message, { cause: error }) : error;
    }
    part.started = true;
    const failedBefore = part.status.state === 'retrying' ? part.status.failures : undefined;
    // A round may have failed during the start (the lease keeper's first round runs inside it).
    const roundFailure = part.roundFailure as Supervised['roundFailure'];
    this.#set(part, roundFailure ? { state: 'retrying', ...roundFailure } : { state: 'running' });
    if (failedBefore !== undefined) this.#logger.info({ part: part.definition.name, failures: failedBefore }, `part ${part.definition.name} started after ${failedBefore} failed attempts`);
  }

  #failing(part: Supervised, error: unknown): void {
    if (this.#stopping) return;
    const failures = (part.roundFailure?.failures ?? 0) + 1;
    part.roundFailure = { error: this.#short(error), failures };
    if (part.started) this.#set(part, { state: 'retrying', ...part.roundFailure });
  }

  #working(part: Supervised): void {
    if (!part.roundFailure) return;
    part.roundFailure = null;
    if (part.started && !this.#stopping) {
      this.#set(part, { state: 'running' });
      this.#logger.info({ part: part.definition.name }, `part ${part.definition.name} runs again`);
    }
  }

  async #stopStarted(part: Supervised): Promise<void> {
    if (!part.started) return;
    part.started = false;
    part.roundFailure = null;
    try {
      await part.definition.stop();
    } catch (error) {
      this.#logger.error({ part: part.definition.name, err: { message: this.#masked(error) } }, `part ${part.definition.name} did not stop cleanly`);
    }
  }

  #set(part: Supervised, next: Omit<PartStatus, 'part' | 'required' | 'since'>): void {
    const previous = part.status;
    // `since` moves with the state, not with each failed attempt.
    const since = previous.state === next.state ? previous.since : new Date().toISOString();
    const { state, ...details } = withoutUndefined(next);
    part.status = { part: previous.part, state, required: previous.required, since, ...details };
  }

  #enqueue(part: Supervised, step: () => Promise<void>): Promise<void> {
    part.queue = part.queue.then(step).catch((error: unknown) => this.#logger.error({ part: part.definition.name, err: { message: this.#masked(error) } }, `part ${part.definition.name}: a step failed`));
    return part.queue;
  }

  #part(name: string): Supervised {
    const part = this.#parts.get(name);
    if (!part) throw new Error(`no part named ${name}; parts: ${[...this.#parts.keys()].join(', ')}`);
    return part;
  }

  #masked(error: unknown): string {
    return maskSecrets(error instanceof Error ? error.message : String(error), this.#secrets);
  }

  #short(error: unknown): string {
    return shortError(this.#masked(error)).short;
  }
}

/** `status` without its undefined fields (so that JSON and equality checks see only what is set). */
function withoutUndefined<T extends object>(status: T): T {
  return Object.fromEntries(Object.entries(status).filter(([, value]) => value !== undefined)) as T;
}

/** True when a part in this state does what it should here: it runs, or stands by for a replica. */
export function partIsUp(state: PartState): boolean {
  return state === 'running' || state === 'standby';
}

/**
 * `verdict` with the daemon's `parts` (by name), not ready while a required part is starting,
 * retrying or stopped: its reason then names each such part with its state and last error
 * (`not every part runs: leases retrying (stream:deals: the mirror file is locked by another process: …)`), after the API's
 * reason when that was not ready either.
 */
export function partsReadiness<Verdict extends { ready: boolean; reason: string }>(verdict: Verdict, parts: readonly PartStatus[]): Verdict & { parts: Record<string, PartStatus> } {
  const withParts = { ...verdict, parts: Object.fromEntries(parts.map((status) => [status.part, status] as const)) };
  const down = parts.filter((status) => status.required && !partIsUp(status.state));
  if (down.length === 0) return withParts;
  const named = down.map((status) => `${status.part} ${status.state}${status.error ? ` (${status.error})` : status.reason ? ` (${status.reason})` : ''}`).join(', ');
  return { ...withParts, ready: false, reason: verdict.ready ? `not every part runs: ${named}` : `${verdict.reason}; not every part runs: ${named}` };
}
