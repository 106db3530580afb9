/**
 * `RedisRateBudget`: the rate budget (docs/rate-budget.md, spec §8) shared by EVERY process of
 * a deployment (daemon, `worker` processes, one-off backfills), kept in Redis.
 *
 * - The server's window (server-window.ts, the same rules in Lua): once an answer carried
 *   `X-RateLimit-Remaining` and `-Reset`, every process spends what the server says remains minus
 *   the requests in flight in ANY process, never more than `limit` of the processes' own per window
 *   (a ceiling: the server's remaining may be another integration's too), and resumes when the window has surely ended. What was
 *   learned (the window's length, where windows start, the clock offset, the lowest remaining) lives
 *   in one Redis hash, so every process follows one view.
 * - Before that, or with a server that sends no such headers: a sliding-window log of grants keeps
 *   any span of `windowMs + safetyMarginMs` to `limit` grants across processes.
 * - Slots in flight: a sorted set of granted slots (score = when it lapses if never ended). An
 *   answer ends its slot; a request without one releases it (returned if never sent, else kept as
 *   spent for one more window). A dead process's slots lapse after `slotTtlMs`.
 * - Leasing: a process asks for as many slots as it has waiters of the highest waiting priority
 *   (up to `maxLease`) in ONE script call, so concurrent requests do not cost a round trip each;
 *   a slot is never handed out beyond what the window allows, counting every process's in flight.
 *   Answers and releases are sent in the background, batched (`observe` never waits on Redis and
 *   never throws).
 * - Far from the limit (the window's room at least `FAR_ROOM_FACTOR` times `farLease`, as the last
 *   script call saw it): a waiter of ANY priority takes `farLease` more slots ahead when nobody
 *   else waits anywhere and the room stays that far after the lease, and answers are recorded
 *   in batches (up to `FAR_BATCH_RECORDS` of them, or `FAR_BATCH_MS` ms), so a backfill that the
 *   limit does not bind costs a few script calls per hundred requests instead of two per request.
 *   Exact all the same: a leased slot is in flight for every process, and an answer recorded late
 *   keeps its slot in flight until then (it counts against the window either way).
 * - Pauses: a 429's `Retry-After` (`pauseUntil`) is stored in Redis, so every process waits, and the
 *   learned window is forgotten (a 429 proves a bound wrong).
 * - Priority across processes: a process waiting with some priority announces its demand in a
 *   per-priority sorted set (score = expiry, renewed at every poll, so a dead process's demand
 *   vanishes within `demandTtlMs`). A slot goes to a lower priority only when no higher priority
 *   demand is waiting: writes, then incremental polls, then backfill/reconciliation. Within a
 *   priority, retries rank above first attempts (their own sorted set).
 * - Every decision is one atomic Lua script using Redis's own clock (`TIME`), so the processes' clocks
 *   do not need to agree: an answer is timed when Redis records it (never earlier than its receipt).
 * - Redis away (docs/rate-budget.md "When Redis is away"): a process that cannot reach Redis grants
 *   nothing; its waiters keep waiting (Redis is asked again every poll) for at most `redisWaitMs`,
 *   then fail with one error naming the outage. When Redis answers again WITHOUT the budget's state
 *   (restarted empty, flushed, failed over to a replica that lacked it), the requests sent before the
 *   loss may still count at the server, so for one window nothing is granted but one probe at a time
 *   until an answer's `X-RateLimit-Remaining`/`-Reset` tells what the server's window holds (a
 *   server that sends none: the window passes first). The loss is seen by a marker (`epoch`) every
 *   process remembers.
 *
 * Keys (one budget = one hash tag, so the keys live in one Redis Cluster slot):
 *   {prefix}:{key}:log       grants (sorted set: score = grant time ms, member = slot id) for sliding-log pacing
 *   {prefix}:{key}:pause     no grant before this Redis time, ms
 *   {prefix}:{key}:window    what the server's answers taught (hash; server-window.ts's state)
 *   {prefix}:{key}:flight    slots in flight (sorted set: score = lapse time ms, member = slot id)
 *   {prefix}:{key}:demand:{priority}         waiting first attempts
 *   {prefix}:{key}:demand:{priority}:retry   waiting retries (rank above the first attempts of their priority)
 *   {prefix}:{key}:epoch     the budget's identity (hash: id, at; recoverUntil and probes after a loss)
 * Every key expires: the epoch an hour (at least ten windows) after the last call of any process,
 * the others when what they hold is over (a grant's window, a slot's lapse, a pause, a waiter's poll).
 *
 *   const budget = new RedisRateBudget({ redis: 'redis://127.0.0.1:6379', key: rateBudgetKey(config), limit: 60 });
 *   const slot = await budget.acquire('write');
 *   // ... send, then: budget.observe(answer.rateLimit, slot)
 */
