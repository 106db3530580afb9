/** Small HTTP helpers for the simulator tests: real requests with fetch (undici). */
import type { RunningSimulator } from '../src/index.ts';

export interface ApiResponse {
  status: number;
  headers: Headers;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
  body: any;
}

/**
 * Calls `/api/public/v1{path}` with the admin token unless another is given.
 * @param options.token bearer token; null sends no Authorization header
 */
export async function api(
  simulator: RunningSimulator,
  path: string,
  options: { method?: string; body?: unknown; token?: string | null } = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = { 'Content-Type': 'application/json' };
  const token = options.token === undefined ? simulator.tokens.admin : options.token;
  if (token !== null) headers.Authorization = `Bearer ${token}`;
  const response = await fetch(`${simulator.url}/api/public/v1${path}`, {
    method: options.method ?? 'GET',
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text === '' ? undefined : JSON.parse(text) };
}

/** Pages through a list endpoint by advancing offset by limit while hasMore (spec §1); returns every item. */
export async function pageAll(simulator: RunningSimulator, path: string, itemsKey: string, limit = 100, token?: string): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  const separator = path.includes('?') ? '&' : '?';
  for (let offset = 0; ; offset += limit) {
    const response = await api(simulator, `${path}${separator}limit=${limit}&offset=${offset}`, { token });
    if (response.status !== 200) throw new Error(`${path} answered ${response.status}: ${JSON.stringify(response.body)}`);
    items.push(...response.body.content[itemsKey]);
    if (!response.body.content.pagination.hasMore) return items;
  }
}
