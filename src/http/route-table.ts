/**
 * The route table of the daemon's HTTP port: every route the server answers is mounted here from its
 * declaration (route.ts), and only here. For each request it finds the routes of the path, checks the
 * bearer key the route's access asks for (401), the method (405 with `Allow`), then decodes the path
 * parameters and validates them, the query and the body with the route's zod schemas (400, 413,
 * 415), and only then calls the handler with the parsed input. `registered()` lists what is mounted
 * (method and documented path), which the OpenAPI test compares with the document.
 *
 * A route whose access needs a key that is not configured is not mounted (the route is off: 404).
 * A route declared `perConnection` is mounted once per connection under `/connections/NAME`, and
 * bare for a deployment of one connection (`mount(routes, prefix)`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { z } from 'zod';
import { BearerKey } from './bearer.ts';
import { readRouteBody } from './request-body.ts';
import { RouteRefusal, type Route, type RouteAccess, type RouteInput, type RouteMethod } from './route.ts';

/** A prefix routes are mounted under: the literal one matched and the template the document shows. */
export interface RoutePrefix {
  /** `/connections/erp` (URL-encoded name). */
  literal: string;
  /** `/connections/{connection}`. */
  documented: string;
}

/** What the table checks keys against, and how it names unknown paths. */
export interface RouteTableOptions {
  /** config `http.readApiKey`: the `read` and `console` routes are off without it. */
  readKey?: string | undefined;
  /** config `http.writeApiKey`: the `write` routes are off without it. */
  writeKey?: string | undefined;
}

/** A mounted route as the document names it. */
export interface MountedRoute {
  method: RouteMethod;
  /** The documented path (`/connections/{connection}/changes`). */
  path: string;
  operationId: string;
}

interface Entry {
  route: Route;
  pattern: RegExp;
  names: string[];
  documentedPath: string;
  /** The template's text before its first `{name}` (the whole path when it has none): a path not starting with it cannot match. */
  literalPrefix: string;
}

/** The 401 of each key, naming the header and the setting (never the key). */
const WRONG_KEY: Record<'read' | 'write', string> = {
  read: 'Authorization: missing or wrong bearer key; send Authorization: Bearer <http.readApiKey>',
  write: 'Authorization: missing or wrong bearer key; send Authorization: Bearer <http.writeApiKey>',
};

/** Routes matched by method and path template (module comment). */
export class RouteTable {
  readonly #entries: Entry[] = [];
  /** The entries of templates without parameters, by path (one lookup instead of a pattern each). */
  readonly #literal = new Map<string, Entry[]>();
  /** The entries of templates with parameters, matched by pattern. */
  readonly #templated: Entry[] = [];
  readonly #options: RouteTableOptions;
  readonly #keys: Record<'read' | 'write', BearerKey | undefined>;

  constructor(options: RouteTableOptions = {}) {
    this.#options = options;
    this.#keys = { read: options.readKey ? new BearerKey(options.readKey) : undefined, write: options.writeKey ? new BearerKey(options.writeKey) : undefined };
  }