import { createHash, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { PRIORITIES, type AcquireOptions, type BudgetPeek, type Priority, type RateBudget, type RateBudgetStats, type RateLimitObservation, type RateSlot, type ReleaseOutcome } from './rate-budget.ts';
import { defaultResumeMarginMs } from './server-window.ts';
import { WaitingLine } from './waiting-line.ts';

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
  /** Added to the end of a spent server window before resuming, ms. Default 1% of the window, 5..100 ms. */
  resumeMarginMs?: number;
  /** Key prefix. Default `bizops:rate`. Tests use their own. */
  prefix?: string;
  /** A waiter's demand expires this long after its last poll, ms. Default 3000. */
  demandTtlMs?: number;
  /** Longest sleep between two polls of a waiter, ms. Default 1000. */
  maxPollMs?: number;
  /** Most slots one script call hands to this process for its waiters. Default 16. */
  maxLease?: number;
  /**
   * Write slots taken ahead of need when no other waiter exists anywhere and the window has twice
   * that room, so that writes sent one after another do not pay a Redis round trip each. Lower
   * priorities lease ahead only far from the limit (`farLease`): a held backfill slot must not go
   * out ahead of a write waiting in another process. Default 2; 0 turns it off.
   */
  leaseAhead?: number;
  /** A slot leased ahead and not used within this long is given back, ms. Default 100. */
  leaseHoldMs?: number;
  /**
   * Slots of any priority taken ahead of need when the window's room is far (at least
   * `FAR_ROOM_FACTOR` times this, after the lease) and nobody else waits anywhere: a held slot
   * then cannot keep a write waiting, since the room it leaves is far larger. Default 16; 0 turns it off.
   */
  farLease?: number;
  /** A slot never ended (its process died) stops counting as in flight after this, ms. Default 2 windows + 60 s. */
  slotTtlMs?: number;
  /**
   * How long waiters wait for Redis when it stops answering, ms (config `rateLimit.redisWaitSeconds`),
   * before they fail; nothing is granted meanwhile. Default 60000.
   */
  redisWaitMs?: number;
}

