/**
 * `RedisRateBudget`: the rate budget (docs/rate-budget.md, spec §8) shared by EVERY process of
 * a deployment (daemon, `worker` processes, one-off backfills), kept in Redis.
 *
 * - Sliding-window log: a sorted set of grant times (Redis server clock, ms). A slot is granted only
 *   while fewer than `limit` grants lie within the last `windowMs + safetyMarginMs`, so the total of
 *   all processes never exceeds the limit in ANY window. (A fixed-window counter, as most rate-limit
 *   libraries keep, allows twice the limit across a window boundary; BullMQ's own limiter is such a
 *   counter and covers only its queue; rate-limiter-flexible's Redis limiters are fixed windows too
 *   and know no priorities. Hence this small Lua script.)
 * - Pauses: a 429's `Retry-After` (`pauseUntil`) and a spent server window (`observe` with
 *   `remaining: 0`) are stored in Redis, so every process waits, not only the one that saw them.
 * - Priority across processes: a waiter announces its demand in a per-priority sorted set (member =
 *   waiter, score = expiry; renewed at every poll, so a dead process's demand vanishes within
 *   `demandTtlMs`). A slot goes to a lower priority only when no higher priority demand is waiting:
 *   writes, then incremental polls, then backfill/reconciliation. A write that arrives during a
 *   backfill takes the next free slot (or the one after, if a backfill grant raced it). Within a
 *   priority, a retry's demand ranks above first attempts (its own sorted set), so a retry goes to
 *   the head of its priority's queue.
 * - Every decision is one atomic Lua script using Redis's own clock (`TIME`), so the processes' clocks
 *   do not need to agree; durations are converted to Redis time inside the script.
 *
 * Keys (one budget = one hash tag, so the keys live in one Redis Cluster slot):
 *   {prefix}:{key}:log       grants (sorted set: score = grant time ms, member = unique grant id)
 *   {prefix}:{key}:pause     no grant before this Redis time, ms
 *   {prefix}:{key}:limit     a lower limit announced by the server (`X-RateLimit-Limit`)
 *   {prefix}:{key}:demand:{priority}         waiting first attempts
 *   {prefix}:{key}:demand:{priority}:retry   waiting retries (rank above the first attempts of their priority)
 *
 *   const budget = new RedisRateBudget({ redis: 'redis://127.0.0.1:6379', key: rateBudgetKey(config), limit: 60 });
 *   await budget.acquire('write');
 */
