/**
 * The simulator's admin surface under `/__admin` (no auth, not rate limited, not in the request log),
 * for the CLI and for tests in other processes:
 *
 *   GET    /__admin/state                     { counts, companies: { A, B, C1.. }, tokens: { name: token }, tokenNames,
 *                                             companyTokens: { C1: token, .. }, companyIds: { A: id, .. }, faults }
 *   GET    /__admin/request-counts            { companies: { A: CompanyRequestCounts, B, C1.. } } (per company: requests, 429s, ...)
 *   GET    /__admin/ground-truth/{stream}     { stream, records } as the list endpoint serializes them (?company=B;
 *                                             other parameters are the list's filters: ?locationId=...)
 *   POST   /__admin/faults                    body: a Fault; `match.path` is a string, or `match.pathPattern` a RegExp source
 *   DELETE /__admin/faults                    clears pending faults
 *   POST   /__admin/churn                     body { count }: one churn round; returns { changes }
 *   POST   /__admin/world/{method}            body: JSON array of arguments; returns { result } (?company=B)
 *   GET    /__admin/requests?since=ms         { requests } that arrived at or after `since`
 *
 * `?company=` takes a company key: `A` (the default), `B`, or `C1`..`CN` for the extra companies.
 * Errors answer `{ message }` with 400 (bad input) or 404 (unknown path, stream, method or company).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Fault, FaultInjector } from './faults.ts';
import { countRequestsByCompany, readBody, sendJson, type RequestLogEntry } from './server.ts';
import { STREAM_NAMES, type StreamName } from './streams/index.ts';
import { SIMULATOR_TOKENS, type TokenDefinition } from './tokens.ts';
import type { CompanyWorld, World } from './world.ts';

/** World methods callable through POST /__admin/world/{method}. */
export const ADMIN_WORLD_METHODS = [
  'createTransaction',
  'updateTransaction',
  'createDeal',
  'updateDeal',
  'closeDeal',
  'createCustomer',
  'startOnboarding',
  'advanceOnboarding',
  'completeOnboarding',
  'deleteRecord',
  'setUpdatedAt',
  'churnTick',
  'clockOut',
  'snapshot',
  'groundTruth',
  'recomputeTaxLiability',
] as const;

/** What the `/__admin` routes read and change: the world, the pending faults and the request log. */
export interface AdminDependencies {
  world: World;
  faults: FaultInjector;
  requests: RequestLogEntry[];
  /** The tokens of the extra companies C1..CN, in order (`extraCompanyTokens`). */
  extraTokens: readonly TokenDefinition[];
}

/** A 404 for an unknown `?company=`. */
class UnknownCompanyError extends Error {}

function companyOf(world: World, url: URL): CompanyWorld {
  const key = url.searchParams.get('company') ?? 'A';
  const company = world.companies[key];
  if (!company) throw new UnknownCompanyError(`company must be one of ${Object.keys(world.companies).join(', ')}, got "${key}"`);
  return company;
}

