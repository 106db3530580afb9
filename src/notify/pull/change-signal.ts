/**
 * A broadcast "changes were appended" signal for readers that wait (the pull API's long-polls):
 * every reader waiting when `notify()` is called wakes; one that starts waiting later waits for the
 * next. The daemon calls `notify()` for every change its own engine or worker appends, and for
 * every PostgreSQL notification of another process's commit; waiters still poll as the fallback
 * (another process on a SQLite file cannot tell).
 */
export class ChangeSignal {
  readonly #waiters = new Set<() => void>();

  /** Wakes every current waiter. Cheap; never throws. */
  notify(): void {
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const wake of waiters) wake();
  }

  /** Waiters right now (for tests and metrics). */
  get waiting(): number {
    return this.#waiters.size;
  }

  /** Resolves at the next `notify()`, after `ms`, or when `abort` aborts, whichever comes first. Never rejects. */
  wait(ms: number, abort?: AbortSignal): Promise<void> {
    if (abort?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        abort?.removeEventListener('abort', done);
        this.#waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      abort?.addEventListener('abort', done, { once: true });
      this.#waiters.add(done);
    });
  }
}