import { createHash, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { PRIORITIES, type AcquireOptions, type Priority, type RateBudget, type RateBudgetStats, type RateLimitObservation } from './rate-budget.ts';

/** Construction options of a RedisRateBudget: the Redis connection, the budget key, `limit` per `windowMs` ms, and polling (ms). */
export interface RedisRateBudgetOptions {
  /** An ioredis client (shared: not closed by `close`) or a `redis://` URL (a connection the budget owns). */
  redis: Redis | string;
  /** The budget's key: one per company (`company:<id>`) or per token (see `rateBudgetKey`). */
  key: string;
  /** Requests per window (spec §8: 60 per minute by default). Positive integer. */
  limit: number;
  /** Window length, ms. Default 60000; tests scale it down. */
  windowMs?: number;
  /**
   * Added to the window to absorb network latency between a grant and the server's count, ms.
   * Default (as LocalRateBudget): 2% of the window, at least 50 ms and at most 250 ms.
   */
  safetyMarginMs?: number;
  /** Key prefix. Default `bizops:rate`. Tests use their own. */
  prefix?: string;
  /** A waiter's demand expires this long after its last poll, ms. Default 3000. */
  demandTtlMs?: number;
  /** Longest sleep between two polls of a waiter, ms. Default 1000. */
  maxPollMs?: number;
}

/** `stats()` of a RedisRateBudget: the contract's counters, for THIS process. */
export interface RedisRateBudgetStats extends RateBudgetStats {
  /** Calls waiting in `acquire` in this process, by priority. */
  waiting: Record<Priority, number>;
}

/**
 * The budget key for a configuration (docs/rate-budget.md): `company:<companyId>@<api host>`
 * by default; with `rateLimit.scope: 'token'`, `token:<sha256 of the token, 16 hex>@<api host>` (the
 * token itself never reaches Redis).
 * @param tokenName the token the budget is for, when the scope is `token`; default `default`
 * @throws Error when the scope is `token` and no such token is configured
 */
export function rateBudgetKey(
  config: { baseUrl: string; companyId: string; rateLimit: { scope: 'company' | 'token' }; tokens: Record<string, string> },
  tokenName = 'default',
): string {
  // The API's host is part of the key: one company on two deployments (staging, production) has two budgets.
  const api = new URL(config.baseUrl).host;
  if (config.rateLimit.scope === 'company') return `company:${config.companyId}@${api}`;
  const token = Object.hasOwn(config.tokens, tokenName) ? config.tokens[tokenName] : undefined;
  if (token === undefined) throw new Error(`rateBudgetKey: no token named "${tokenName}" is configured`);
  return `token:${createHash('sha256').update(token).digest('hex').slice(0, 16)}@${api}`;
}

/**
 * KEYS: log, pause, limit, then the demand sets by rank: write:retry, write, incremental:retry,
 *   incremental, backfill:retry, backfill
 * ARGV: limit, effective window ms, rank (1 = a write's retry), waiter id, demand ttl ms, grant id
 * Returns { granted (1|0), wait ms (hint), redis now ms }.
 */
const ACQUIRE_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local rank = tonumber(ARGV[3])
local waiter = ARGV[4]
local ttl = tonumber(ARGV[5])
local own = KEYS[3 + rank]

local serverLimit = tonumber(redis.call('GET', KEYS[3]) or '0')
if serverLimit > 0 and serverLimit < limit then limit = serverLimit end

local function wait(ms)
  redis.call('ZADD', own, now + ttl, waiter)
  redis.call('PEXPIRE', own, ttl * 2)
  if ms < 1 then ms = 1 end
  return { 0, ms, now }
end

local pausedUntil = tonumber(redis.call('GET', KEYS[2]) or '0')
if pausedUntil > now then return wait(pausedUntil - now) end

-- Grants older than the window no longer count.
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. (now - window))
local count = redis.call('ZCARD', KEYS[1])
if count >= limit then
  -- The grant whose expiry frees the next slot.
  local oldest = redis.call('ZRANGE', KEYS[1], count - limit, count - limit, 'WITHSCORES')
  return wait(tonumber(oldest[2]) + window + 1 - now)
end

for r = 1, rank - 1 do
  local key = KEYS[3 + r]
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  if redis.call('ZCARD', key) > 0 then return wait(5) end
end

redis.call('ZADD', KEYS[1], now, ARGV[6])
redis.call('PEXPIRE', KEYS[1], window + 1000)
redis.call('ZREM', own, waiter)
return { 1, 0, now }
`;

/** KEYS: pause. ARGV: duration ms. Extends (never shortens) the pause to Redis now + duration. */
const PAUSE_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local untilMs = now + tonumber(ARGV[1])
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if untilMs > current then
  redis.call('SET', KEYS[1], untilMs, 'PX', tonumber(ARGV[1]) + 1000)
  return untilMs
end
return current
`;

/** KEYS: demand key. ARGV: waiter. */
const WITHDRAW_SCRIPT = `return redis.call('ZREM', KEYS[1], ARGV[1])`;

type BudgetRedis = Redis & {
  bizopsRateAcquire(...args: (string | number)[]): Promise<[number, number, number]>;
  bizopsRatePause(...args: (string | number)[]): Promise<number>;
  bizopsRateWithdraw(...args: (string | number)[]): Promise<number>;
};

/** Clock samples kept for the server-clock estimate (see `observe`). */
const CLOCK_SAMPLES_KEPT = 64;

function positiveInteger(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
    throw new RangeError(`RedisRateBudget option ${field} must be a positive integer, got ${String(value)}`);
  }
  return value;
}

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('The operation was aborted', 'AbortError');
}

/** Sleeps `ms`, or rejects when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortError(signal));
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The rate budget shared through Redis by every process of a deployment (spec §8), as this module's header describes. */
export class RedisRateBudget implements RateBudget {
  readonly key: string;
  readonly limit: number;
  readonly windowMs: number;
  readonly safetyMarginMs: number;

