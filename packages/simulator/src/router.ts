/**
 * Matches a method and a relative path (`/deals/deal_x/close`) to a route and its path parameters.
 */
import type { Route } from './routes/types.ts';

interface CompiledRoute {
  route: Route;
  pattern: RegExp;
  names: string[];
}

/** What `Router.match` found: the route and its decoded path parameters, the methods allowed on the path (405), or nothing (404). */
export type RouteMatch = { kind: 'found'; route: Route; params: Record<string, string> } | { kind: 'method-not-allowed'; allowed: string[] } | { kind: 'not-found' };

/** Matches a method and a path relative to `/api/public/v1` against the routes, in the order given. */
export class Router {
  private readonly compiled: CompiledRoute[];

  constructor(routes: readonly Route[]) {
    this.compiled = routes.map((route) => {
      const names: string[] = [];
      const source = route.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{(\w+)\}/g, (_whole, name: string) => {
        names.push(name);
        return '([^/]+)';
      });
      return { route, pattern: new RegExp(`^${source}/?$`), names };
    });
  }

  match(method: string, path: string): RouteMatch {
    const allowed: string[] = [];
    for (const entry of this.compiled) {
      const found = entry.pattern.exec(path);
      if (!found) continue;
      if (entry.route.method !== method) {
        allowed.push(entry.route.method);
        continue;
      }
      const params: Record<string, string> = {};
      entry.names.forEach((name, index) => {
        params[name] = decodeURIComponent(found[index + 1] ?? '');
      });
      return { kind: 'found', route: entry.route, params };
    }
    return allowed.length > 0 ? { kind: 'method-not-allowed', allowed } : { kind: 'not-found' };
  }
}
