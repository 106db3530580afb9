/**
 * "404 means what it says" (docs/operations.md "A wrong base URL"): a list that answers 404 is an
 * unsupported stream only when the server answers the other lists; when every stream's list answers
 * 404, the base URL is wrong (a typo, a missing path segment), and that is a configuration error:
 * nothing is marked unsupported, `sync` and `backfill` exit 2 with one line naming the URL, and the
 * daemon refuses to start.
 *
 * The check costs one `limit=1` list request per other stream, and only after a first page answered
 * 404; it stops at the first list that answers anything but 404.
 */
import { z } from 'zod';
import type { ApiClient } from '../client/client.ts';
import { NotFoundError } from '../client/api-errors.ts';
import type { Priority } from '../client/rate-budget.ts';
import { ConfigError } from '../config/config-errors.ts';
import type { RegisteredStream } from '../streams/definitions.ts';

/** The part of the API's URL the client adds to the base URL (spec §1): stripped to name the base URL the user set. */
const API_PATH = /\/api\/public\/v1(\/.*)?$/;

/**
 * Every stream's list answered 404: the base URL is not the API's (a configuration error; the CLI
 * exits 2). `url` is the list URL first asked (base URL included, password masked, no query).
 */
export class WrongBaseUrlError extends ConfigError {
  override name = 'WrongBaseUrlError';
  /** The list URL that answered 404 first (base URL included, password masked). */
  readonly url: string;
  /** The base URL it was built on (the URL without the API's path). */
  readonly baseUrl: string;

  /**
   * @param url the list URL that answered 404 (NotFoundError.url)
   * @param key how the setting is named in the message: `BIZOPS_BASE_URL (baseUrl)`, or
   *   `connections.<name>.baseUrl` for one of several connections
   */
  constructor(url: string, key = 'BIZOPS_BASE_URL (baseUrl)') {
    const baseUrl = url.replace(API_PATH, '') || url;
    super(`${key}: ${baseUrl} is not the API's base URL: every stream's list answered 404 (GET ${url}); nothing was marked unsupported`);
    this.url = url;
    this.baseUrl = baseUrl;
  }

  /** The same error naming the setting `key` (a named connection's `connections.<name>.baseUrl`). */
  naming(key: string): WrongBaseUrlError {
    return new WrongBaseUrlError(this.url, key);
  }
}

/** Options of `assertBaseUrlServes`. */
export interface BaseUrlCheckOptions {
  /** The streams whose lists are asked (each once, `limit=1`), in this order. */
  streams: readonly RegisteredStream[];
  /** Priority of the requests on the rate budget. */
  priority: Priority;
  signal?: AbortSignal;
}

/**
 * Asks each stream's list for one record until one answers anything but 404 (the base URL serves the
 * API: returns). When all of them answer 404, throws WrongBaseUrlError naming `notFound`'s URL (or the
 * first 404's). Other failures (unreachable, 5xx, 401) prove nothing about the base URL: returns.
 * @param notFound the 404 that raised the question, when there was one (its stream need not be asked again)
 * @throws WrongBaseUrlError when every list asked answered 404
 */
export async function assertBaseUrlServes(client: ApiClient, notFound: NotFoundError | undefined, options: BaseUrlCheckOptions): Promise<void> {
  let first = notFound;
  for (const stream of options.streams) {
    if (notFound?.url !== undefined && notFound.url.endsWith(stream.request.path)) continue;
    try {
      await client.request({ method: 'GET', path: stream.request.path, query: { limit: 1 }, contentSchema: z.unknown(), priority: options.priority, retry: 'safe', signal: options.signal });
      return;
    } catch (error) {
      if (!(error instanceof NotFoundError)) return;
      first ??= error;
    }
  }
  if (first) throw new WrongBaseUrlError(first.url ?? first.message);
}
