/**
 * A resettable "wake up now" signal for a polling loop: the loop waits for a timeout, a `wake()`, or
 * an abort, whichever comes first. A `wake()` that arrives while the loop is busy is remembered, so
 * the loop's next wait returns at once and no notification is lost.
 */
export class Wakeup {
  #pending = false;
  #resolve: (() => void) | null = null;

  /** Ends the current wait, or the next one if nobody is waiting. */
  wake(): void {
    const resolve = this.#resolve;
    if (resolve) resolve();
    else this.#pending = true;
  }

  /**
   * Waits up to `ms` milliseconds, less if woken or if `signal` aborts. Never rejects.
   * Only one wait at a time per Wakeup.
   */
  wait(ms: number, signal?: AbortSignal): Promise<void> {
    if (this.#pending || signal?.aborted) {
      this.#pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      let settled = false;
      const done = () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.#resolve = null;
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      signal?.addEventListener('abort', done, { once: true });
      this.#resolve = done;
    });
  }
}