  /**
   * Mounts `routes` (under `prefix` for per-connection routes; a route that is not per connection
   * ignores it). A route whose key is not configured is left out.
   * @throws Error when a method and path are mounted twice (a declaration mistake)
   */
  mount(routes: readonly Route[], prefix?: RoutePrefix): this {
    for (const route of routes) {
      if (!this.#keyConfigured(route.spec.access)) continue;
      const prefixed = prefix !== undefined && route.spec.perConnection === true;
      const template = `${prefixed ? prefix.literal : ''}${route.spec.path}`;
      const documentedPath = `${prefixed ? prefix.documented : ''}${route.spec.path}`;
      const names: string[] = [];
      const source = template
        .split(/(\{[^}]+\})/)
        .map((part) => {
          const name = /^\{([^}]+)\}$/.exec(part)?.[1];
          if (name === undefined) return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
          names.push(name);
          return '([^/]+)';
        })
        .join('');
      const pattern = new RegExp(`^${source}$`);
      if (this.#entries.some((entry) => entry.pattern.source === pattern.source && entry.route.spec.method === route.spec.method)) {
        throw new Error(`route ${route.spec.method} ${template} is mounted twice`);
      }
      const entry: Entry = { route, pattern, names, documentedPath, literalPrefix: template.split('{')[0]! };
      this.#entries.push(entry);
      if (names.length === 0) {
        const atPath = this.#literal.get(template);
        if (atPath) atPath.push(entry);
        else this.#literal.set(template, [entry]);
      } else {
        this.#templated.push(entry);
      }
    }
    return this;
  }

  /**
   * True when `request` carries one of the configured keys (`Authorization: Bearer <key>`, read or
   * write), compared in constant time with the `BearerKey`s the table built; false without keys.
   */
  carriesKey(request: IncomingMessage): boolean {
    return Boolean(this.#keys.read?.matches(request) || this.#keys.write?.matches(request));
  }

  /** Every mounted route: method, documented path, operationId. */
  registered(): MountedRoute[] {
    return this.#entries.map((entry) => ({ method: entry.route.spec.method, path: entry.documentedPath, operationId: entry.route.spec.operationId }));
  }

  /**
   * Answers the request when a mounted route takes its path.
   * @returns false when no route takes the path (nothing was answered: the caller's 404 applies)
   */
  async handle(request: IncomingMessage, response: ServerResponse): Promise<boolean> {
    const url = new URL(request.url ?? '/', 'http://daemon.local');
    const pathname = url.pathname.length > 1 ? url.pathname.replace(/\/+$/, '') || '/' : url.pathname;
    const atPath = this.#atPath(pathname);
    if (atPath.length === 0) return false;
    const method = request.method === 'HEAD' ? 'GET' : (request.method ?? 'GET');
    const entry = atPath.find((candidate) => candidate.route.spec.method === method);
    const route = (entry ?? atPath[0]!).route;
    try {
      const access = route.spec.access;
      if (access === 'read' || access === 'write') {
        const key = this.#keys[access];
        if (!key || !key.matches(request)) throw new RouteRefusal(401, 'authorization', WRONG_KEY[access], { headers: { 'www-authenticate': 'Bearer' } });
      }
      if (!entry) {
        const allowed: string[] = [...new Set(atPath.map((candidate) => candidate.route.spec.method))];
        if (allowed.includes('GET')) allowed.splice(allowed.indexOf('GET') + 1, 0, 'HEAD');
        throw new RouteRefusal(405, 'method', `method: ${pathname} answers ${allowed.join(', ')} only`, { allow: allowed.join(', '), headers: { allow: allowed.join(', ') } });
      }
      const spec = entry.route.spec;
      const input = spec.body && spec.body.checkedBy !== 'handler' ? await parseInputWithBody(entry, pathname, url, request) : parseInput(entry, pathname, url, request);
      await entry.route.handle(request, response, input as never);
    } catch (error) {
      if (!(error instanceof RouteRefusal)) throw error;
      if (response.headersSent) {
        response.destroy();
        return true;
      }
      await (route.refuse ?? refuseAsJson)(request, response, error);
    }
    return true;
  }

  /** The entries whose template matches `pathname`, in the order they were mounted. */
  #atPath(pathname: string): Entry[] {
    const literal = this.#literal.get(pathname);
    let templated: Entry[] | undefined;
    for (const entry of this.#templated) {
      if (pathname.startsWith(entry.literalPrefix) && entry.pattern.test(pathname)) (templated ??= []).push(entry);
    }
    if (!templated) return literal ?? [];
    if (!literal) return templated;
    return [...literal, ...templated].sort((a, b) => this.#entries.indexOf(a) - this.#entries.indexOf(b));
  }

  #keyConfigured(access: RouteAccess): boolean {
    if (access === 'read' || access === 'console' || access === 'console-open') return Boolean(this.#options.readKey);
    if (access === 'write') return Boolean(this.#options.writeKey);
    return true;
  }
}

/** `parseInput` of a route whose body the table reads and validates. */
async function parseInputWithBody(entry: Entry, pathname: string, url: URL, request: IncomingMessage): Promise<RouteInput> {
  const spec = entry.route.spec;
  const input = parseInput(entry, pathname, url, request);
  input.body = checked(spec.body!.schema, (await readRouteBody(request, spec.body!)).value, 'body') as never;
  return input;
}

/**
 * The path parameters (decoded) and query, each validated with the route's schemas (the query by
 * the route's `quickQuery` first when it has one); the body undefined (`parseInputWithBody` reads it).
 */
function parseInput(entry: Entry, pathname: string, url: URL, request: IncomingMessage): RouteInput {
  const spec = entry.route.spec;
  const match = entry.pattern.exec(pathname)!;
  const rawParams: Record<string, string> = {};
  entry.names.forEach((name, index) => {
    const segment = match[index + 1]!;
    try {
      rawParams[name] = decodeURIComponent(segment);
    } catch {
      throw new RouteRefusal(400, name, `${name}: malformed %-escape in the path (each % must be followed by two hex digits of UTF-8)`);
    }
  });
  const params = spec.params ? checked(spec.params, rawParams, undefined) : rawParams;
  const query = spec.query ? (spec.quickQuery?.(url.searchParams) ?? checked(spec.query, Object.fromEntries(url.searchParams), undefined)) : {};
  const headers = spec.headers ? checked(spec.headers, request.headers, undefined) : {};
  return { params, query, headers, body: undefined, url } as RouteInput;
}

/**
 * `schema`'s output for `value`.
 * @throws RouteRefusal 400 for the first issue: its parameter (the issue's first path element, else
 *   `fallback`), its message (prefixed with the parameter unless it names it already) and the issue's
 *   `params` as extra members of the answer
 */
function checked(schema: z.ZodType, value: unknown, fallback: string | undefined): unknown {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const parameter = issue.path.length > 0 ? String(issue.path[0]) : (fallback ?? 'input');
  const message = issue.message.startsWith(`${parameter}:`) || issue.message.startsWith(`${parameter}[`) ? issue.message : `${parameter}: ${issue.message}`;
  const details = issue.code === 'custom' && issue.params ? (issue.params as Record<string, unknown>) : {};
  return rejectWith(new RouteRefusal(400, parameter, message, details));
}

function rejectWith(refusal: RouteRefusal): never {
  throw refusal;
}

/**
 * The default answer to a refusal: JSON `{ error, parameter, ...details }` with its status and the
 * headers it carries (`details.headers`: `WWW-Authenticate`, `Allow`), no caching.
 */
export function refuseAsJson(request: IncomingMessage, response: ServerResponse, refusal: RouteRefusal): void {
  const { headers, ...details } = refusal.details as { headers?: Record<string, string> };
  const text = `${JSON.stringify({ error: refusal.message, parameter: refusal.parameter, ...details })}\n`;
  response.writeHead(refusal.status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(text)),
    'cache-control': 'no-store',
    ...headers,
  });
  response.end(request.method === 'HEAD' ? undefined : text);
}
