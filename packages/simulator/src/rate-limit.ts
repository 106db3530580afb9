/**
 * The server side of spec §8's rate limit: a per-company budget of `limit` requests per fixed window
 * of `windowMs`. Windows are anchored at `anchorMs` (default: when the limiter was created, i.e. the
 * simulator's start), so window boundaries fall anywhere within a second, as a real server's do.
 * `X-RateLimit-Reset` is the spec's format, whole Unix seconds: the window end rounded UP to the
 * second (`resetPrecision: 'exact'` sends the fractional end instead, for a test that needs it).
 * A 429 does not consume budget. Windows follow the real clock (Date.now), not the simulator's
 * record clock, because clients wait in real time.
 */

/** The rate limit: `limit` requests per fixed window of `windowMs` ms (spec §8: 60 per minute by default). */
export interface RateLimitSettings {
  limit: number;
  windowMs: number;
  /** ms epoch a window starts at (windows are `anchorMs + k * windowMs`). Default: the limiter's creation time. 0 aligns windows to epoch multiples. */
  anchorMs?: number;
  /** `seconds` (default, the spec's format): Reset = ceil(window end / 1000). `exact`: the end in fractional seconds. */
  resetPrecision?: 'seconds' | 'exact';
}

/** Whether one request may proceed, with the rate-limit headers to send (spec §8). */
export interface RateLimitDecision {
  allowed: boolean;
  /** Headers for the response (spec §8): X-RateLimit-Limit, -Remaining, -Reset (Unix seconds of the window end). */
  headers: Record<string, string>;
  /** Whole seconds until the window ends (ceil), for 429's Retry-After and body `retryAfter`. */
  retryAfterSeconds: number;
  /** Start of the window the request was counted in (ms epoch): lets tests and benchmarks count per server window. */
  windowStartMs: number;
}

/** The per-company fixed-window rate limit of spec §8, as described in this module's header. */
export class FixedWindowRateLimiter {
  private readonly settings: Required<RateLimitSettings>;
  private readonly now: () => number;
  /** company -> { window start ms, requests counted in it } */
  private readonly windows = new Map<string, { start: number; count: number }>();

  /**
   * @param settings limit (requests per window, >= 1), windowMs (>= 1), anchorMs, resetPrecision
   * @throws Error when limit or windowMs is not a positive number
   */
  constructor(settings: RateLimitSettings, now: () => number = Date.now) {
    if (!(settings.limit >= 1) || !(settings.windowMs >= 1)) {
      throw new Error(`rateLimit needs limit >= 1 and windowMs >= 1, got limit=${settings.limit} windowMs=${settings.windowMs}`);
    }
    this.now = now;
    this.settings = { limit: settings.limit, windowMs: settings.windowMs, anchorMs: settings.anchorMs ?? now(), resetPrecision: settings.resetPrecision ?? 'seconds' };
  }

  private window(company: string): { start: number; count: number } {
    const now = this.now();
    const { windowMs, anchorMs } = this.settings;
    const start = anchorMs + Math.floor((now - anchorMs) / windowMs) * windowMs;
    let window = this.windows.get(company);
    if (!window || window.start !== start) {
      window = { start, count: 0 };
      this.windows.set(company, window);
    }
    return window;
  }

  private decision(window: { start: number; count: number }, allowed: boolean): RateLimitDecision {
    const end = window.start + this.settings.windowMs;
    const reset = this.settings.resetPrecision === 'exact' ? String(end / 1000) : String(Math.ceil(end / 1000));
    return {
      allowed,
      headers: {
        'X-RateLimit-Limit': String(this.settings.limit),
        'X-RateLimit-Remaining': String(Math.max(0, this.settings.limit - window.count)),
        'X-RateLimit-Reset': reset,
      },
      retryAfterSeconds: Math.max(1, Math.ceil((end - this.now()) / 1000)),
      windowStartMs: window.start,
    };
  }

  /** Counts one request for `company` if the window has room; a refused request consumes nothing. */
  consume(company: string): RateLimitDecision {
    const window = this.window(company);
    if (window.count >= this.settings.limit) return this.decision(window, false);
    window.count += 1;
    return this.decision(window, true);
  }

  /** The current headers without consuming (for injected fault responses). */
  peek(company: string): RateLimitDecision {
    const window = this.window(company);
    return this.decision(window, window.count < this.settings.limit);
  }
}
