/**
 * What every endpoint handler receives and returns. Handlers are synchronous: each request is answered
 * from one consistent instant of the world.
 */
import type { ListFault } from '../faults.ts';
import type { EmployeeRecord } from '../records.ts';
import type { TokenDefinition } from '../tokens.ts';
import type { CompanyWorld, World } from '../world.ts';

/** What a handler receives: the request, the authenticated token, its company and employee (spec §5), and the world. */
export interface RequestContext {
  method: string;
  /** Path relative to `/api/public/v1`, e.g. `/deals/deal_x/close`. */
  path: string;
  /** Path parameters by name. */
  params: Record<string, string>;
  query: URLSearchParams;
  /** The parsed JSON body (undefined when none was sent). */
  body: unknown;
  token: TokenDefinition;
  /** Scopes of the token. */
  scopes: ReadonlySet<string>;
  /** The token's company. */
  company: CompanyWorld;
  /** The employee the token acts as (spec §5.2). */
  employee: EmployeeRecord;
  world: World;
  /** A list fault taken for this request (list endpoints apply it; others ignore it). */
  listFault?: ListFault;
}

/** A successful answer: status 200 with `{ message, content }` (spec §1.3). */
export interface HandlerResult {
  message: string;
  content: Record<string, unknown>;
}

/**
 * One endpoint: method, path, required scope and handler. The handler throws HttpError for error
 * answers (spec §7); the server checks the scope (403) before calling it.
 */
export interface Route {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Relative path with `{name}` parameters, e.g. `/deals/{dealId}/close`. */
  path: string;
  /** The scope required (spec §4, §5.3); null for none. */
  scope: string | null;
  handler: (context: RequestContext) => HandlerResult;
}
