/**
 * A named consumer of a bizops-sync daemon's changelog (docs/mirror.md "Named consumers"): the daemon
 * keeps its cursor, this loop reads pages with a long-poll, hands each event to the caller, and
 * acknowledges what the caller finished.
 *
 *   const consumer = new PullConsumer({ url, key, name: 'erp' });
 *   for await (const event of consumer.events()) await handle(event);
 *
 * Delivery is at least once; this loop makes it once per process for the events it remembers:
 *   - an event is acknowledged only after the loop body that received it finished (the generator is
 *     resumed past it): a page's acknowledgement (`POST /consumers/NAME/ack {"seq": next}`, or the
 *     snapshot's `{"snapshot": position}`) is sent when all its events were handled; a loop left
 *     early (`break`, a throw) acknowledges through the last event handled before it;
 *   - events read again (an acknowledgement that did not arrive, a daemon restarted before it) are
 *     skipped by their `id` when this process handled them already (the last `dedupeWindow` ids);
 *   - no answer, or 408/429/502/503/504: the same request again after a pause doubling from
 *     `backoff.baseMs` to `backoff.maxMs` (jittered), for as long as it takes; `onError` sees each;
 *   - `410` (the retention pruned past the cursor: changes were missed): with `onPruned: 'snapshot'`
 *     (default) `POST /consumers/NAME/reset?initial=snapshot`, then the current rows of every stream
 *     as `<stream>.snapshot` events, then the changes after the snapshot; with `'throw'` a
 *     `CursorPrunedError`.
 */
import { backoffMs, DaemonHttp, DaemonRequestError, isTransientStatus, sleep, type DaemonOptions } from './http.ts';
import type { BizopsEvent, WebhookTestEvent } from './events.generated.ts';

/** An event as the pull API answers it: the webhook body plus its `id` (deduplicate on it); `webhook.test` is never in the changelog. */
export type PulledEvent = Exclude<BizopsEvent, WebhookTestEvent> & { id: string };

/** How a `PullConsumer` reads. */
export interface PullConsumerOptions extends DaemonOptions {
  /** The consumer's name: 1 to 64 letters, digits, `_ . -`. Created on the first read when missing. */
  name: string;
  /** Event type patterns (`deal.*`, `transaction.created`); default every type. */
  types?: readonly string[];
  /** Events per page, 1 to 1,000; default 100. */
  limit?: number;
  /** Long-poll, seconds (0 to 60): how long a read waits for a change when none is there; default 30. */
  waitSeconds?: number;
  /** Where a consumer that does not exist yet starts: `end` (default: what is recorded from now on) or `snapshot`. */
  initial?: 'end' | 'snapshot';
  /** A consumer that does not exist yet starts after this seq (exclusive; `0`: the whole changelog). Not with `initial: 'snapshot'`. */
  after?: number;
  /** What a `410` (a pruned cursor) does: `snapshot` (default) starts over from a snapshot, `throw` throws `CursorPrunedError`. */
  onPruned?: 'snapshot' | 'throw';
  /** How many handled event ids are remembered to skip a repeat; default 10,000. */
  dedupeWindow?: number;
  /** Pauses between tries of a failed request, ms; default `{ baseMs: 250, maxMs: 30_000 }`. */
  backoff?: { baseMs?: number; maxMs?: number };
  /** Called for each failed try before its pause (`attempt` counts from 1 until a request succeeds). */
  onError?: (error: Error, attempt: number) => void;
  /** Called after a reset to a snapshot: `oldestSeq` the oldest seq still kept, `boundary` the snapshot's. */
  onReset?: (info: { oldestSeq: number | null; boundary: number }) => void;
  /** Ends the loop (the generator returns) when aborted. */
  signal?: AbortSignal;
}

/** Counters of one `PullConsumer` since it was made. */
export interface PullConsumerStats {
  /** Events handed to the loop body and finished. */
  handled: number;
  /** Events read again and skipped because their id was handled already. */
  duplicates: number;
  /** Acknowledgements the daemon accepted. */
  acks: number;
  /** Resets to a snapshot after a `410`. */
  resets: number;
  /** Failed tries (each followed by a pause). */
  retries: number;
}

/** The daemon answered `410`: the retention pruned changes after the consumer's cursor (with `onPruned: 'throw'`). */
export class CursorPrunedError extends Error {
  /** The oldest seq the changelog still has. */
  readonly oldestSeq: number | null;
  constructor(message: string, oldestSeq: number | null) {
    super(message);
    this.name = 'CursorPrunedError';
    this.oldestSeq = oldestSeq;
  }
}

interface Page {
  events: PulledEvent[];
  after: number;
  next: number;
  snapshot?: { boundary: number; position: string; last: boolean };
}

/** Reads a named consumer's events (module comment). One `events()` loop at a time per instance. */
export class PullConsumer {
  readonly stats: PullConsumerStats = { handled: 0, duplicates: 0, acks: 0, resets: 0, retries: 0 };
  readonly #options: PullConsumerOptions;
  readonly #http: DaemonHttp;
  readonly #path: string;
  readonly #seen = new Set<string>();
  readonly #stop = new AbortController();
  readonly #signal: AbortSignal;
  #attempt = 0;

