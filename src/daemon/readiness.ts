/**
 * Readiness (`GET /readyz`): the daemon is ready when the API is reachable and accepts its token
 * (spec §5: a refused token answers 401 or 403).
 *
 * It costs no API request while the runs talk to the API: `ApiAnswers`, a layer of the connection's
 * sync client (and of the probe's client), keeps the last answer the API gave a request made with
 * the `default` token (its status and when), or that none came; a verdict is read from it while it
 * is younger than `learnedMaxAgeMs` (15 min: longer than a stream rested by adaptive polling waits,
 * 4 ticks of 30 s by default, 16 when configured so). Only when the runs learned nothing that recent (at start, on a replica standing
 * by, or with every stream rested longer) is a probe sent: one list request with `limit=1` (spec §1
 * Pagination), cached and run at most once per `cacheMs`, whose answer is learned in turn.
 *
 * The probe never waits for a rate-budget slot (a backfill using the whole limit is not
 * "unready"): it reads the budget's pause without waiting (`RateBudget.peek`); while the
 * budget is paused by a 429 it sends nothing and reports READY with
 * the wait (`budget.waitMs`); otherwise it sends its one request outside the budget's slots (its
 * answer's rate-limit headers still feed the budget) and a 429 is ready too, with its Retry-After.
 * A verdict read from the runs' answers carries the budget's wait the same way.
 */
import { z } from 'zod';
import type { ApiClient } from '../client/client.ts';
import type { RequestHooks } from '../client/hooks.ts';
import type { BudgetPeek, RateBudget, RateSlot } from '../client/rate-budget.ts';
import type { MirrorStore } from '../mirror/mirror-store.ts';
import type { StreamName } from '../streams/definitions.ts';
import type { PartStatus } from './part-supervisor.ts';
import {
  BizopsApiError,
  ConnectionError,
  InvalidResponseError,
  RateLimitError,
} from '../client/api-errors.ts';

/** What `/readyz` answers (as JSON), 200 when `ready`, else 503. */
export interface ReadinessVerdict {
  ready: boolean;
  /** One sentence: why (not) ready. */
  reason: string;
  /** The probe's HTTP status; null when no answer arrived or no probe ran yet. */
  status: number | null;
  /** When the probe that gave this verdict ended (ISO 8601); null before the first probe. */
  checkedAt: string | null;
  /** Present when the rate budget is paused or spent, or the probe was answered 429: how long before requests go out again, ms. */
  budget?: { waitMs: number };
  /**
   * The daemon's: the leases it holds (`stream:<stream>`, `webhooks`); the others are a replica's
   * (docs/operations.md "Running two daemons (replicas)"). A daemon holding none is ready: it stands by.
   */
  leases?: string[];
  /**
   * The daemon's: the leases it released to a one-off run waiting for them (`--wait`, docs/operations.md
   * "A one-off run beside the daemon (--wait)"), each with the waiter's holder name; absent when none.
   * Ready all the same: the daemon takes each back once the waiter's request is gone.
   */
  yielded?: { lease: string; waiter: string }[];
  /**
   * The daemon's: the streams marked unsupported (their list answered 404 while the other lists
   * answered, docs/sync.md "Deals"). Ready all the same: the server has no such list, and the
   * stream's records arrive from write responses only; each is asked again at the daemon's start and
   * by a sync every `sync.unsupportedProbeSeconds`.
   */
  unsupported?: string[];
  /**
   * The daemon's: the partitions whose own condition is `failing` (`<stream>/<partition>`, a location
   * whose list keeps failing while the others answer: docs/operations.md "Operational events"). Ready
   * all the same: the other partitions and streams run.
   */
  failingPartitions?: string[];
  /**
   * The daemon's: each part's state by name (part-supervisor.ts `PartStatus`: `leases`, `webhooks`,
   * `scheduler`, `writes`, ...). Not ready while a required part is starting, retrying or stopped
   * (`partsReadiness`).
   */
  parts?: Record<string, PartStatus>;
  /**
   * The daemon process answering (`/readyz` of a daemon only, at the top level): its id in the
   * mirror's `daemons` and `leases` rows (`instance`, its lease holder name), its pid, when it
   * started (ISO 8601), and each connection's mirror as `mirrorKey` (src/status/daemon-parts.ts), so
   * that `status` can tell a daemon serving its mirror from another process on the same port.
   */
  daemon?: DaemonIdentity;
}