/** `stats()` of a RedisRateBudget: the contract's counters, for THIS process. */
export interface RedisRateBudgetStats extends RateBudgetStats {
  /** Calls waiting in `acquire` in this process, by priority. */
  waiting: Record<Priority, number>;
  /** Script calls that granted slots (one may grant several): granted / leaseCalls = slots per Redis round trip. */
  leaseCalls: number;
  /** Every call of the budget's step script (acquire, recording answers and releases, peek): its Redis round trips. */
  scriptCalls: number;
  /** Slots served from a lease taken ahead, without a Redis round trip. */
  heldUsed: number;
  /** Answers and releases not recorded because Redis did not answer. */
  observeFailures: number;
  /** Times this process found the budget's state lost in Redis (and waited for the server's word). */
  stateLosses: number;
  /** Waits for Redis that ended in failing the waiters (`redisWaitMs` passed). */
  redisGaveUp: number;
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
 * One step of the budget, atomically (the rules of server-window.ts, in Lua).
 * KEYS: log, pause, window, flight, then the demand sets by rank: write:retry, write,
 *   incremental:retry, incremental, backfill:retry, backfill, then epoch
 * ARGV: 1 limit, 2 sliding window ms, 3 rank (0: none), 4 waiter id, 5 demand ttl ms, 6 slots wanted,
 *   7 slot id prefix, 8 configured window ms, 9 resume margin ms, 10 slot ttl ms, 11 mode
 *   (acquire | flush | peek), 12 n, 13 extra slots to lease ahead when nobody else waits and the
 *   window has ARGV 16 times that room, 14 the epoch this process saw last ('' for none), 15 a new epoch id
 *   (used when the marker is missing), 16 how many times the extra slots the window's room must
 *   hold for them to be leased, then n records of 6: slot id, reset ms, remaining, limit,
 *   Date ms (each '' when absent), kind (obs | sent | unsent)
 * Returns { slots granted, wait ms (hint), redis now ms, slots available, in flight, paused until,
 *   epoch, 1 when this call found the state lost }.
 */
const STEP_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local sliding = tonumber(ARGV[2])
local rank = tonumber(ARGV[3])
local waiter = ARGV[4]
local ttl = tonumber(ARGV[5])
local want = tonumber(ARGV[6])
local prefix = ARGV[7]
local confW = tonumber(ARGV[8])
local margin = tonumber(ARGV[9])
local slotTtl = tonumber(ARGV[10])
local mode = ARGV[11]
local n = tonumber(ARGV[12])
local extra = tonumber(ARGV[13])
local log, pauseKey, win, flight = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local epochKey = KEYS[11]
local knownEpoch, newEpoch = ARGV[14], ARGV[15]
local roomFactor = tonumber(ARGV[16])

-- The budget's memory: a process that saw another epoch (or none where it saw one) knows it was lost.
local epoch = redis.call('HGET', epochKey, 'id')
local lostNow = 0
if not epoch then
  epoch = newEpoch
  redis.call('HSET', epochKey, 'id', epoch, 'at', now)
  if knownEpoch ~= '' then
    redis.call('HSET', epochKey, 'recoverUntil', now + sliding)
    lostNow = 1
  end
elseif knownEpoch ~= '' and knownEpoch ~= epoch then
  -- Re-created after a loss by a process that did not know: the window from then on is recovery.
  local at = tonumber(redis.call('HGET', epochKey, 'at') or '0')
  if redis.call('HSETNX', epochKey, 'recoverUntil', at + sliding) == 1 then lostNow = 1 end
end
local recoverUntil = tonumber(redis.call('HGET', epochKey, 'recoverUntil') or '0')
-- Every key of the budget expires: the epoch an hour (or ten windows) after the last call of any process.
redis.call('PEXPIRE', epochKey, math.max(3600000, 10 * confW + 60000))

local function num(field)
  local v = redis.call('HGET', win, field)
  if v then return tonumber(v) end
  return nil
end
local resetAt, remaining, anchor, offset = num('reset'), num('rem') or 0, num('anchor'), num('offset')
local spent = num('spent') or 0
local learned, lastAdv, serverLimit = num('learned'), num('lastAdv'), num('slimit')
local changed = false

redis.call('ZREMRANGEBYSCORE', flight, '-inf', now)
for i = 0, n - 1 do
  local b = 17 + i * 6
  local slot, r, rem, lim, date, kind = ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5]
  if kind == 'obs' then
    if slot ~= '' then redis.call('ZREM', flight, slot) end
    if lim ~= '' and tonumber(lim) > 0 then serverLimit = tonumber(lim); changed = true end
    if date ~= '' then
      local sample = tonumber(date) - now
      if offset == nil or sample > offset then offset = sample; changed = true end
    end
    if r ~= '' and rem ~= '' then
      local R, m = tonumber(r), math.max(0, tonumber(rem))
      local a = now - R
      if anchor == nil or a < anchor then anchor = a end
      if resetAt == nil or R > resetAt then
        if resetAt ~= nil then
          local adv = R - resetAt
          if adv == lastAdv and (learned == nil or adv < learned) then learned = adv end
          lastAdv = adv
        end
        resetAt, remaining, spent = R, m, 1
      elseif R == resetAt then
        if m < remaining then remaining = m end
        spent = spent + 1
      end
      changed = true
    elseif rem == '0' then
      local current = tonumber(redis.call('GET', pauseKey) or '0')
      if now + sliding > current then redis.call('SET', pauseKey, now + sliding, 'PX', sliding + 1000) end
    end
  elseif kind == 'sent' then
    if redis.call('ZREM', flight, slot) == 1 then
      if resetAt ~= nil then remaining = math.max(0, remaining - 1); spent = spent + 1; changed = true end
      redis.call('ZADD', flight, now + (learned or confW) + margin, slot .. ':lost')
    end
  elseif kind == 'unsent' then
    if redis.call('ZREM', flight, slot) == 1 then redis.call('ZREM', log, slot) end
  end
end
local W = learned or confW
-- A lost slot re-added to an emptied (so deleted) set makes a new key: it expires with its last member.
local flightTtl = math.max(slotTtl, W + margin) + 1000
if redis.call('EXISTS', flight) == 1 then redis.call('PEXPIRE', flight, flightTtl) end
if changed then
  local fields = { 'rem', remaining, 'spent', spent }
  for _, pair in ipairs({ { 'reset', resetAt }, { 'anchor', anchor }, { 'offset', offset }, { 'learned', learned }, { 'lastAdv', lastAdv }, { 'slimit', serverLimit } }) do
    if pair[2] ~= nil then table.insert(fields, pair[1]); table.insert(fields, pair[2]) end
  end
  redis.call('HSET', win, unpack(fields))
  redis.call('PEXPIRE', win, 10 * W + 60000)
end
if serverLimit ~= nil and serverLimit < limit then limit = serverLimit end
local inflight = redis.call('ZCARD', flight)

local slots, waitMs = 0, 0
local paused = tonumber(redis.call('GET', pauseKey) or '0')
if paused > now then
  waitMs = paused - now