/** Handles one `/__admin` request. Never throws. */
export async function handleAdminRequest(request: IncomingMessage, response: ServerResponse, url: URL, dependencies: AdminDependencies): Promise<void> {
  const { world, faults } = dependencies;
  const method = (request.method ?? 'GET').toUpperCase();
  const path = url.pathname.replace(/\/+$/, '');
  const reply = (status: number, body: unknown) => sendJson(response, status, body, {}, Date.now);
  try {
    const raw = await readBody(request);
    let body: unknown;
    if (raw.trim() !== '') {
      try {
        body = JSON.parse(raw);
      } catch {
        reply(400, { message: 'The request body must be valid JSON' });
        return;
      }
    }
    if (method === 'GET' && path === '/__admin/state') {
      reply(200, {
        counts: world.snapshot(),
        companies: Object.fromEntries(Object.entries(world.companies).map(([key, company]) => [key, company.snapshot()])),
        tokens: SIMULATOR_TOKENS,
        tokenNames: Object.keys(SIMULATOR_TOKENS),
        companyTokens: Object.fromEntries(dependencies.extraTokens.map((definition) => [definition.company, definition.token])),
        companyIds: Object.fromEntries(Object.entries(world.companies).map(([key, company]) => [key, company.data.id])),
        faults: faults.list().map((entry) => ({ ...entry, fault: { ...entry.fault, match: entry.fault.match ? { ...entry.fault.match, path: String(entry.fault.match.path) } : undefined } })),
      });
      return;
    }
    if (method === 'GET' && path === '/__admin/request-counts') {
      reply(200, { companies: countRequestsByCompany(dependencies.requests, Object.keys(world.companies)) });
      return;
    }
    const groundTruth = /^\/__admin\/ground-truth\/([^/]+)$/.exec(path);
    if (method === 'GET' && groundTruth) {
      const stream = decodeURIComponent(groundTruth[1] ?? '') as StreamName;
      if (!STREAM_NAMES.includes(stream)) {
        reply(404, { message: `stream must be one of ${STREAM_NAMES.join(', ')}, got "${stream}"` });
        return;
      }
      // Query parameters other than `company` are the list's own filters (`?locationId=...`).
      const filters = [...url.searchParams].filter(([name]) => name !== 'company');
      reply(200, { stream, records: companyOf(world, url).groundTruth(stream, filters.length > 0 ? Object.fromEntries(filters) : undefined) });
      return;
    }
    if (path === '/__admin/faults' && method === 'POST') {
      const fault = body as (Fault & { match?: { pathPattern?: string } }) | undefined;
      if (!fault || typeof fault !== 'object' || typeof fault.kind !== 'string') {
        reply(400, { message: 'body must be a fault object with a string `kind`' });
        return;
      }
      if (fault.match?.pathPattern !== undefined) {
        const { pathPattern, ...rest } = fault.match;
        fault.match = { ...rest, path: new RegExp(pathPattern) };
      }
      faults.inject(fault);
      reply(200, { message: 'Fault injected', pending: faults.list().length });
      return;
    }
    if (path === '/__admin/faults' && method === 'DELETE') {
      faults.clear();
      reply(200, { message: 'Faults cleared' });
      return;
    }
    if (path === '/__admin/churn' && method === 'POST') {
      const count = (body as { count?: unknown } | undefined)?.count ?? 1;
      if (typeof count !== 'number' || !Number.isInteger(count) || count < 0) {
        reply(400, { message: `count must be a non-negative integer, got ${JSON.stringify(count)}` });
        return;
      }
      reply(200, { changes: companyOf(world, url).churnTick(count) });
      return;
    }
    const worldCall = /^\/__admin\/world\/([A-Za-z]+)$/.exec(path);
    if (method === 'POST' && worldCall) {
      const name = worldCall[1] as (typeof ADMIN_WORLD_METHODS)[number];
      if (!ADMIN_WORLD_METHODS.includes(name)) {
        reply(404, { message: `world method must be one of ${ADMIN_WORLD_METHODS.join(', ')}, got "${name}"` });
        return;
      }
      const args = body ?? [];
      if (!Array.isArray(args)) {
        reply(400, { message: 'body must be a JSON array of arguments' });
        return;
      }
      const target = companyOf(world, url) as unknown as Record<string, (...parameters: unknown[]) => unknown>;
      const result = (target[name] as (...parameters: unknown[]) => unknown).apply(target, args);
      reply(200, { result: result === undefined ? null : result });
      return;
    }
    if (method === 'GET' && path === '/__admin/requests') {
      const sinceText = url.searchParams.get('since');
      const since = sinceText === null ? 0 : Number(sinceText);
      if (!Number.isFinite(since)) {
        reply(400, { message: `since must be a number of ms since the epoch, got "${sinceText}"` });
        return;
      }
      reply(200, { requests: dependencies.requests.filter((entry) => entry.at >= since) });
      return;
    }
    reply(404, { message: `No admin endpoint ${method} ${path}` });
  } catch (error) {
    reply(error instanceof UnknownCompanyError ? 404 : 400, { message: error instanceof Error ? error.message : String(error) });
  }
}
