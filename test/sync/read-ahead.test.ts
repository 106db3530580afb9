import { describe, expect, it } from 'vitest';
import { readAhead } from '../../src/sync/read-ahead.ts';

/**
 * A page source whose fetches finish only when the test lets them: it records when each fetch
 * started, so the test can see how far ahead of the consumer the reader went.
 */
function controlledSource(count: number, failAt?: number) {
  const started: number[] = [];
  const finishers: (() => void)[] = [];
  let closed = false;
  async function* pages(): AsyncGenerator<{ index: number; done: boolean }, void, undefined> {
    try {
      for (let index = 0; index < count; index += 1) {
        started.push(index);
        await new Promise<void>((resolve) => finishers.push(resolve));
        if (index === failAt) throw new Error(`page ${index} failed`);
        yield { index, done: index === count - 1 };
      }
    } finally {
      closed = true;
    }
  }
  return {
    iterator: pages(),
    started,
    /** Lets every fetch started so far finish. */
    finishAll: () => finishers.splice(0).forEach((finish) => finish()),
    closed: () => closed,
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('readAhead', () => {
  it('fetches the next page while the consumer holds one, never more than one ahead, and not ahead of the first', async () => {
    const source = controlledSource(5);
    const reader = readAhead(source.iterator, { isLast: (step) => step.done });
    const seen: number[] = [];
    const consumer = (async () => {
      for await (const step of reader) {
        // While the consumer holds page n (n >= 1), page n+1 is being fetched, and nothing beyond it.
        const beyond = source.started.filter((index) => index > step.index);
        expect(beyond).toEqual(step.index === 0 || step.done ? [] : [step.index + 1]);
        seen.push(step.index);
        await tick(); // "committing"
        source.finishAll();
      }
    })();
    while (seen.length < 5) {
      await tick();
      source.finishAll();
    }
    await consumer;
    expect(seen).toEqual([0, 1, 2, 3, 4]);
    expect(source.started).toEqual([0, 1, 2, 3, 4]);
    expect(source.closed()).toBe(true);
  });

  it('throws a failed fetch ahead where its page would have come, after the page before it was handled', async () => {
    const source = controlledSource(5, 2);
    const handled: number[] = [];
    const consumer = (async () => {
      for await (const step of readAhead(source.iterator)) {
        handled.push(step.index);
        source.finishAll();
      }
    })();
    const outcome = consumer.then(
      () => 'finished',
      (error: Error) => error.message,
    );
    let settled: string | undefined;
    void outcome.then((value) => (settled = value));
    while (settled === undefined) {
      await tick();
      source.finishAll();
    }
    expect(settled).toBe('page 2 failed');
    expect(handled).toEqual([0, 1]);
    // Nothing was fetched after the failure.
    expect(source.started).toEqual([0, 1, 2]);
  });

  it('a consumer that stops early leaves no fetch running and closes the source', async () => {
    const source = controlledSource(10);
    const reader = readAhead(source.iterator);
    const consumer = (async () => {
      for await (const step of reader) {
        source.finishAll();
        if (step.index === 3) break;
      }
    })();
    let done = false;
    void consumer.then(() => (done = true));
    while (!done) {
      await tick();
      source.finishAll();
    }
    // Page 4 was being fetched ahead when the consumer stopped at 3: awaited and dropped, nothing after it.
    expect(source.started).toEqual([0, 1, 2, 3, 4]);
    expect(source.closed()).toBe(true);
  });
});