elseif resetAt ~= nil and anchor ~= nil then
  local e = nil
  if W % 1000 == 0 or resetAt % 1000 ~= 0 then e = resetAt + W + anchor end
  if offset ~= nil and (e == nil or resetAt - offset < e) then e = resetAt - offset end
  if e == nil then e = resetAt + W + anchor end
  if now < e + margin then
    -- The configured limit is a ceiling on our own requests in the window (server-window.ts).
    slots = math.min(remaining, limit - spent) - inflight
    if slots <= 0 then slots, waitMs = 0, e + margin - now end
  else
    slots = limit - inflight
    if slots <= 0 then slots, waitMs = 0, math.max(10, margin) end
  end
else
  redis.call('ZREMRANGEBYSCORE', log, '-inf', '(' .. (now - sliding))
  local count = redis.call('ZCARD', log)
  if count < limit then
    slots = limit - count
  else
    local oldest = redis.call('ZRANGE', log, count - limit, count - limit, 'WITHSCORES')
    waitMs = tonumber(oldest[2]) + sliding + 1 - now
  end
end
-- Recovering from a loss, before any answer told the server's window: one probe at a time.
local recovering = paused <= now and recoverUntil > now and resetAt == nil
if recovering then
  local probes = tonumber(redis.call('HGET', epochKey, 'probes') or '0')
  if probes >= 1 or inflight > 0 then
    slots, waitMs = 0, math.min(recoverUntil - now, 250)
  elseif slots > 1 then
    slots = 1
  end
end
if mode ~= 'acquire' then return { 0, waitMs, now, slots, inflight, paused, epoch, lostNow } end

local own = KEYS[4 + rank]
local function wait(ms)
  redis.call('ZADD', own, now + ttl, waiter)
  redis.call('PEXPIRE', own, ttl * 2)
  if ms < 1 then ms = 1 end
  return { 0, ms, now, slots, inflight, paused, epoch, lostNow }
end
if slots <= 0 then return wait(waitMs) end
for r = 1, rank - 1 do
  local key = KEYS[4 + r]
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  if redis.call('ZCARD', key) > 0 then return wait(5) end
end
local granted = math.min(want, slots)
if recovering then redis.call('HINCRBY', epochKey, 'probes', granted) end
if extra > 0 and not recovering and slots - granted >= roomFactor * extra then
  -- Lease ahead only when no other waiter, of any priority in any process, could want those slots.
  local others = 0
  for r = 1, 6 do
    local key = KEYS[4 + r]
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
    others = others + redis.call('ZCARD', key)
    if redis.call('ZSCORE', key, waiter) then others = others - 1 end
  end
  if others == 0 then granted = granted + extra end
end
for i = 1, granted do
  local id = prefix .. ':' .. i
  redis.call('ZADD', log, now, id)
  redis.call('ZADD', flight, now + slotTtl, id)
end
redis.call('PEXPIRE', log, sliding + 1000)
redis.call('PEXPIRE', flight, flightTtl)
redis.call('ZREM', own, waiter)
return { granted, 0, now, slots - granted, inflight + granted, paused, epoch, lostNow }
`;

/** KEYS: pause, window. ARGV: duration ms. Extends (never shortens) the pause to Redis now + duration and forgets the learned window. */
const PAUSE_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local untilMs = now + tonumber(ARGV[1])
redis.call('DEL', KEYS[2])
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if untilMs > current then
  redis.call('SET', KEYS[1], untilMs, 'PX', tonumber(ARGV[1]) + 1000)
  return untilMs
end
return current
`;

/** KEYS: demand key. ARGV: waiter. */
const WITHDRAW_SCRIPT = `return redis.call('ZREM', KEYS[1], ARGV[1])`;

type StepResult = [granted: number, waitMs: number, redisNowMs: number, available: number, inFlight: number, pausedUntilRedisMs: number, epoch: string, lostNow: number];

type BudgetRedis = Redis & {
  bizopsRateStep(...args: (string | number)[]): Promise<StepResult>;
  bizopsRatePause(...args: (string | number)[]): Promise<number>;
  bizopsRateWithdraw(...args: (string | number)[]): Promise<number>;
};

/**
 * "Far from the limit": the window's room (what may be granted now across every process) at least
 * this many times `farLease`. Lower priorities lease ahead only when their lease leaves that much
 * room, and answers are batched only while the last script call saw that much room.
 */
export const FAR_ROOM_FACTOR = 4;

/** Far from the limit, answers and releases are sent once this many wait ... */
const FAR_BATCH_RECORDS = 16;
/** ... or this long after the first of them, ms (their slots stay in flight meanwhile: the safe side). */
const FAR_BATCH_MS = 20;

/** An answer or release waiting to be sent to Redis: the six ARGV fields of STEP_SCRIPT's records. */
type PendingRecord = [slot: string, resetMs: string, remaining: string, limit: string, dateMs: string, kind: 'obs' | 'sent' | 'unsent'];

function positiveInteger(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
    throw new RangeError(`RedisRateBudget option ${field} must be a positive integer, got ${String(value)}`);
  }
  return value;
}