/** Which daemon process answers `/readyz` (`ReadinessVerdict.daemon`). */
export interface DaemonIdentity {
  instance: string;
  pid: number;
  startedAt: string;
  /** Each connection's mirror key, by connection name. */
  mirrors: Record<string, string>;
}

/**
 * One probe: resolves when the API accepted it, or with `budgetWaitMs` (ms) and `sent` false when it
 * was not sent because a 429 paused the rate budget, or `sent` true when it was answered while the
 * budget is spent by other requests (the wait until it grants again); throws the client's typed
 * error otherwise.
 */
export type ReadinessCheck = (signal: AbortSignal) => Promise<void | { budgetWaitMs: number; sent: boolean }>;

/** Construction options of a ReadinessProbe: the probe and how long its verdict is cached (ms). */
export interface ReadinessProbeOptions {
  check: ReadinessCheck;
  /** A verdict is reused this long, ms (config `http.readinessCacheSeconds` × 1000). */
  cacheMs: number;
  /** How long one probe may take before it counts as unreachable, ms. Default 5000. */
  timeoutMs?: number;
  /** The answers the connection's requests got: a verdict is read from them while they are recent, no probe sent. */
  answers?: ApiAnswers;
  /** An answer is recent this long, ms. Default `LEARNED_MAX_AGE_MS` (15 min). */
  learnedMaxAgeMs?: number;
  /** The budget the daemon's requests spend: a verdict read from the answers carries its pause or spent wait (`peek`, never a wait). */
  budget?: Pick<RateBudget, 'peek'>;
}

/** How long the last answer of the runs stands for the API's, ms: longer than a rested stream's interval (4 ticks of 30 s by default; 16 ticks configured). */
export const LEARNED_MAX_AGE_MS = 15 * 60_000;

/** The last answer the API gave (or the lack of one), as `ApiAnswers` keeps it. */
export interface LearnedAnswer {
  /** When it arrived (or the request failed), epoch ms. */
  atMs: number;
  /** Its HTTP status; null when no answer came. */
  status: number | null;
  /** The failure when no answer came (a transport error: refused, reset, timed out). */
  error?: ConnectionError;
}

/**
 * The last answer the API gave any request of the clients this layer is part of, made with the
 * `default` token (module comment): `hooks()` is a client layer (hooks.ts). A request aborted by its
 * caller, or stopped before it left by another layer (a lease check, a budget wait), teaches nothing.
 */
export class ApiAnswers {
  #last: LearnedAnswer | undefined;

  /** The last answer, or undefined before any. */
  get last(): LearnedAnswer | undefined {
    return this.#last;
  }

  /** The client layer that records each answer (and each transport failure). */
  hooks(): RequestHooks {
    return {
      afterResponse: (context, response) => {
        if (context.token === 'default') this.#last = { atMs: Date.now(), status: response.status };
      },
      onNoResponse: (context, { error }) => {
        if (context.token !== 'default' || !(error instanceof ConnectionError) || error.code === 'ABORTED') return;
        this.#last = { atMs: Date.now(), status: null, error };
      },
    };
  }
}

/**
 * What one answer of the API says of readiness: the rule shared by the runs' last answer and the
 * probe's. No answer: the API unreachable; a 401/403: the token refused (or lacking the scope); a
 * 5xx: the API failing; anything else, the API there with the token accepted: a 2xx, a 3xx, a 404
 * (a missing record or list, e.g. GET /deals, docs/sync.md "Deals": the token still passed), a
 * 400/409/422 (a refused request) and a 429 (spec §7: the server is there and only asks us to slow
 * down).
 * @param status the answer's HTTP status; null when none came
 * @param detail what follows the rule's words: the error's message (`: ...`) or where the answer came from (` (...)`)
 */
function answerVerdict(status: number | null, detail: string): Pick<ReadinessVerdict, 'ready' | 'reason'> {
  if (status === null) return { ready: false, reason: `the API is unreachable${detail}` };
  if (status === 401 || status === 403) return { ready: false, reason: `the API refused the token (HTTP ${status})${detail}` };
  if (status >= 500) return { ready: false, reason: `the API is failing (HTTP ${status})${detail}` };
  if (status === 429) return { ready: true, reason: `the API answered 429: reachable, token accepted, rate limited for now${detail}` };
  return { ready: true, reason: `the API answered (HTTP ${status}) and accepted the token${detail}` };
}

