/**
 * What a stream's run in progress is going through, for the console's state cell: whether its last
 * list request failed and is being retried (since when, how many retries, the last error). A layer
 * of the sync's API client (`hooks()`, jobs/daemon.ts adds it) hears every retry and every answer;
 * a list request answered 2xx clears its stream, and so does the end of the run (`runEnded`). So a
 * stream whose requests fail never reads as plainly running, even before its first run has failed.
 */
import { errorLine } from '../client/api-errors.ts';
import type { RequestHooks } from '../client/hooks.ts';
import { STREAM_LIST } from '../streams/definitions.ts';

/** A run's retrying, as the console shows it. Times are ISO 8601. */
export interface RunRetrying {
  /** The first failed attempt of this streak. */
  since: string;
  /** Retries so far in the streak. */
  retries: number;
  /** The last failed attempt's error in one line (`HTTP 503: ...`). */
  lastError: string;
}

/** The list path (`/transactions`) of each registered stream, longest first (a path that is another's prefix comes after it). */
const LIST_PATHS = STREAM_LIST.map((stream) => ({ stream: stream.name as string, path: stream.request.path })).sort((a, b) => b.path.length - a.path.length);

/** The stream whose list `path` (with its query) asks, or undefined. */
function streamOfPath(path: string): string | undefined {
  const bare = path.split('?')[0]!;
  return LIST_PATHS.find((entry) => bare === entry.path)?.stream;
}

/** Per stream, the retry streak of its run in progress. */
export class RunRetries {
  readonly #byStream = new Map<string, RunRetrying>();

  /** The client layer that keeps the streaks: GET list requests only (writes and probes are not a stream's run). */
  hooks(): RequestHooks {
    return {
      onRetry: (context, event) => {
        if (context.request.method !== 'GET') return;
        const stream = streamOfPath(context.request.path);
        if (stream === undefined) return;
        const streak = this.#byStream.get(stream);
        this.#byStream.set(stream, { since: streak?.since ?? new Date().toISOString(), retries: (streak?.retries ?? 0) + 1, lastError: errorLine(event.error) });
      },
      afterResponse: (context, response) => {
        if (context.request.method !== 'GET' || response.status >= 300) return;
        const stream = streamOfPath(context.request.path);
        if (stream !== undefined) this.#byStream.delete(stream);
      },
    };
  }

  /** The stream's run ended (its outcome is in the mirror now): its streak is over. */
  runEnded(stream: string): void {
    this.#byStream.delete(stream);
  }

  /** The stream's current streak, or undefined while its requests are answered. */
  of(stream: string): RunRetrying | undefined {
    const streak = this.#byStream.get(stream);
    return streak ? { ...streak } : undefined;
  }
}