function text(value: number | undefined): string {
  return value === undefined || !Number.isFinite(value) ? '' : String(value);
}

/** The rate budget shared through Redis by every process of a deployment (spec §8), as this module's header describes. */
export class RedisRateBudget implements RateBudget {
  readonly key: string;
  readonly limit: number;
  readonly windowMs: number;
  readonly safetyMarginMs: number;
  readonly resumeMarginMs: number;

  private readonly redis: BudgetRedis;
  private readonly ownsConnection: boolean;
  /** `demand` in rank order: each priority's retries, then its first attempts (see STEP_SCRIPT). */
  private readonly keys: { log: string; pause: string; window: string; flight: string; demand: string[]; epoch: string };
  private readonly demandTtlMs: number;
  private readonly maxPollMs: number;
  private readonly maxLease: number;
  private readonly leaseAhead: number;
  private readonly leaseHoldMs: number;
  private readonly farLease: number;
  /** The window's room the last script call reported (slots grantable across every process); 0 before the first. */
  private lastRoom = 0;
  private batchTimer: NodeJS.Timeout | undefined;
  /** Slots leased ahead, not yet used; given back after `leaseHoldMs`. */
  private held: RateSlot[] = [];
  private holdTimer: NodeJS.Timeout | undefined;
  private readonly slotTtlMs: number;
  private readonly processId = randomUUID();
  private leaseSequence = 0;
  private readonly line = new WaitingLine();
  /** Ranks this process announced demand for (to withdraw when its waiters are gone). */
  private readonly announced = new Set<number>();
  private pending: PendingRecord[] = [];
  private flushQueued = false;
  private pumping = false;
  /** Wakes a pump sleeping between polls (an answer may have freed a slot, or a waiter arrived). */
  private wake: (() => void) | undefined;
  private readonly counters: RateBudgetStats & { leaseCalls: number; scriptCalls: number; heldUsed: number; observeFailures: number; stateLosses: number; redisGaveUp: number } = {
    granted: { write: 0, incremental: 0, backfill: 0 },
    waitedMs: 0,
    pauses: 0,
    leaseCalls: 0,
    scriptCalls: 0,
    heldUsed: 0,
    observeFailures: 0,
    stateLosses: 0,
    redisGaveUp: 0,
  };
  private closed = false;
  readonly redisWaitMs: number;
  /** The budget's epoch in Redis as this process last saw it ('' before the first step). */
  private epoch = '';
  /** When Redis stopped answering this process's steps (ms epoch), while it does not answer. */
  private outageSince: number | undefined;

  /** @throws RangeError when `limit`, `windowMs`, a margin or `maxLease` is not valid, or `key` is empty */
  constructor(options: RedisRateBudgetOptions) {
    if (typeof options.key !== 'string' || options.key === '') throw new RangeError('RedisRateBudget option key must be a non-empty string');
    this.key = options.key;
    this.limit = positiveInteger(options.limit, 'limit');
    this.windowMs = positiveInteger(options.windowMs ?? 60_000, 'windowMs');
    const margin = options.safetyMarginMs ?? Math.min(250, Math.max(50, Math.round(this.windowMs * 0.02)));
    if (!Number.isFinite(margin) || margin < 0) throw new RangeError(`RedisRateBudget option safetyMarginMs must be a number >= 0, got ${String(margin)}`);
    this.safetyMarginMs = margin;
    const resume = options.resumeMarginMs ?? defaultResumeMarginMs(this.windowMs);
    if (!Number.isFinite(resume) || resume < 0) throw new RangeError(`RedisRateBudget option resumeMarginMs must be a number >= 0, got ${String(resume)}`);
    this.resumeMarginMs = resume;
    this.demandTtlMs = options.demandTtlMs ?? 3000;
    this.maxPollMs = options.maxPollMs ?? 1000;
    this.maxLease = positiveInteger(options.maxLease ?? 16, 'maxLease');
    this.leaseAhead = options.leaseAhead ?? 2;
    if (!Number.isInteger(this.leaseAhead) || this.leaseAhead < 0) throw new RangeError(`RedisRateBudget option leaseAhead must be an integer >= 0, got ${String(options.leaseAhead)}`);
    this.leaseHoldMs = options.leaseHoldMs ?? 100;
    this.farLease = options.farLease ?? 16;
    if (!Number.isInteger(this.farLease) || this.farLease < 0) throw new RangeError(`RedisRateBudget option farLease must be an integer >= 0, got ${String(options.farLease)}`);
    this.slotTtlMs = positiveInteger(options.slotTtlMs ?? 2 * this.windowMs + 60_000, 'slotTtlMs');
    this.redisWaitMs = positiveInteger(options.redisWaitMs ?? 60_000, 'redisWaitMs');
    const base = `${options.prefix ?? 'bizops:rate'}:{${this.key}}`;
    this.keys = {
      log: `${base}:log`,
      pause: `${base}:pause`,
      window: `${base}:window`,
      flight: `${base}:flight`,
      demand: PRIORITIES.flatMap((priority) => [`${base}:demand:${priority}:retry`, `${base}:demand:${priority}`]),
      epoch: `${base}:epoch`,
    };
    // A connection of our own fails a command after one reconnect attempt instead of holding it for
    // ever: the waiting for Redis is this budget's, bounded by `redisWaitMs`.
    this.ownsConnection = typeof options.redis === 'string';
    const client = typeof options.redis === 'string' ? new Redis(options.redis, { maxRetriesPerRequest: 1, disconnectTimeout: 200 }) : options.redis;
    // Failures surface through `acquire`; without a listener ioredis prints every reconnect error.
    if (typeof options.redis === 'string') client.on('error', () => undefined);
    client.defineCommand('bizopsRateStep', { numberOfKeys: 11, lua: STEP_SCRIPT });
    client.defineCommand('bizopsRatePause', { numberOfKeys: 2, lua: PAUSE_SCRIPT });
    client.defineCommand('bizopsRateWithdraw', { numberOfKeys: 1, lua: WITHDRAW_SCRIPT });
    this.redis = client as BudgetRedis;
  }

