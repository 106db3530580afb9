/**
 * Knowing the moment a write's request goes out. The API client takes a rate-budget slot right
 * before each attempt (src/client/client.ts: acquire, then send). Wrapping the budget lets the write
 * engine record `sending` exactly then, and not while the write still waits for a slot: a worker
 * killed during a long wait leaves its write `queued` (safe to send), not `sending` (ambiguous).
 *
 * The job's context (its slot listener and the token it acts as) is found through
 * AsyncLocalStorage, so one client serves many concurrent jobs and each job hears only its own slots.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Priority, RateBudget, RateBudgetStats, RateLimitObservation } from '../client/rate-budget.ts';

/** Called once per granted slot, just before the request is sent. Throwing cancels that send. */
export type SlotListener = () => void;

interface JobContext {
  listener?: SlotListener;
  /** Token name the job's requests use (routes to a per-token budget). */
  tokenName: string;
}

const contexts = new AsyncLocalStorage<JobContext>();

/**
 * Runs `operation` as a job acting as `tokenName`: every budget slot taken inside it (through a
 * `SlotNotifyingBudget`) calls `listener`, when given.
 */
export function withJobContext<T>(tokenName: string, listener: SlotListener | undefined, operation: () => Promise<T>): Promise<T> {
  return contexts.run({ tokenName, listener }, operation);
}

/**
 * Which budget a request uses: one shared budget (company scope), or one per token NAME (config
 * `rateLimit.scope: 'token'`).
 */
export type BudgetSource = RateBudget | ((tokenName: string) => RateBudget);

/**
 * A RateBudget that tells the current job's slot listener about each slot it grants, and routes to
 * the job's per-token budget when the source is a function. Owns nothing: `close` is the caller's.
 * `shutdown` cancels waits for a slot only (a request already sent is never cut short by it), so a
 * closing worker does not turn a write in flight into an ambiguous one.
 */
export class SlotNotifyingBudget implements RateBudget {
  private readonly source: BudgetSource;
  private readonly shutdown: AbortSignal | undefined;
  private readonly used = new Set<RateBudget>();

  constructor(source: BudgetSource, shutdown?: AbortSignal) {
    this.source = source;
    this.shutdown = shutdown;
  }

  private current(): RateBudget {
    if (typeof this.source !== 'function') return this.source;
    const budget = this.source(contexts.getStore()?.tokenName ?? 'default');
    this.used.add(budget);
    return budget;
  }

  async acquire(priority: Priority, signal?: AbortSignal): Promise<void> {
    const signals = [signal, this.shutdown].filter((item): item is AbortSignal => item !== undefined);
    await this.current().acquire(priority, signals.length > 1 ? AbortSignal.any(signals) : signals[0]);
    contexts.getStore()?.listener?.();
  }

  observe(observation: RateLimitObservation): void | Promise<void> {
    return this.current().observe(observation);
  }

  pauseUntil(untilMs: number): void | Promise<void> {
    return this.current().pauseUntil(untilMs);
  }

  /** The shared budget's counters (company scope), or the sum over the per-token budgets used so far. */
  stats(): RateBudgetStats {
    if (typeof this.source !== 'function') return this.source.stats();
    const total: RateBudgetStats = { granted: { write: 0, incremental: 0, backfill: 0 }, waitedMs: 0, pauses: 0 };
    for (const budget of this.used) {
      const stats = budget.stats();
      for (const priority of Object.keys(total.granted) as Priority[]) total.granted[priority] += stats.granted[priority];
      total.waitedMs += stats.waitedMs;
      total.pauses += stats.pauses;
    }
    return total;
  }
}
