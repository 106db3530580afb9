/**
 * The API client's public surface (spec §1, §5, §7, §8): `ApiClient`, the rate budgets, the typed
 * errors, the retry policy helpers and the response schemas.
 */
export {
  ApiClient,
  API_PREFIX,
  LIST_PAGE_LIMIT,
  parseRateLimitHeaders,
  type ApiClientOptions,
  type ApiClientStats,
  type ApiResponse,
  type ListOptions,
  type Page,
  type RequestOptions,
} from './client.ts';
export * from './errors.ts';
export { buildQueryString, describeRequest, type HttpRequest, type HttpResponse, type HttpTransport, type HttpTransportOptions, type Query, type QueryValue, createHttpTransport } from './http.ts';
export { LocalRateBudget, type LocalRateBudgetOptions, type LocalRateBudgetStats } from './local-rate-budget.ts';
export { PRIORITIES, type Priority, type RateBudget, type RateBudgetStats, type RateLimitObservation } from './rate-budget.ts';
export { backoffDelayMs, isRetryable, parseRetryAfter, withRetry, type RetryEvent, type RetryOptions, type RetryPolicy, type WithRetryOptions } from './retry.ts';
export * from './schemas.ts';