/**
 * The verdict of the runs' last answer (`answerVerdict`), carrying the budget's pause or spent wait
 * as `budget.waitMs` (a 429 always has one). `checkedAt` is the answer's time.
 */
function learnedVerdict(answer: LearnedAnswer, peek: BudgetPeek | undefined): ReadinessVerdict {
  const status = answer.status;
  const pausedMs = peek ? pausedWaitMs(peek) : 0;
  const spentMs = peek && peek.available <= 0 ? Math.max(0, peek.nextSlotAtMs - Date.now()) : 0;
  const waitMs = Math.max(pausedMs, spentMs);
  const budget = waitMs > 0 || status === 429 ? { budget: { waitMs } } : {};
  const source = ` (the daemon's last request, ${Math.round((Date.now() - answer.atMs) / 1000)} s ago)`;
  const verdict = answerVerdict(status, status === null ? `: ${answer.error?.message ?? 'no answer'}${source}` : source);
  const paused = !verdict.ready || status === 429 ? '' : pausedMs > 0 ? `; the rate budget is paused for ${pausedMs} ms` : spentMs > 0 ? `; the rate budget is spent by other requests for ${spentMs} ms` : '';
  return { ...verdict, reason: `${verdict.reason}${paused}`, status, checkedAt: new Date(answer.atMs).toISOString(), ...(verdict.ready ? budget : {}) };
}

/**
 * Turns a probe's outcome into a verdict: an answer by `answerVerdict` (a success is a 200, an API
 * error its status, a transport failure no answer). Not sent because the budget is paused: ready,
 * with the wait. An answer that is not the API's envelope, or a failure of the probe itself: not ready.
 */
function verdictFor(outcome: unknown, now: Date = new Date()): ReadinessVerdict {
  const checkedAt = now.toISOString();
  if (outcome === undefined) return { ...answerVerdict(200, ''), status: 200, checkedAt };
  if (outcome instanceof BudgetPaused) {
    return { ready: true, reason: `the rate budget is paused for ${outcome.waitMs} ms (a 429 or a spent window): not probed, requests resume after the wait`, status: null, checkedAt, budget: { waitMs: outcome.waitMs } };
  }
  if (outcome instanceof InvalidResponseError) return { ready: false, reason: `the API's answer is not valid: ${outcome.message}`, status: outcome.status ?? null, checkedAt };
  if (outcome instanceof ConnectionError) return { ...answerVerdict(null, `: ${outcome.message}`), status: null, checkedAt };
  if (outcome instanceof BizopsApiError && outcome.status !== undefined) {
    const status = outcome.status;
    const verdict = { ...answerVerdict(status, `: ${outcome.message}`), status, checkedAt };
    if (!(outcome instanceof RateLimitError)) return verdict;
    return { ...verdict, budget: { waitMs: outcome.retryAfter !== undefined && outcome.retryAfter > 0 ? Math.round(outcome.retryAfter * 1000) : 0 } };
  }
  const message = outcome instanceof Error ? outcome.message : String(outcome);
  return { ready: false, reason: `the readiness probe failed: ${message}`, status: null, checkedAt };
}

/** The probe was not sent: the rate budget is paused for `waitMs`. */
class BudgetPaused {
  readonly waitMs: number;
  constructor(waitMs: number) {
    this.waitMs = waitMs;
  }
}

/**
 * The probe `GET <path>?limit=1` through `client`. Give it a client without retries
 * (`retry: { maxRetries: 0, maxRateLimitRetries: 0 }`) whose budget never waits (`probeBudget`): a
 * probe reports what the API says now, it does not wait for it to get better.
 * @param budget the budget the daemon's requests spend: when `peek` says it is paused or spent, the
 *   probe sends nothing and resolves with the wait
 */