  private readonly redis: BudgetRedis;
  private readonly ownsConnection: boolean;
  /** `demand` in rank order: each priority's retries, then its first attempts (see ACQUIRE_SCRIPT). */
  private readonly keys: { log: string; pause: string; limit: string; demand: string[] };
  private readonly demandTtlMs: number;
  private readonly maxPollMs: number;
  private readonly processId = randomUUID();
  private waiterSequence = 0;
  private readonly waiting: Record<Priority, number> = { write: 0, incremental: 0, backfill: 0 };
  private readonly counters: RateBudgetStats = { granted: { write: 0, incremental: 0, backfill: 0 }, waitedMs: 0, pauses: 0 };
  /** Samples of (server Date - our clock), ms. */
  private readonly clockSamples: number[] = [];
  private readonly closing = new AbortController();

  /** @throws RangeError when `limit`, `windowMs` or `safetyMarginMs` is not valid, or `key` is empty */
  constructor(options: RedisRateBudgetOptions) {
    if (typeof options.key !== 'string' || options.key === '') throw new RangeError('RedisRateBudget option key must be a non-empty string');
    this.key = options.key;
    this.limit = positiveInteger(options.limit, 'limit');
    this.windowMs = positiveInteger(options.windowMs ?? 60_000, 'windowMs');
    const margin = options.safetyMarginMs ?? Math.min(250, Math.max(50, Math.round(this.windowMs * 0.02)));
    if (!Number.isFinite(margin) || margin < 0) throw new RangeError(`RedisRateBudget option safetyMarginMs must be a number >= 0, got ${String(margin)}`);
    this.safetyMarginMs = margin;
    this.demandTtlMs = options.demandTtlMs ?? 3000;
    this.maxPollMs = options.maxPollMs ?? 1000;
    const base = `${options.prefix ?? 'bizops:rate'}:{${this.key}}`;
    this.keys = {
      log: `${base}:log`,
      pause: `${base}:pause`,
      limit: `${base}:limit`,
      demand: PRIORITIES.flatMap((priority) => [`${base}:demand:${priority}:retry`, `${base}:demand:${priority}`]),
    };
    this.ownsConnection = typeof options.redis === 'string';
    const client = typeof options.redis === 'string' ? new Redis(options.redis) : options.redis;
    // Failures surface through `acquire`; without a listener ioredis prints every reconnect error.
    if (typeof options.redis === 'string') client.on('error', () => undefined);
    client.defineCommand('bizopsRateAcquire', { numberOfKeys: 9, lua: ACQUIRE_SCRIPT });
    client.defineCommand('bizopsRatePause', { numberOfKeys: 1, lua: PAUSE_SCRIPT });
    client.defineCommand('bizopsRateWithdraw', { numberOfKeys: 1, lua: WITHDRAW_SCRIPT });
    this.redis = client as BudgetRedis;
  }

  /** The span no more than `limit` grants may share, ms. */
  get effectiveWindowMs(): number {
    return this.windowMs + this.safetyMarginMs;
  }

  /**
   * Waits until this process may send one request of `priority` without any process exceeding the
   * budget, then takes the slot. A retry (`options.retry`) ranks above every first attempt of its priority.
   * @throws the signal's reason when `signal` aborts; an Error when the budget is closed; Redis errors
   */
  async acquire(priority: Priority, signal?: AbortSignal, options: AcquireOptions = {}): Promise<void> {
    const index = PRIORITIES.indexOf(priority);
    if (index < 0) throw new TypeError(`priority must be one of ${PRIORITIES.join(', ')}, got ${String(priority)}`);
    const rank = index * 2 + (options.retry ? 1 : 2);
    const demandKey = this.keys.demand[rank - 1]!;
    if (this.closing.signal.aborted) throw new Error('rate budget is closed');
    const combined = signal ? AbortSignal.any([signal, this.closing.signal]) : this.closing.signal;
    const waiter = `${this.processId}:${++this.waiterSequence}`;
    const grantId = `${waiter}:${randomUUID()}`;
    const startedAt = Date.now();
    let announced = false;
    this.waiting[priority]++;
    try {
      for (;;) {
        if (combined.aborted) throw abortError(combined);
        const [granted, waitMs] = await this.redis.bizopsRateAcquire(
          this.keys.log,
          this.keys.pause,
          this.keys.limit,
          ...this.keys.demand,
          this.limit,
          this.effectiveWindowMs,
          rank,
          waiter,
          this.demandTtlMs,
          grantId,
        );
        if (granted === 1) {
          announced = false;
          this.counters.granted[priority]++;
          this.counters.waitedMs += Date.now() - startedAt;
          return;
        }
        announced = true;
        // A little jitter so that processes woken by the same expiry do not all ask in the same ms.
        await sleep(Math.min(this.maxPollMs, waitMs) + Math.floor(Math.random() * 3), combined);
      }
    } catch (error) {
      if (announced) await this.redis.bizopsRateWithdraw(demandKey, waiter).catch(() => undefined);
      if (this.closing.signal.aborted && !signal?.aborted) throw new Error('rate budget is closed', { cause: error });
      throw error;
    } finally {
      this.waiting[priority]--;
    }
  }

