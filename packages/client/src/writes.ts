/**
 * Submits writes to a bizops-sync daemon's write API (docs/writes.md "The write API"), with an
 * idempotency key on every write so that sending it again never makes a second write: a retry after
 * no answer, a 503 (the mirror did not store it) or a daemon restart lands on the same write (200).
 */
import { randomUUID } from 'node:crypto';
import { backoffMs, DaemonHttp, DaemonRequestError, isTransientStatus, sleep, type DaemonOptions } from './http.ts';

/** A write as the daemon reports it (`GET /writes/{id}`; `POST /writes` answers id, idempotencyKey and status). */
export interface WriteState {
  id: string;
  idempotencyKey: string;
  /** `queued`, `sending`, `succeeded`, `failed`, `needs_review`, ... (docs/writes.md "Outcomes"). */
  status: string;
  [field: string]: unknown;
}

/** What `submit` resolved with. */
export interface SubmittedWrite {
  write: WriteState;
  /** True when this call stored the write (202); false when the key named it already (200). */
  created: boolean;
}

/** The daemon refused the write as invalid (400): `issues` name each field and rule; nothing was kept. */
export class WriteRejectedError extends DaemonRequestError {}

/** The idempotency key names a different write (409): nothing was kept. */
export class IdempotencyConflictError extends DaemonRequestError {}

/** How a `WriteSubmitter` sends. */
export interface WriteSubmitterOptions extends DaemonOptions {
  /** Tries of one `submit` before it throws the last failure (no answer, 408/429/502/503/504); default 8. */
  attempts?: number;
  /** Pauses between tries, ms; default `{ baseMs: 250, maxMs: 10_000 }`. */
  backoff?: { baseMs?: number; maxMs?: number };
}

/** Sends writes with idempotency keys (module comment). `key` is the daemon's write key. */
export class WriteSubmitter {
  readonly #http: DaemonHttp;
  readonly #options: WriteSubmitterOptions;

  constructor(options: WriteSubmitterOptions) {
    this.#http = new DaemonHttp(options);
    this.#options = options;
  }

  /**
   * Queues a write of `kind` (`transaction.create`, ...; docs/writes.md lists them) with `payload`.
   * @param options.idempotencyKey names the write (1 to 255 characters): the same key again is the
   *   same write; default a fresh UUID, kept for every try of this call
   * @param options.actAs the connection's token name to write as (docs/writes.md)
   * @throws WriteRejectedError (400), IdempotencyConflictError (409), DaemonRequestError (any other
   *   refusal, or the last transient one after `attempts` tries), or the network error of the last try
   */
  async submit(kind: string, payload: Record<string, unknown>, options: { idempotencyKey?: string; actAs?: string; signal?: AbortSignal } = {}): Promise<SubmittedWrite> {
    const idempotencyKey = options.idempotencyKey ?? randomUUID();
    const body = { kind, payload, idempotencyKey, ...(options.actAs === undefined ? {} : { actAs: options.actAs }) };
    const attempts = this.#options.attempts ?? 8;
    for (let attempt = 1; ; attempt += 1) {
      let failure: Error;
      try {
        const answer = await this.#http.request<{ write: WriteState }>('POST', '/writes', { body, ...(options.signal ? { signal: options.signal } : {}) });
        if (answer.status === 202 || answer.status === 200) return { write: answer.body.write, created: answer.status === 202 };
        const errorBody = answer.body as unknown as Record<string, unknown>;
        if (answer.status === 400) throw new WriteRejectedError('POST', '/writes', 400, errorBody);
        if (answer.status === 409) throw new IdempotencyConflictError('POST', '/writes', 409, errorBody);
        failure = new DaemonRequestError('POST', '/writes', answer.status, errorBody);
        if (!isTransientStatus(answer.status)) throw failure;
      } catch (error) {
        if (error instanceof DaemonRequestError && !isTransientStatus(error.status)) throw error;
        if (options.signal?.aborted) throw error;
        failure = error as Error;
      }
      if (attempt >= attempts) throw failure;
      await sleep(backoffMs(attempt, this.#options.backoff?.baseMs ?? 250, this.#options.backoff?.maxMs ?? 10_000), options.signal);
    }
  }

  /**
   * A write's state (`GET /writes/{id}`).
   * @returns null when the daemon has no such write (404)
   * @throws DaemonRequestError on any other refusal
   */
  async get(id: string): Promise<WriteState | null> {
    const answer = await this.#http.request<{ write: WriteState }>('GET', `/writes/${encodeURIComponent(id)}`);
    if (answer.status === 404) return null;
    if (answer.status !== 200) throw new DaemonRequestError('GET', '/writes/{id}', answer.status, answer.body as unknown as Record<string, unknown>);
    return answer.body.write;
  }
}