export function apiReadinessCheck(client: ApiClient, path: string, budget?: Pick<RateBudget, 'peek'>): ReadinessCheck {
  return async (signal) => {
    const peek = budget ? await budget.peek() : undefined;
    const pausedMs = peek ? pausedWaitMs(peek) : 0;
    if (pausedMs > 0) return { budgetWaitMs: pausedMs, sent: false };
    await client.request({ method: 'GET', path, query: { limit: 1 }, contentSchema: z.unknown(), priority: 'incremental', retry: 'none', signal });
    const spentMs = peek && peek.available <= 0 ? Math.max(0, peek.nextSlotAtMs - Date.now()) : 0;
    return spentMs > 0 ? { budgetWaitMs: spentMs, sent: true } : undefined;
  };
}

/**
 * How long a 429's pause keeps everyone sharing the budget silent, ms (0 when not paused). A budget
 * merely spent by other requests is not a reason to skip the probe: it goes out beside the slots.
 */
function pausedWaitMs(peek: BudgetPeek): number {
  return peek.pausedUntilMs === undefined ? 0 : Math.max(0, peek.pausedUntilMs - Date.now());
}

/** The slot the readiness probe's requests carry: never taken from the budget. */
const PROBE_SLOT: RateSlot = { id: 'readiness-probe', priority: 'incremental' };

/**
 * The readiness probe's budget: `acquire` grants at once (no slot taken, never a wait); what the
 * probe's answer says (rate-limit headers, a 429's pause) still reaches `budget`.
 */
export function probeBudget(budget: RateBudget): RateBudget {
  return {
    acquire: () => Promise.resolve(PROBE_SLOT),
    observe: (observation) => budget.observe(observation),
    release: () => {},
    pauseUntil: (untilMs) => budget.pauseUntil(untilMs),
    peek: () => budget.peek(),
    stats: () => ({ granted: { write: 0, incremental: 0, backfill: 0 }, waitedMs: 0, pauses: 0 }),
  };
}

/** Caches readiness verdicts; one probe at a time. */
export class ReadinessProbe {
  readonly #check: ReadinessCheck;
  readonly #cacheMs: number;
  readonly #timeoutMs: number;
  readonly #answers: ApiAnswers | undefined;
  readonly #learnedMaxAgeMs: number;
  readonly #budget: Pick<RateBudget, 'peek'> | undefined;
  #verdict: ReadinessVerdict = { ready: false, reason: 'the API has not been probed yet', status: null, checkedAt: null };
  #verdictAtMs = Number.NEGATIVE_INFINITY;
  #inFlight: Promise<ReadinessVerdict> | null = null;

  /** @throws RangeError when `cacheMs` or `timeoutMs` is not a positive number */
  constructor(options: ReadinessProbeOptions) {
    if (!(options.cacheMs > 0)) throw new RangeError(`readiness cacheMs must be a positive number of ms, got ${String(options.cacheMs)}`);
    const timeoutMs = options.timeoutMs ?? 5000;
    if (!(timeoutMs > 0)) throw new RangeError(`readiness timeoutMs must be a positive number of ms, got ${String(timeoutMs)}`);
    this.#check = options.check;
    this.#cacheMs = options.cacheMs;
    this.#timeoutMs = timeoutMs;
    this.#answers = options.answers;
    this.#learnedMaxAgeMs = options.learnedMaxAgeMs ?? LEARNED_MAX_AGE_MS;
    this.#budget = options.budget;
  }

  /** The last verdict, without probing. */
  get last(): ReadinessVerdict {
    return this.#verdict;
  }

  /**
   * The verdict of the last answer the runs got while it is younger than `learnedMaxAgeMs` (no
   * request sent); else the cached probe's verdict while it is younger than `cacheMs`; otherwise
   * probes (joining a probe already in flight) and returns the fresh verdict. Never throws.
   */
  async current(): Promise<ReadinessVerdict> {
    const learned = this.#answers?.last;
    if (learned && Date.now() - learned.atMs < this.#learnedMaxAgeMs) {
      const peek = this.#budget ? await this.#budget.peek().catch(() => undefined) : undefined;
      this.#verdict = learnedVerdict(learned, peek);
      return this.#verdict;
    }
    if (performance.now() - this.#verdictAtMs < this.#cacheMs) return this.#verdict;
    this.#inFlight ??= this.#probe().finally(() => {
      this.#inFlight = null;
    });
    return this.#inFlight;
  }

  async #probe(): Promise<ReadinessVerdict> {
    let outcome: unknown;
    let spentWaitMs: number | undefined;
    const signal = AbortSignal.timeout(this.#timeoutMs);
    try {
      const result = await this.#check(signal);
      if (result && !result.sent) outcome = new BudgetPaused(result.budgetWaitMs);
      else if (result) spentWaitMs = result.budgetWaitMs;
    } catch (error) {
      outcome = signal.aborted ? new ConnectionError({ message: `no answer within ${this.#timeoutMs} ms`, code: 'TIMEOUT', requestSent: true }) : (error ?? new Error('the probe failed'));
    }
    this.#verdict = verdictFor(outcome);
    if (spentWaitMs !== undefined && this.#verdict.ready && !this.#verdict.budget) {
      this.#verdict = { ...this.#verdict, reason: `${this.#verdict.reason}; the rate budget is spent by other requests for ${spentWaitMs} ms`, budget: { waitMs: spentWaitMs } };
    }
    this.#verdictAtMs = performance.now();
    return this.#verdict;
  }
}