  /**
   * The server's rate-limit headers (spec §8). `remaining: 0` pauses EVERY process until the
   * announced reset (server clock converted to ours with a safe estimate of the clock offset, plus
   * the safety margin; a full window when the reset is unknown). A `limit` lower than ours is adopted
   * for ten windows.
   */
  async observe(observation: RateLimitObservation): Promise<void> {
    const now = Date.now();
    if (observation.serverNowMs !== undefined && Number.isFinite(observation.serverNowMs)) {
      this.clockSamples.push(observation.serverNowMs - now);
      if (this.clockSamples.length > CLOCK_SAMPLES_KEPT) this.clockSamples.shift();
    }
    if (observation.limit !== undefined && Number.isInteger(observation.limit) && observation.limit > 0 && observation.limit < this.limit) {
      await this.redis.set(this.keys.limit, observation.limit, 'PX', this.windowMs * 10);
    }
    if (observation.remaining !== 0) return;
    let durationMs: number;
    if (observation.resetAtMs !== undefined && Number.isFinite(observation.resetAtMs)) {
      durationMs = observation.resetAtMs - this.serverClockOffsetMs() + this.safetyMarginMs - now;
    } else {
      durationMs = this.effectiveWindowMs;
    }
    if (durationMs > 0) await this.redis.bizopsRatePause(this.keys.pause, Math.ceil(durationMs));
  }

  /**
   * A 429's `Retry-After`: no process sharing this budget sends before `untilMs` (ms epoch, our clock;
   * stored in Redis as a duration from Redis's clock, so other processes' clocks do not matter).
   */
  async pauseUntil(untilMs: number): Promise<void> {
    if (!Number.isFinite(untilMs)) return;
    this.counters.pauses++;
    const durationMs = Math.ceil(untilMs - Date.now());
    if (durationMs > 0) await this.redis.bizopsRatePause(this.keys.pause, durationMs);
  }

  /**
   * Server clock minus ours, ms: the largest recent sample of (Date header - receipt time). Each sample
   * is at most the true offset (the header is truncated to the second and the response took time), so
   * converting a reset with it never ends a window early. 0 before any sample.
   */
  serverClockOffsetMs(): number {
    return this.clockSamples.length > 0 ? Math.max(...this.clockSamples) : 0;
  }

  stats(): RedisRateBudgetStats {
    return {
      granted: { ...this.counters.granted },
      waitedMs: this.counters.waitedMs,
      pauses: this.counters.pauses,
      waiting: { ...this.waiting },
    };
  }

  /** See RateBudget.pausedForMs: the pause every process shares (a 429, or `remaining: 0`) still ahead by Redis's clock, ms. */
  async pausedForMs(): Promise<number> {
    const [until, [seconds, micros]] = await Promise.all([this.redis.get(this.keys.pause), this.redis.time()]);
    const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    return Math.max(0, Number(until ?? 0) - now);
  }

  /** Grants inside the current window across every process (for status output and tests). */
  async grantsInWindow(): Promise<number> {
    const [seconds, micros] = await this.redis.time();
    const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    return this.redis.zcount(this.keys.log, now - this.effectiveWindowMs, '+inf');
  }

  /** Deletes this budget's keys (tests, or resetting a deployment). */
  async reset(): Promise<void> {
    await this.redis.del(this.keys.log, this.keys.pause, this.keys.limit, ...this.keys.demand);
  }

  /** Rejects this process's waiters and closes the connection when the budget opened it. */
  async close(): Promise<void> {
    this.closing.abort(new Error('rate budget is closed'));
    if (this.ownsConnection) await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
