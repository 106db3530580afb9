/**
 * The probes' one request (src/sync/change-probe.ts, src/sync/record-clock-probe.ts): a stream's
 * list asked for one item (`limit=1`, its fixed filters and the probe's query) and read for its
 * `pagination.total` and the server's clock only; and how a probe's failure is told apart.
 */
import { BizopsApiError } from '../client/api-errors.ts';
import type { ApiClient } from '../client/client.ts';
import type { Priority } from '../client/rate-budget.ts';
import { paginationSchema } from '../client/schemas.ts';
import type { StreamDefinition } from '../streams/define-stream.ts';
import { z } from 'zod';

/** A list answer read for its count only (`content.pagination`). */
const COUNT_CONTENT = z.looseObject({ pagination: paginationSchema });

/** How a probe's requests go: the run's priority, abort signal and lease check. */
export interface ProbeRequestOptions {
  priority: Priority;
  signal?: AbortSignal;
  /** The run's lease check (throws LeaseLostError: no request leaves). */
  beforeRequest: () => Promise<void>;
}

/** What one count request read. */
export interface ListCount {
  /** The list's `pagination.total` under the query. */
  total: number;
  /** The server's `Date` header, epoch ms; absent when it sent none. */
  serverTimeMs?: number;
  /** The local clock when the request was sent, epoch ms. */
  sentAtMs: number;
}

/**
 * One request of one item of `stream`'s list under `query` (safe to retry, at the run's priority).
 * @throws what `ApiClient.request` throws (BizopsApiError, LeaseLostError from the lease check, the abort)
 */
export async function countListItems(client: ApiClient, stream: StreamDefinition, query: Record<string, string>, options: ProbeRequestOptions): Promise<ListCount> {
  const sentAtMs = Date.now();
  const response = await client.request({
    method: 'GET',
    path: stream.request.path,
    query: { ...stream.request.filters, ...query, limit: 1 },
    contentSchema: COUNT_CONTENT,
    priority: options.priority,
    retry: 'safe',
    signal: options.signal,
    hooks: { beforeRequest: options.beforeRequest },
  });
  return { total: response.content.pagination.total, ...(response.serverTime ? { serverTimeMs: response.serverTime.getTime() } : {}), sentAtMs };
}

/**
 * The HTTP status when `error` is the list refusing the probe itself (a 4xx other than 429: not
 * asked again by this process); undefined for anything else (a 429, a 5xx, a network failure).
 */
export function probeRefusalStatus(error: unknown): number | undefined {
  const status = error instanceof BizopsApiError ? error.status : undefined;
  return status !== undefined && status >= 400 && status < 500 && status !== 429 ? status : undefined;
}
