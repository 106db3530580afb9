/**
 * The callers waiting for a rate-budget slot, in the order the budget serves them (docs/rate-budget.md
 * "Priorities"): the highest priority first (`write`, `incremental`, `backfill`); within a priority,
 * retries (of requests that already waited their turn) ahead of first attempts, otherwise first come
 * first served. Both budgets (local-rate-budget.ts, redis-rate-budget.ts) keep their waiters here and
 * differ only in how they find a free slot.
 */
import { PRIORITIES, type AcquireOptions, type Priority, type RateSlot } from './rate-budget.ts';

/** One caller of `acquire` waiting for a slot. */
export interface Waiter {
  readonly priority: Priority;
  /** A retry: queued ahead of the first waiter of its priority that is not one. */
  readonly retry: boolean;
  /** When it started waiting, ms epoch (for the budget's `waitedMs` counter). */
  readonly enqueuedAtMs: number;
}

interface QueuedWaiter extends Waiter {
  resolve(slot: RateSlot): void;
  reject(reason: unknown): void;
  /** Drops the abort listener. */
  cleanup(): void;
}

/**
 * Called when a waiter's signal aborted, after it left the line and before its caller hears of it
 * (the Redis budget withdraws its process's demand when `leftInPriority` is 0).
 */
export type OnAbandoned = (priority: Priority, leftInPriority: number) => void | Promise<void>;

/** The waiters of one budget, by priority. */
export class WaitingLine {
  private readonly queues: Record<Priority, QueuedWaiter[]> = { write: [], incremental: [], backfill: [] };

  /**
   * Checks an `acquire` call's arguments: a rejection reason for an unknown priority (TypeError), a
   * closed budget (Error) or an already aborted signal (its reason); undefined when it may wait.
   */
  static refusal(priority: Priority, closed: boolean, signal: AbortSignal | undefined): { reason: unknown } | undefined {
    if (!PRIORITIES.includes(priority)) return { reason: new TypeError(`priority must be one of ${PRIORITIES.join(', ')}, got ${String(priority)}`) };
    if (closed) return { reason: new Error('rate budget is closed') };
    if (signal?.aborted) return { reason: signal.reason };
    return undefined;
  }

  /**
   * Puts a caller in line; the promise resolves with the slot `grant` hands it, or rejects with the
   * signal's reason when `signal` aborts first (after `onAbandoned`), or with `rejectAll`'s reason.
   */
  join(priority: Priority, signal: AbortSignal | undefined, options: AcquireOptions, onAbandoned: OnAbandoned): Promise<RateSlot> {
    return new Promise<RateSlot>((resolve, reject) => {
      const queue = this.queues[priority];
      const waiter: QueuedWaiter = {
        priority,
        retry: options.retry === true,
        enqueuedAtMs: Date.now(),
        resolve,
        reject,
        cleanup: () => signal?.removeEventListener('abort', onAbort),
      };
      const onAbort = () => {
        const index = queue.indexOf(waiter);
        if (index >= 0) queue.splice(index, 1);
        void Promise.resolve(onAbandoned(priority, queue.length)).finally(() => reject(signal?.reason));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const firstFresh = waiter.retry ? queue.findIndex((queued) => !queued.retry) : -1;
      if (firstFresh >= 0) queue.splice(firstFresh, 0, waiter);
      else queue.push(waiter);
    });
  }

  /** The waiter served next, or undefined when nobody waits. */
  head(): Waiter | undefined {
    for (const priority of PRIORITIES) {
      const first = this.queues[priority][0];
      if (first) return first;
    }
    return undefined;
  }

  /** Waiters of `priority`. */
  length(priority: Priority): number {
    return this.queues[priority].length;
  }

  /** Waiters by priority (for `stats()`). */
  counts(): Record<Priority, number> {
    return { write: this.queues.write.length, incremental: this.queues.incremental.length, backfill: this.queues.backfill.length };
  }

  /**
   * Hands `slot` to the first waiter of `priority` and returns that waiter, or undefined (the slot
   * is not used) when none of that priority waits.
   */
  grant(priority: Priority, slot: RateSlot): Waiter | undefined {
    const waiter = this.queues[priority].shift();
    if (!waiter) return undefined;
    waiter.cleanup();
    waiter.resolve(slot);
    return waiter;
  }

  /** Rejects every waiter of `priority` (every priority when omitted) with `reason`. */
  rejectAll(reason: unknown, priority?: Priority): void {
    for (const each of priority === undefined ? PRIORITIES : [priority]) {
      for (const waiter of this.queues[each].splice(0)) {
        waiter.cleanup();
        waiter.reject(reason);
      }
    }
  }
}
