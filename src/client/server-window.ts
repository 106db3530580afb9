/**
 * The server-window policy (docs/rate-budget.md "Follow the server's window", spec §8): how many
 * requests may be sent now, following the server's OWN fixed window instead of a window of ours.
 *
 * What a response tells (spec §8): `X-RateLimit-Reset` R names the server window the request was
 * counted in (whole Unix seconds: the window end, rounded up) and `X-RateLimit-Remaining` what is
 * left in it. From those, on the budget's clock (ms; our clock in memory, Redis's in Redis):
 *
 *  - **Window length W**: how R advances from one window to the next. An advance seen twice in a
 *    row is adopted (the smallest such); until then the configured window is used.
 *  - **Where windows start**: a response received at time r with reset R was counted by the server
 *    before r, so the window named R started at or before r. When W is whole seconds (or R exact),
 *    window starts differ exactly as their R do, so `anchor = min(r - R)` over all responses bounds
 *    every window: window R started by R + anchor and ended by R + W + anchor. A second bound comes
 *    from the `Date` header: R - (server clock - ours, lower bound) is never before the true end.
 *    The earlier of the two is used; neither ever ends a window early. Nothing is rounded up by a
 *    second, so a 1 s window is not skipped.
 *  - **Spending**: in the current window, `remaining` (the lowest the server reported for it) minus
 *    the requests in flight (granted, no answer yet) may be sent; every request in flight may still
 *    be counted in this window. Once the window has surely ended, the next one starts with the
 *    limit minus what is in flight, until its first answer reports its own `remaining`.
 *  - **The configured limit is a ceiling**: the server's `remaining` counts every client of the
 *    company (another integration sharing its limit, too), so it alone could let this budget spend
 *    the whole company's window. Our own requests counted in the current window (`spent`: its
 *    answers, and the unanswered requests that may have reached it) are kept, and at most
 *    `min(configured limit, server's X-RateLimit-Limit)` of them go in one window:
 *    `min(remaining, ceiling - spent) - in flight`.
 *  - **Resuming**: a spent window resumes at its end bound plus `resumeMarginMs` (default 1% of
 *    the window, 5..100 ms).
 *
 * A 429 means a bound was wrong (the server changed its windows, a clock stepped): `forget()` drops
 * what was learned and the policy starts over from the next answer. Before any answer with
 * `Remaining` and `Reset`, `allowance` returns undefined and the budget paces with its sliding log.
 *
 * This module is pure (no timers, no I/O); the same rules run in the Redis budget's Lua script
 * (redis-rate-budget.ts) so that every process shares one view.
 */

/** One answer's rate-limit headers, as the policy needs them. */
export interface WindowObservation {
  /** `X-RateLimit-Reset` in ms (server clock): names the window. */
  resetAtMs: number;
  /** `X-RateLimit-Remaining`. */
  remaining: number;
  /** `X-RateLimit-Limit`, when sent. */
  limit?: number;
  /** The `Date` header, ms (server clock), when sent. */
  serverNowMs?: number;
}

/** What the policy has learned; plain data, so it can be logged or kept elsewhere. */
export interface ServerWindowState {
  /** R of the newest window answered from (server ms), or undefined before any answer. */
  resetAtMs: number | undefined;
  /** The lowest `remaining` the server reported for that window. */
  remaining: number;
  /**
   * Our own requests the server counted, or may have counted, in that window: its answers, plus
   * the requests sent without an answer while it was current. At most the ceiling per window.
   */
  spent: number;
  /** min(receipt time - R), ms: window R started by R + anchorMs (see the module header). */
  anchorMs: number | undefined;
  /** Largest (Date header - receipt time), ms: a lower bound of server clock - ours. */
  clockOffsetMs: number | undefined;
  /** The window length learned from how R advances, ms. */
  learnedWindowMs: number | undefined;
  /** The last advance of R seen, ms (an advance seen twice in a row is adopted). */
  lastAdvanceMs: number | undefined;
  /** The server's `X-RateLimit-Limit`, last seen. */
  serverLimit: number | undefined;
}

/** What may be sent now: `slots` requests, or none until `resumeAtMs`. */
export interface WindowAllowance {
  slots: number;
  /** When `slots` is 0: when to ask again (ms, budget clock). */
  resumeAtMs: number;
}

/** A fresh state: nothing learned. */
export function emptyWindowState(): ServerWindowState {
  return {
    resetAtMs: undefined,
    remaining: 0,
    spent: 0,
    anchorMs: undefined,
    clockOffsetMs: undefined,
    learnedWindowMs: undefined,
    lastAdvanceMs: undefined,
    serverLimit: undefined,
  };
}

/** The default margin added when resuming at a window end: 1% of the window, 5 to 100 ms. */
export function defaultResumeMarginMs(windowMs: number): number {
  return Math.min(100, Math.max(5, Math.round(windowMs / 100)));
}

