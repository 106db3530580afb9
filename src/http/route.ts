/**
 * A route of the daemon's HTTP port, declared once (docs/operations.md "The HTTP API"): its method,
 * its path template, the zod schemas of its path parameters, query and body, its responses, and who
 * may call it. The route table (route-table.ts) matches requests against these declarations and
 * validates the input with their schemas before the handler runs; the OpenAPI document
 * (openapi.ts, `GET /openapi.json`, docs/openapi.json) is generated from the same declarations, so
 * the document and the server cannot disagree.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';

/** The methods a route declares (a GET route answers HEAD too, without a body). */
export type RouteMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/**
 * Who may call a route:
 * - `public`: anyone (the orchestrators' `/healthz`, `/readyz`, `/metrics`, and `/openapi.json`);
 * - `read`: `Authorization: Bearer <http.readApiKey>`; the route is off (404) without that key;
 * - `write`: `Authorization: Bearer <http.writeApiKey>`; off without that key;
 * - `console`: the operator console's own rule (a session cookie or the read bearer key), checked
 *   by its handler; off without the read key;
 * - `console-open`: the console's sign-in, sign-out and stylesheet: anyone, but off without the read key.
 */
export type RouteAccess = 'public' | 'read' | 'write' | 'console' | 'console-open';

/** One documented answer of a route. */
export interface RouteResponse {
  description: string;
  /** The body per media type; a schema-less entry (`undefined`) documents the media type only (HTML, CSS, Prometheus text). */
  content?: Record<string, z.ZodType | undefined>;
  /** Response headers worth knowing, each with its description. */
  headers?: Record<string, string>;
}

/** A route's request body. */
export interface RouteBody {
  mediaType: 'application/json' | 'application/x-www-form-urlencoded';
  /** The body's schema. A JSON body is an object; an empty body is read as `{}`. */
  schema: z.ZodType;
  /** True when the body must be present (the document says so; an empty one is refused). */
  required: boolean;
  /** Largest body read, bytes (a larger one is a 413). */
  maxBytes: number;
  /**
   * `table` (default): the route table reads the body and validates it with `schema` before the
   * handler runs. `handler`: the handler reads it (request-body.ts `readRouteBody`) and validates it
   * with the zod schemas `schema` is made of (the write API: the write kinds' payload schemas, after
   * the storability rule, so that each issue names its field: docs/writes.md "Intake"; the console's
   * forms, after its session and origin checks).
   */
  checkedBy?: 'table' | 'handler';
  /** The body's shape in a few words, for the error of a body that is not JSON (`{ "seq": SEQ }`). */
  shape?: string;
}

/** Where a per-connection route is mounted for each connection, as the document shows it. */
export const CONNECTION_PREFIX = '/connections/{connection}';

/** A route's declaration: what it takes and answers (module comment). */
export interface RouteSpec {
  method: RouteMethod;
  /** The path template, OpenAPI style: `/consumers/{name}/ack`. */
  path: string;
  /** A unique name of the operation (`ackConsumer`): the OpenAPI `operationId`. */
  operationId: string;
  /** One line. */
  summary: string;
  /** More, in Markdown. */
  description?: string;
  /** The group it is listed under in the document (`changes`, `writes`, ...). */
  tags: readonly string[];
  access: RouteAccess;
  /**
   * True for a route that serves one connection's data: it is mounted at
   * `/connections/{connection}<path>` for every connection, and at `<path>` when there is only one
   * (docs/operations.md "Many companies").
   */
  perConnection?: boolean;
  /** The path parameters, one per `{name}` of `path`. */
  params?: z.ZodObject;
  /** The query parameters (a parameter given twice: the last value). */
  query?: z.ZodObject;
  /**
   * A hand-written parse of the query's common case, tried before `query` on every request: what
   * `query` would output for these parameters, or undefined to leave the request to `query` (which
   * then parses it, or explains its refusal). It must never accept what `query` refuses nor output
   * anything else (the route's tests compare the two).
   */
  quickQuery?: (query: URLSearchParams) => object | undefined;
  /** The request headers the route reads, names in lower case (`idempotency-key`). */
  headers?: z.ZodObject;
  body?: RouteBody;
  /** Every answer by status. */
  responses: Record<number, RouteResponse>;
}

/** What the handler of a route receives: the validated input (the schemas' outputs) and the URL. */
export interface RouteInput<S extends RouteSpec = RouteSpec> {
  params: S['params'] extends z.ZodObject ? z.output<S['params']> : Record<string, never>;
  query: S['query'] extends z.ZodObject ? z.output<S['query']> : Record<string, never>;
  headers: S['headers'] extends z.ZodObject ? z.output<S['headers']> : Record<string, never>;
  body: S['body'] extends RouteBody ? (S['body']['checkedBy'] extends 'handler' ? undefined : z.output<S['body']['schema']>) : undefined;
  url: URL;
}

/**
 * Why a request is refused before or inside a handler: the HTTP status, the parameter at fault
 * (`after`, `name`, `body`, `method`, ...), one line naming it and the rule, and any extra members
 * of the JSON answer (e.g. `knownTypes`, `allow`).
 */
export class RouteRefusal extends Error {
  override name = 'RouteRefusal';
  readonly status: number;
  readonly parameter: string;
  readonly details: Record<string, unknown>;

  constructor(status: number, parameter: string, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.status = status;
    this.parameter = parameter;
    this.details = details;
  }
}

/** A declared route with its handler, ready for a route table. */
export interface Route<S extends RouteSpec = RouteSpec> {
  spec: S;
  /** Answers the request; may throw `RouteRefusal` (answered by `refuse`). */
  handle(request: IncomingMessage, response: ServerResponse, input: RouteInput<S>): Promise<void>;
  /**
   * Answers a refusal (bad input, wrong method, wrong key). Default: JSON
   * `{ error, parameter, ...details }` with the refusal's status (route-table.ts `refuseAsJson`).
   */
  refuse?(request: IncomingMessage, response: ServerResponse, refusal: RouteRefusal): Promise<void> | void;
}

/** A spec kept with its literal types (for `RouteInput` typing). */
export function defineRouteSpec<const S extends RouteSpec>(spec: S): S {
  return spec;
}

/** A route: a spec and its handler (and optionally its own way of answering refusals). */
export function route<S extends RouteSpec>(spec: S, handle: Route<S>['handle'], refuse?: Route<S>['refuse']): Route {
  return { spec, handle, ...(refuse ? { refuse } : {}) } as unknown as Route;
}

/** The JSON body of every refusal: one line naming the parameter and the rule (`Error`). */
export const ERROR_BODY = z
  .looseObject({
    error: z.string().meta({ description: 'One line naming the parameter and the rule.' }),
    parameter: z.string().optional().meta({ description: 'The parameter at fault (`after`, `name`, `body`, `method`, ...).' }),
  })
  .meta({ id: 'Error' });

/** A documented refusal with the `Error` body. */
export function errorResponse(description: string): RouteResponse {
  return { description, content: { 'application/json': ERROR_BODY } };
}