  /** The span no more than `limit` grants may share in sliding-log pacing, ms. */
  get effectiveWindowMs(): number {
    return this.windowMs + this.safetyMarginMs;
  }

  /**
   * Waits until this process may send one request of `priority` without any process exceeding the
   * budget, then takes the slot. A retry (`options.retry`) ranks above every first attempt of its priority.
   * @throws the signal's reason when `signal` aborts; an Error when the budget is closed; Redis errors
   */
  acquire(priority: Priority, signal?: AbortSignal, options: AcquireOptions = {}): Promise<RateSlot> {
    const refusal = WaitingLine.refusal(priority, this.closed, signal);
    if (refusal) return Promise.reject(refusal.reason);
    if (this.held.length > 0 && !this.line.head()) {
      const slot = this.held.shift()!;
      this.counters.granted[priority]++;
      this.counters.heldUsed++;
      return Promise.resolve({ id: slot.id, priority });
    }
    const slot = this.line.join(priority, signal, options, (abandoned, leftInPriority) => {
      this.wake?.();
      // The last waiter of its priority withdraws the process's demand before its caller hears of the abort.
      if (leftInPriority === 0) return this.withdrawPriority(abandoned);
    });
    this.wake?.();
    if (!this.pumping) void this.pump();
    return slot;
  }

  /**
   * An answer's rate-limit headers (spec §8), ending `slot`: recorded in Redis in the background,
   * batched with other answers. Never waits, never throws; when Redis does not answer the record is
   * dropped (the slot lapses after `slotTtlMs`) and `stats().observeFailures` counts it.
   */
  observe(observation: RateLimitObservation, slot?: RateSlot): void {
    this.record([slot?.id ?? '', text(observation.resetAtMs), text(observation.remaining), text(observation.limit), text(observation.serverNowMs), 'obs']);
  }

  /** Ends a slot whose request got no answer (see `ReleaseOutcome`), in the background like `observe`. */
  release(slot: RateSlot, outcome: ReleaseOutcome): void {
    this.record([slot.id, '', '', '', '', outcome.requestSent ? 'sent' : 'unsent']);
  }

  /**
   * A 429's `Retry-After`: no process sharing this budget sends before `untilMs` (ms epoch, our clock;
   * stored in Redis as a duration from Redis's clock, so other processes' clocks do not matter).
   * The learned server window is forgotten.
   */
  async pauseUntil(untilMs: number): Promise<void> {
    if (!Number.isFinite(untilMs)) return;
    this.counters.pauses++;
    // Slots leased ahead were granted before the 429: none of them may go out during the pause.
    this.returnHeld();
    const durationMs = Math.ceil(untilMs - Date.now());
    if (durationMs > 0) await this.redis.bizopsRatePause(this.keys.pause, this.keys.window, durationMs);
  }

  /**
   * What `acquire` would do now across every process, without taking a slot or announcing demand
   * (one script call; records waiting to be sent go with it).
   * @throws Redis errors
   */
  async peek(): Promise<BudgetPeek> {
    const before = Date.now();
    const [, waitMs, redisNow, available, inFlight, pausedUntil] = await this.step('peek', 0, '', 0);
    const toLocal = (redisMs: number) => before + (redisMs - redisNow);
    return {
      available: Math.max(0, available),
      nextSlotAtMs: available > 0 ? before : before + waitMs,
      pausedUntilMs: pausedUntil > redisNow ? toLocal(pausedUntil) : undefined,
      inFlight,
      followingServerWindow: (await this.redis.hexists(this.keys.window, 'reset')) === 1,
    };
  }