  constructor(options: PullConsumerOptions) {
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(options.name)) throw new TypeError(`name: 1 to 64 letters, digits, _ . - (got ${JSON.stringify(options.name)})`);
    this.#options = options;
    this.#http = new DaemonHttp(options);
    this.#path = `/consumers/${options.name}`;
    this.#signal = options.signal ? AbortSignal.any([options.signal, this.#stop.signal]) : this.#stop.signal;
  }

  /** Ends a running `events()` loop: a pending long-poll is abandoned, nothing more is acknowledged. */
  close(): void {
    this.#stop.abort(new Error('the consumer was closed'));
  }

  /**
   * The consumer's events, in changelog order, each once per process (module comment). Registers
   * the consumer first when it does not exist. Returns when `close()` is called or `signal` aborts.
   * @throws CursorPrunedError on a `410` with `onPruned: 'throw'`
   * @throws DaemonRequestError on an answer that is neither success nor transient (401 a wrong key,
   *   404 the consumer was deleted, 400 a bad option such as an unknown type pattern)
   */
  async *events(): AsyncGenerator<PulledEvent, void, undefined> {
    const limit = this.#options.limit ?? 100;
    const wait = this.#options.waitSeconds ?? 30;
    const types = this.#options.types?.length ? `&types=${encodeURIComponent(this.#options.types.join(','))}` : '';
    try {
      await this.#register();
      for (;;) {
        const page = await this.#send<Page>('GET', `${this.#path}/changes?limit=${limit}&wait=${wait}${types}`, undefined, true);
        if (page === null) continue; // reset to a snapshot: read again
        let lastHandledSeq: number | null = null;
        let finished = false;
        try {
          for (const event of page.events) {
            if (this.#seen.has(event.id)) {
              this.stats.duplicates += 1;
            } else {
              yield event;
              this.#remember(event.id);
              this.stats.handled += 1;
            }
            lastHandledSeq = event.data.seq;
          }
          finished = true;
        } finally {
          // Left early: acknowledge through the last event handled (a snapshot page moves as a whole).
          if (!finished && !page.snapshot && lastHandledSeq !== null && lastHandledSeq > page.after && !this.#signal.aborted) {
            await this.#http.request('POST', `${this.#path}/ack`, { body: { seq: lastHandledSeq } }).then(() => (this.stats.acks += 1), () => undefined);
          }
        }
        if (page.snapshot) await this.#ack({ snapshot: page.snapshot.position });
        else if (page.next > page.after) await this.#ack({ seq: page.next });
      }
    } catch (error) {
      if (this.#signal.aborted) return;
      throw error;
    }
  }

  async #register(): Promise<void> {
    const query = this.#options.initial === 'snapshot' ? '?initial=snapshot' : '';
    const body = this.#options.after === undefined ? undefined : { after: this.#options.after };
    await this.#send('PUT', `${this.#path}${query}`, body, false);
  }

  /** Acknowledges; an acknowledgement that fails is not sent again: the page is read again instead (its events skipped as handled). */
  async #ack(body: { seq: number } | { snapshot: string }): Promise<void> {
    let answer;
    try {
      answer = await this.#http.request('POST', `${this.#path}/ack`, { body, signal: this.#signal });
    } catch (error) {
      if (this.#signal.aborted) throw error;
      await this.#failed(error as Error);
      return;
    }
    if (answer.status === 200) {
      this.stats.acks += 1;
      this.#attempt = 0;
    } else if (isTransientStatus(answer.status)) await this.#failed(new DaemonRequestError('POST', `${this.#path}/ack`, answer.status, answer.body));
    else throw new DaemonRequestError('POST', `${this.#path}/ack`, answer.status, answer.body);
  }

  /**
   * Sends until an answer that is not transient; null after a `410` was handled by a reset.
   * @param pruneable whether a `410` means a pruned cursor (reads) rather than a refused `after` (registration)
   */
  async #send<T>(method: string, path: string, body: unknown, pruneable: boolean): Promise<T | null> {
    for (;;) {
      let answer;
      try {
        answer = await this.#http.request<Record<string, unknown>>(method, path, { body, signal: this.#signal });
      } catch (error) {
        if (this.#signal.aborted) throw error;
        await this.#failed(error as Error);
        continue;
      }
      if (answer.status >= 200 && answer.status < 300) {
        this.#attempt = 0;
        return answer.body as T;
      }
      const error = new DaemonRequestError(method, path.replace(/\?.*$/, ''), answer.status, answer.body);
      if (isTransientStatus(answer.status)) {
        await this.#failed(error);
        continue;
      }
      if (answer.status === 410 && pruneable) {
        const oldestSeq = typeof answer.body.oldestSeq === 'number' ? answer.body.oldestSeq : null;
        if ((this.#options.onPruned ?? 'snapshot') === 'throw') throw new CursorPrunedError(error.message, oldestSeq);
        const reset = await this.#send<{ consumer: { cursor: number } }>('POST', `${this.#path}/reset?initial=snapshot`, undefined, false);
        this.stats.resets += 1;
        this.#options.onReset?.({ oldestSeq, boundary: reset!.consumer.cursor });
        return null;
      }
      throw error;
    }
  }

  async #failed(error: Error): Promise<void> {
    this.#attempt += 1;
    this.stats.retries += 1;
    this.#options.onError?.(error, this.#attempt);
    await sleep(backoffMs(this.#attempt, this.#options.backoff?.baseMs ?? 250, this.#options.backoff?.maxMs ?? 30_000), this.#signal);
  }

  #remember(id: string): void {
    this.#seen.add(id);
    if (this.#seen.size > (this.#options.dedupeWindow ?? 10_000)) this.#seen.delete(this.#seen.values().next().value!);
  }
}
