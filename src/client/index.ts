/**
 * The API client (docs/architecture.md "The client"): `ApiClient` and its errors, the rate budgets
 * every request takes a slot from (in-process or shared through Redis, docs/rate-budget.md), and
 * the Redis connections they share. The face of src/client/ for jobs/ and cli/.
 */
export { ApiClient, type ApiClientOptions, type ApiClientStats, type ApiResponse, type ListOptions, type RequestOptions } from './client.ts';
export {
  AuthenticationError,
  BizopsApiError,
  ConflictError,
  ConnectionError,
  EndlessListError,
  errorLine,
  InvalidRequestError,
  InvalidResponseError,
  MalformedResponseError,
  NotFoundError,
  PermissionError,
  RateLimitError,
  RequestDeadlineError,
  ServerError,
  UnknownTokenError,
} from './api-errors.ts';
export { PRIORITIES, type Priority, type RateBudget, type RateBudgetStats } from './rate-budget.ts';
export { LocalRateBudget, type LocalRateBudgetOptions } from './local-rate-budget.ts';
export { rateBudgetKey, RedisRateBudget, type RedisRateBudgetOptions } from './redis-rate-budget.ts';
export { connectProducer, redisConnection } from './redis-connection.ts';
export { ApiUnreachableError, assertApiReachable, type ReachabilityOptions } from './reachability.ts';
export {
  escapeUnstorable,
  isStorable,
  MAX_JSON_DEPTH,
  MAX_JSON_VALUES,
  storabilityIssue,
  storabilityIssues,
  storableCopy,
  storableText,
  unstorableTextRule,
  type StorabilityIssue,
} from './storable-json.ts';