  /** Sends the answers and releases not yet recorded, and waits for Redis (tests, shutdown). Never throws. */
  async drain(): Promise<void> {
    await this.flush();
  }

  stats(): RedisRateBudgetStats {
    return {
      granted: { ...this.counters.granted },
      waitedMs: this.counters.waitedMs,
      pauses: this.counters.pauses,
      waiting: this.line.counts(),
      leaseCalls: this.counters.leaseCalls,
      scriptCalls: this.counters.scriptCalls,
      heldUsed: this.counters.heldUsed,
      observeFailures: this.counters.observeFailures,
      stateLosses: this.counters.stateLosses,
      redisGaveUp: this.counters.redisGaveUp,
    };
  }

  /** Grants inside the current sliding window across every process (for status output and tests). */
  async grantsInWindow(): Promise<number> {
    const [seconds, micros] = await this.redis.time();
    const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    return this.redis.zcount(this.keys.log, now - this.effectiveWindowMs, '+inf');
  }

  /** Deletes this budget's keys (tests, or resetting a deployment). */
  async reset(): Promise<void> {
    await this.redis.del(this.keys.log, this.keys.pause, this.keys.window, this.keys.flight, this.keys.epoch, ...this.keys.demand);
    this.epoch = '';
  }

  /** Rejects this process's waiters, sends what is pending, and closes the connection when the budget opened it. */
  async close(): Promise<void> {
    this.closed = true;
    this.line.rejectAll(new Error('rate budget is closed'));
    this.wake?.();
    this.returnHeld();
    await this.flush();
    if (this.ownsConnection) await this.redis.quit().catch(() => this.redis.disconnect());
  }

  private record(record: PendingRecord): void {
    this.pending.push(record);
    if (this.flushQueued) return;
    if (this.far() && this.pending.length < FAR_BATCH_RECORDS && !(record[2] !== '' && Number(record[2]) < FAR_ROOM_FACTOR * this.farLease)) {
      // Far from the limit (and this answer does not say otherwise): sent with the next batch or script call.
      this.batchTimer ??= setTimeout(() => {
        this.batchTimer = undefined;
        void this.flush();
      }, FAR_BATCH_MS);
      this.batchTimer.unref();
      return;
    }
    this.flushQueued = true;
    // Answers arriving in the same tick go in one script call.
    queueMicrotask(() => {
      this.flushQueued = false;
      void this.flush();
    });
  }

  /** True when the last script call saw the window's room far from the limit (module header). */
  private far(): boolean {
    return this.farLease > 0 && this.lastRoom >= FAR_ROOM_FACTOR * this.farLease;
  }

  /** Sends the pending records; a failure drops them (counted). Wakes the pump: a slot may be free. */
  private async flush(): Promise<void> {
    if (this.pending.length === 0) return;
    try {
      await this.step('flush', 0, '', 0);
    } catch {
      // Counted in step(); the answers are lost, their slots lapse.
    }
    this.wake?.();
  }

  /** One STEP_SCRIPT call carrying every pending record. */
  private async step(mode: 'acquire' | 'flush' | 'peek', rank: number, slotPrefix: string, want: number): Promise<StepResult> {
    const records = this.pending;
    this.pending = [];
    // Every pending record goes with this call: no batch is left to send.
    if (this.batchTimer) clearTimeout(this.batchTimer);
    this.batchTimer = undefined;
    this.counters.scriptCalls++;
    try {
      const result = await this.redis.bizopsRateStep(
        this.keys.log,
        this.keys.pause,
        this.keys.window,
        this.keys.flight,
        ...this.keys.demand,
        this.keys.epoch,
        this.limit,
        this.effectiveWindowMs,
        rank,
        rank > 0 ? `${this.processId}:${rank}` : '',
        this.demandTtlMs,
        want,
        slotPrefix,
        this.windowMs,
        this.resumeMarginMs,
        this.slotTtlMs,
        mode,
        records.length,
        // Writes lease ahead when the window has twice the room; lower priorities only when it is far
        // (FAR_ROOM_FACTOR): else a held slot of theirs could go out ahead of a write waiting in another process.
        mode !== 'acquire' ? 0 : rank <= 2 ? this.leaseAhead : this.farLease,
        this.epoch,
        `${this.processId}:${Date.now()}`,
        rank <= 2 ? 2 : FAR_ROOM_FACTOR,
        ...records.flat(),
      );
      if (Number(result[7]) === 1) {
        this.counters.stateLosses++;
        // Slots leased ahead were granted under the lost state: none of them may go out now.
        this.returnHeld();
      }
      this.epoch = String(result[6]);
      this.lastRoom = Number(result[3]);
      return result;
    } catch (error) {
      this.counters.observeFailures += records.length;
      throw error;
    }
  }