/** The window length in use: the learned one, else the configured one (ms). */
export function effectiveWindowMs(state: ServerWindowState, configuredWindowMs: number): number {
  return state.learnedWindowMs ?? configuredWindowMs;
}

/**
 * Learns from one answer received at `receivedAtMs` (budget clock). Answers of an older window than
 * the newest seen are ignored.
 */
export function observeWindow(state: ServerWindowState, observation: WindowObservation, receivedAtMs: number): void {
  const { resetAtMs, remaining } = observation;
  if (!Number.isFinite(resetAtMs) || !Number.isFinite(remaining)) return;
  if (observation.limit !== undefined && Number.isInteger(observation.limit) && observation.limit > 0) state.serverLimit = observation.limit;
  if (observation.serverNowMs !== undefined && Number.isFinite(observation.serverNowMs)) {
    const sample = observation.serverNowMs - receivedAtMs;
    state.clockOffsetMs = state.clockOffsetMs === undefined ? sample : Math.max(state.clockOffsetMs, sample);
  }
  const anchor = receivedAtMs - resetAtMs;
  state.anchorMs = state.anchorMs === undefined ? anchor : Math.min(state.anchorMs, anchor);
  if (state.resetAtMs === undefined || resetAtMs > state.resetAtMs) {
    if (state.resetAtMs !== undefined) {
      const advance = resetAtMs - state.resetAtMs;
      if (advance === state.lastAdvanceMs) state.learnedWindowMs = Math.min(state.learnedWindowMs ?? advance, advance);
      state.lastAdvanceMs = advance;
    }
    state.resetAtMs = resetAtMs;
    state.remaining = Math.max(0, remaining);
    state.spent = 1;
  } else if (resetAtMs === state.resetAtMs) {
    state.remaining = Math.min(state.remaining, Math.max(0, remaining));
    state.spent += 1;
  }
}

/**
 * A request that may have reached the server but got no answer: it is counted as spent in the
 * current window, by the server and against our ceiling (it may also be counted in the next; the
 * caller keeps it in flight until then).
 */
export function spendUnanswered(state: ServerWindowState): void {
  if (state.resetAtMs === undefined) return;
  state.remaining = Math.max(0, state.remaining - 1);
  state.spent += 1;
}

/** Drops everything learned (after a 429: a bound was wrong). */
export function forgetWindow(state: ServerWindowState): void {
  Object.assign(state, emptyWindowState());
}

/**
 * When the current window has surely ended (ms, budget clock), or undefined before any answer.
 * The earlier of `R + W + anchor` (only when W is whole seconds or R is not) and `R - clock offset`.
 */
export function windowEndBoundMs(state: ServerWindowState, configuredWindowMs: number): number | undefined {
  if (state.resetAtMs === undefined || state.anchorMs === undefined) return undefined;
  const windowMs = effectiveWindowMs(state, configuredWindowMs);
  let end = Number.POSITIVE_INFINITY;
  // Window starts differ exactly as their resets do only when rounding the end up to the second keeps the distance.
  if (windowMs % 1000 === 0 || state.resetAtMs % 1000 !== 0) end = state.resetAtMs + windowMs + state.anchorMs;
  if (state.clockOffsetMs !== undefined) end = Math.min(end, state.resetAtMs - state.clockOffsetMs);
  return Number.isFinite(end) ? end : state.resetAtMs + windowMs + state.anchorMs;
}

/**
 * How many requests may be sent at `nowMs`, given `inFlight` requests granted and not yet answered
 * (lost ones included until their window ended), or undefined before any answer (pace otherwise).
 * Never more than the ceiling, `min(limit, server's X-RateLimit-Limit)`, of our own requests in one
 * window, whatever the server says remains (what remains is the whole company's).
 * @param limit the configured limit (`rateLimit.perMinute`), a ceiling; the server's lower `X-RateLimit-Limit` wins
 */
export function windowAllowance(
  state: ServerWindowState,
  nowMs: number,
  inFlight: number,
  options: { limit: number; windowMs: number; resumeMarginMs: number },
): WindowAllowance | undefined {
  const end = windowEndBoundMs(state, options.windowMs);
  if (end === undefined) return undefined;
  const resumeAtMs = end + options.resumeMarginMs;
  const ceiling = Math.min(options.limit, state.serverLimit ?? options.limit);
  if (nowMs < resumeAtMs) {
    const slots = Math.min(state.remaining, ceiling - state.spent) - inFlight;
    return slots > 0 ? { slots, resumeAtMs: nowMs } : { slots: 0, resumeAtMs };
  }
  // The window named by state.resetAtMs has surely ended: a new one is open, holding at most what is in flight.
  const slots = ceiling - inFlight;
  // Nothing in flight can free a slot without an answer, which wakes the caller; poll now and then.
  return slots > 0 ? { slots, resumeAtMs: nowMs } : { slots: 0, resumeAtMs: nowMs + Math.max(10, options.resumeMarginMs) };
}
