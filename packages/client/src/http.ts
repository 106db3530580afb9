/**
 * The requests every part of the client sends to a bizops-sync daemon's HTTP port: JSON with
 * `Authorization: Bearer <key>` (docs/mirror.md "Reading over HTTP", docs/writes.md "The write API"),
 * under `/connections/<name>` when a connection is named. The key is never put in an error message.
 */

/** Where a daemon is and how to open it. */
export interface DaemonOptions {
  /** The daemon's base URL, e.g. `http://mirror-host:8080` (a trailing `/` is fine). */
  url: string;
  /** The read key (`BIZOPS_READ_API_KEY`) for the pull API, the write key (`BIZOPS_WRITE_API_KEY`) for writes. */
  key: string;
  /** With several connections configured: the connection's name (its routes are under `/connections/<name>`). */
  connection?: string;
  /** The fetch to use (default the global one), e.g. one with a proxy dispatcher. */
  fetch?: typeof fetch;
}

/** A JSON answer of the daemon: its HTTP status and parsed body (`{}` when it was empty or not JSON). */
export interface DaemonAnswer<T = Record<string, unknown>> {
  status: number;
  body: T;
}

/** The daemon answered with a status the caller does not handle; `body` is its JSON (`{error, parameter}` usually). */
export class DaemonRequestError extends Error {
  readonly status: number;
  readonly body: Record<string, unknown>;
  constructor(method: string, path: string, status: number, body: Record<string, unknown>) {
    super(`${method} ${path}: HTTP ${status}${typeof body.error === 'string' ? `: ${body.error}` : ''}`);
    this.name = 'DaemonRequestError';
    this.status = status;
    this.body = body;
  }
}

/** Statuses worth sending again after a pause: the daemon restarting, a proxy between, a busy mirror. */
export function isTransientStatus(status: number): boolean {
  return status === 408 || status === 429 || status === 502 || status === 503 || status === 504;
}

/** One daemon's port, with its key: `request` sends JSON and parses the JSON answer. */
export class DaemonHttp {
  readonly #base: string;
  readonly #key: string;
  readonly #fetch: typeof fetch;

  constructor(options: DaemonOptions) {
    const base = options.url.replace(/\/+$/, '');
    this.#base = options.connection === undefined ? base : `${base}/connections/${encodeURIComponent(options.connection)}`;
    this.#key = options.key;
    this.#fetch = options.fetch ?? fetch;
  }

  /**
   * Sends `method path` (path relative to the connection, e.g. `/consumers/erp/changes?wait=30`).
   * Resolves with every HTTP answer (the caller judges the status); rejects only when no answer came
   * (connection refused or reset, DNS, `signal` aborted).
   */
  async request<T = Record<string, unknown>>(method: string, path: string, options: { body?: unknown; headers?: Record<string, string>; signal?: AbortSignal } = {}): Promise<DaemonAnswer<T>> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.#key}`, accept: 'application/json', ...options.headers };
    const init: RequestInit = { method, headers };
    if (options.body !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(options.body);
    }
    if (options.signal) init.signal = options.signal;
    const response = await this.#fetch(`${this.#base}${path}`, init);
    const text = await response.text();
    let body: unknown = {};
    if (text.length > 0) {
      try {
        body = JSON.parse(text);
      } catch {
        body = { error: text.slice(0, 200) };
      }
    }
    return { status: response.status, body: body as T };
  }
}

/** Milliseconds to wait before try `attempt` (1-based): doubling from `baseMs` up to `maxMs`, with full jitter. */
export function backoffMs(attempt: number, baseMs: number, maxMs: number): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(30, attempt - 1));
  return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
}

/** Resolves after `ms`, or rejects with the signal's reason when it is aborted first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
