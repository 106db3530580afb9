/**
 * Knowing the moment a write's request goes out. The API client takes a rate-budget slot right
 * before each attempt (src/client/client.ts: acquire, then send). Wrapping the budget lets the write
 * engine record `sending` exactly then, and not while the write still waits for a slot: a worker
 * killed during a long wait leaves its write `queued` (safe to send), not `sending` (ambiguous).
 *
 * The listener is found through AsyncLocalStorage, so one client serves many concurrent jobs and each
 * job hears only its own slots.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Priority, RateBudget, RateBudgetStats, RateLimitObservation } from '../client/rate-budget.ts';

/** Called once per granted slot, just before the request is sent. Throwing cancels that send. */
export type SlotListener = () => void;

const listeners = new AsyncLocalStorage<SlotListener>();

/** Runs `operation` so that every budget slot taken inside it (through a `SlotNotifyingBudget`) calls `listener`. */
export function withSlotListener<T>(listener: SlotListener, operation: () => Promise<T>): Promise<T> {
  return listeners.run(listener, operation);
}

/** Runs `operation` with no slot listener (e.g. a ledger lookup inside a job). */
export function withoutSlotListener<T>(operation: () => Promise<T>): Promise<T> {
  return listeners.exit(operation);
}

/**
 * A RateBudget that tells the current slot listener about each slot it grants. Owns nothing: `close`
 * is the caller's. `shutdown` cancels waits for a slot only (a request already sent is never cut
 * short by it), so a closing worker does not turn a write in flight into an ambiguous one.
 */
export class SlotNotifyingBudget implements RateBudget {
  readonly inner: RateBudget;
  private readonly shutdown: AbortSignal | undefined;

  constructor(inner: RateBudget, shutdown?: AbortSignal) {
    this.inner = inner;
    this.shutdown = shutdown;
  }

  async acquire(priority: Priority, signal?: AbortSignal): Promise<void> {
    const signals = [signal, this.shutdown].filter((item): item is AbortSignal => item !== undefined);
    await this.inner.acquire(priority, signals.length > 1 ? AbortSignal.any(signals) : signals[0]);
    listeners.getStore()?.();
  }

  observe(observation: RateLimitObservation): void | Promise<void> {
    return this.inner.observe(observation);
  }

  pauseUntil(untilMs: number): void | Promise<void> {
    return this.inner.pauseUntil(untilMs);
  }

  stats(): RateBudgetStats {
    return this.inner.stats();
  }
}