  /** Hands `slot` to the first waiter of `priority` and counts it; false when none waits. */
  private grant(priority: Priority, slot: RateSlot): boolean {
    const waiter = this.line.grant(priority, slot);
    if (!waiter) return false;
    this.counters.granted[priority]++;
    this.counters.waitedMs += Date.now() - waiter.enqueuedAtMs;
    return true;
  }

  /** The highest-priority waiter's priority and rank (1 = a write's retry), or undefined when none waits. */
  private head(): { priority: Priority; rank: number } | undefined {
    const first = this.line.head();
    return first && { priority: first.priority, rank: PRIORITIES.indexOf(first.priority) * 2 + (first.retry ? 1 : 2) };
  }

  /** Takes slots for this process's waiters, several per script call, until none waits. */
  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      for (let head = this.head(); head && !this.closed; head = this.head()) {
        if (this.held.length > 0) {
          const slot = this.held.shift()!;
          this.counters.heldUsed++;
          this.grant(head.priority, { id: slot.id, priority: head.priority });
          continue;
        }
        const want = Math.min(this.maxLease, this.line.length(head.priority));
        const prefix = `${this.processId}:${++this.leaseSequence}`;
        let result: StepResult;
        try {
          result = await this.step('acquire', head.rank, prefix, want);
          this.outageSince = undefined;
        } catch (error) {
          // Redis does not answer: nothing is granted. Wait for it (asking every poll) up to redisWaitMs.
          const now = Date.now();
          this.outageSince ??= now;
          if (now - this.outageSince >= this.redisWaitMs) {
            this.counters.redisGaveUp++;
            this.outageSince = undefined;
            const reason = error instanceof Error ? error.message : String(error);
            this.line.rejectAll(new Error(`the shared rate budget: Redis did not answer for ${this.redisWaitMs / 1000} s (rateLimit.redisWaitSeconds): ${reason}`, { cause: error }));
            continue;
          }
          await this.sleepUnlessWoken(Math.min(this.maxPollMs, this.redisWaitMs - (now - this.outageSince)));
          continue;
        }
        const [granted, waitMs] = result;
        if (granted > 0) this.counters.leaseCalls++;
        else this.announced.add(head.rank);
        for (let index = 1; index <= granted; index++) {
          const slot: RateSlot = { id: `${prefix}:${index}`, priority: head.priority };
          if (!this.grant(head.priority, slot)) this.hold(slot); // leased ahead, or its waiter gave up meanwhile
        }
        // A little jitter so that processes woken by the same expiry do not all ask in the same ms.
        if (granted === 0) await this.sleepUnlessWoken(Math.min(this.maxPollMs, waitMs) + Math.floor(Math.random() * 3));
      }
    } finally {
      this.pumping = false;
      await this.withdraw();
    }
  }

  /** Sleeps `ms`, or less when `wake` is called (an answer freed a slot, a waiter arrived or left). */
  private async sleepUnlessWoken(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, Math.max(1, ms));
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
    this.wake = undefined;
  }

  /** Keeps a slot for the next `acquire` for up to `leaseHoldMs`, then gives it back unused. */
  private hold(slot: RateSlot): void {
    this.held.push(slot);
    if (this.holdTimer) return;
    this.holdTimer = setTimeout(() => {
      this.holdTimer = undefined;
      this.returnHeld();
    }, this.leaseHoldMs);
    this.holdTimer.unref();
  }

  private returnHeld(): void {
    if (this.holdTimer) clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    for (const slot of this.held.splice(0)) this.release(slot, { requestSent: false });
  }

  /** Withdraws this process's demand for `priority` (its retries and first attempts). */
  private async withdrawPriority(priority: Priority): Promise<void> {
    const index = PRIORITIES.indexOf(priority);
    const ranks = [index * 2 + 1, index * 2 + 2].filter((rank) => this.announced.delete(rank));
    await Promise.all(ranks.map((rank) => this.redis.bizopsRateWithdraw(this.keys.demand[rank - 1]!, `${this.processId}:${rank}`).catch(() => undefined)));
  }

  /** Withdraws the demand this process announced, now that no waiter of those ranks is left. */
  private async withdraw(): Promise<void> {
    const ranks = [...this.announced];
    this.announced.clear();
    await Promise.all(ranks.map((rank) => this.redis.bizopsRateWithdraw(this.keys.demand[rank - 1]!, `${this.processId}:${rank}`).catch(() => undefined)));
    // A waiter that arrived while withdrawing needs a pump.
    if (this.head() && !this.pumping && !this.closed) void this.pump();
  }
}