/** `/readyz` of a deployment: the combined verdict and each connection's own. */
export interface DeploymentReadinessVerdict extends ReadinessVerdict {
  /** Each connection's verdict, by connection name. */
  connections: Record<string, ReadinessVerdict>;
}

/**
 * Combines the verdicts of every connection (docs/operations.md "Many companies"): ready when every
 * connection is. With one connection its verdict is the whole answer (plus `connections`); with
 * several, `reason` names the connections that are not ready, `status` is null, `checkedAt` the
 * oldest check, `budget` the longest wait, `unsupported` every connection's as `<connection>/<stream>`,
 * `failingPartitions` as `<connection>/<stream>/<partition>` and `parts` as `<connection>/<part>`.
 */
export function combineReadiness(verdicts: Record<string, ReadinessVerdict>): DeploymentReadinessVerdict {
  const entries = Object.entries(verdicts);
  if (entries.length === 1) return { ...entries[0]![1], connections: verdicts };
  const notReady = entries.filter(([, verdict]) => !verdict.ready);
  const checked = entries.map(([, verdict]) => verdict.checkedAt);
  const waits = entries.flatMap(([, verdict]) => (verdict.budget ? [verdict.budget.waitMs] : []));
  return {
    ready: notReady.length === 0,
    reason:
      notReady.length === 0
        ? `all ${entries.length} connections are ready`
        : `not ready: ${notReady.map(([name, verdict]) => `${name} (${verdict.reason})`).join('; ')}`,
    status: null,
    checkedAt: checked.includes(null) ? null : (checked as string[]).sort()[0]!,
    unsupported: entries.flatMap(([name, verdict]) => (verdict.unsupported ?? []).map((stream) => `${name}/${stream}`)),
    failingPartitions: entries.flatMap(([name, verdict]) => (verdict.failingPartitions ?? []).map((partition) => `${name}/${partition}`)),
    parts: Object.fromEntries(entries.flatMap(([name, verdict]) => Object.entries(verdict.parts ?? {}).map(([part, status]) => [`${name}/${part}`, status] as const))),
    ...(waits.length > 0 ? { budget: { waitMs: Math.max(...waits) } } : {}),
    connections: verdicts,
  };
}

/**
 * The streams of `streams` the mirror marks unsupported (`sync_state.supported` 0), for `/readyz`.
 * @throws the driver's error when the mirror cannot be read
 */
export async function unsupportedStreams(store: Pick<MirrorStore, 'readSyncState'>, streams: readonly StreamName[]): Promise<StreamName[]> {
  const unsupported: StreamName[] = [];
  for (const stream of streams) if (!(await store.readSyncState(stream)).supported) unsupported.push(stream);
  return unsupported;
}

/**
 * The partitions of `streams` whose own condition is `failing` (`stream_conditions`), as
 * `<stream>/<partition>`, for `/readyz`.
 * @throws the driver's error when the mirror cannot be read
 */
export async function failingPartitions(conditions: { listPartitions(stream: StreamName): Promise<{ partition: string; condition: string }[]> }, streams: readonly StreamName[]): Promise<string[]> {
  const failing: string[] = [];
  for (const stream of streams) for (const { partition, condition } of await conditions.listPartitions(stream)) if (condition === 'failing') failing.push(`${stream}/${partition}`);
  return failing;
}
