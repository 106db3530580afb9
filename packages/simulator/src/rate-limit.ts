/**
 * The server side of spec §8's rate limit: a per-company budget of `limit` requests per fixed window
 * aligned to epoch multiples of `windowMs` (a 60 s window resets at whole minutes). A 429 does not
 * consume budget. Windows follow the real clock (Date.now), not the simulator's record clock, because
 * clients wait in real time.
 */

/** The rate limit: `limit` requests per fixed window of `windowMs` ms (spec §8: 60 per minute by default). */
export interface RateLimitSettings {
  limit: number;
  windowMs: number;
}

/** Whether one request may proceed, with the rate-limit headers to send (spec §8). */
export interface RateLimitDecision {
  allowed: boolean;
  /** Headers for the response (spec §8): X-RateLimit-Limit, -Remaining, -Reset (Unix seconds of the window end). */
  headers: Record<string, string>;
  /** Whole seconds until the window ends (ceil), for 429's Retry-After and body `retryAfter`. */
  retryAfterSeconds: number;
}

/** The per-company fixed-window rate limit of spec §8, as described in this module's header. */
export class FixedWindowRateLimiter {
  private readonly settings: RateLimitSettings;
  private readonly now: () => number;
  /** company -> { window start ms, requests counted in it } */
  private readonly windows = new Map<string, { start: number; count: number }>();

  /**
   * @param settings limit (requests per window, >= 1) and windowMs (>= 1)
   * @throws Error when either is not a positive number
   */
  constructor(settings: RateLimitSettings, now: () => number = Date.now) {
    if (!(settings.limit >= 1) || !(settings.windowMs >= 1)) {
      throw new Error(`rateLimit needs limit >= 1 and windowMs >= 1, got limit=${settings.limit} windowMs=${settings.windowMs}`);
    }
    this.settings = settings;
    this.now = now;
  }

  private window(company: string): { start: number; count: number } {
    const now = this.now();
    const start = Math.floor(now / this.settings.windowMs) * this.settings.windowMs;
    let window = this.windows.get(company);
    if (!window || window.start !== start) {
      window = { start, count: 0 };
      this.windows.set(company, window);
    }
    return window;
  }

  private decision(window: { start: number; count: number }, allowed: boolean): RateLimitDecision {
    const end = window.start + this.settings.windowMs;
    return {
      allowed,
      headers: {
        'X-RateLimit-Limit': String(this.settings.limit),
        'X-RateLimit-Remaining': String(Math.max(0, this.settings.limit - window.count)),
        'X-RateLimit-Reset': String(end / 1000),
      },
      retryAfterSeconds: Math.max(1, Math.ceil((end - this.now()) / 1000)),
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
