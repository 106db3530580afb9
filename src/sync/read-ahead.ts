/**
 * Read-ahead for the page loop (docs/sync.md "Read-ahead"): while the consumer commits one page,
 * the request for the next one is already on its way, so the API's answer and the SQLite commit
 * overlap instead of taking turns. Bounded: at most ONE step is fetched beyond the one the consumer
 * holds, so memory stays one page deep whatever the list's length.
 *
 * The first step is never read ahead: the engine sets the run's frozen-set bound (`createdBefore`)
 * from the first page's server time when it commits it, and every later request must carry it.
 */

/** Options of `readAhead`. */
export interface ReadAheadOptions<T> {
  /** True for the last step: nothing is fetched after it (PageStep.done for the page loop). */
  isLast?: (step: T) => boolean;
}

/**
 * Yields what `source` yields, in order, asking `source` for step n+1 as soon as step n is handed
 * to the consumer (from the second step on). An error of the fetch ahead is thrown where the
 * consumer would have received that step, after it finished with the one before; when the consumer
 * stops early (break, throw), a fetch in flight is awaited and dropped, and `source` is closed.
 * @throws what `source` throws
 */
export async function* readAhead<T>(source: AsyncIterator<T, void, undefined>, options: ReadAheadOptions<T> = {}): AsyncGenerator<T, void, undefined> {
  let ahead: Promise<IteratorResult<T, void>> | undefined;
  let first = true;
  try {
    for (;;) {
      const result = await (ahead ?? source.next());
      ahead = undefined;
      if (result.done) return;
      // From the second step on, and unless this is the last one, start the next fetch now.
      if (!first && !(options.isLast?.(result.value) ?? false)) {
        ahead = source.next();
        // A failure is handled where the consumer awaits it; this only keeps it from counting as unhandled meanwhile.
        ahead.catch(() => undefined);
      }
      first = false;
      yield result.value;
    }
  } finally {
    if (ahead) await ahead.catch(() => undefined);
    await source.return?.();
  }
}
