/**
 * The API simulator: a faithful local implementation of the Business Operations Public API (the spec,
 * every endpoint of §4 plus the assumed GET /deals and GET /customers) over real HTTP, with
 * deterministic seeded data, scopes, pagination, the per-company rate limit, fault injection and
 * churn. Tests, benchmarks and the demo run against it.
 *
 *   const simulator = await startSimulator({ seed: 1, rateLimit: { limit: 60, windowMs: 1000 } });
 *   await fetch(`${simulator.url}/api/public/v1/transactions?limit=100`, {
 *     headers: { Authorization: `Bearer ${simulator.tokens.admin}` },
 *   });
 *   simulator.faults.inject({ kind: 'status', status: 503, match: { path: '/transactions' } });
 *   simulator.world.createTransaction({ type: 'INCOME', amount: 1200 });
 *   await simulator.close();
 *
 * Many companies (one server, each company its own data and rate budget):
 *
 *   const simulator = await startSimulator({ companies: 20, extraCompanySizes: { transactions: 10_000 } });
 *   simulator.companies[0];            // { k: 1, key: 'C1', token: 'sim-company-1-token', id: 'com_...', world }
 *   simulator.requestCounts().C1;      // { requests, rateLimited, counted, byStatus }
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { handleAdminRequest } from './admin.ts';
import { FaultInjector } from './faults.ts';
import { FixedWindowRateLimiter, type RateLimitSettings } from './rate-limit.ts';
import { Router } from './router.ts';
import { ROUTES } from './routes/index.ts';
import { API_PREFIX, countRequestsByCompany, handleApiRequest, sendJson, type CompanyRequestCounts, type RequestLogEntry } from './server.ts';
import { extraCompanyTokens, SIMULATOR_TOKENS, tokenLookup, type ExtraCompanyKey, type SimulatorTokens } from './tokens.ts';
import { DEFAULT_SIZES, STREAM_NAMES, type StreamName, type StreamSizes } from './streams/index.ts';
import { companyBSizes, World, type CompanyWorld } from './world.ts';

export { FaultInjector } from './faults.ts';
export type { Fault, FaultKind, FaultMatch } from './faults.ts';
export type { CompanyRequestCounts, RequestLogEntry } from './server.ts';
export { API_PREFIX, countRequestsByCompany } from './server.ts';
export type { RateLimitSettings } from './rate-limit.ts';
export { ALL_SCOPES, extraCompanyKey, extraCompanyToken, READ_SCOPES, SIMULATOR_TOKENS, SPEC_SCOPES, TOKEN_TABLE } from './tokens.ts';
export type { CompanyKey, ExtraCompanyKey, ExtraTokenName, SimulatorTokens, TokenDefinition, TokenName } from './tokens.ts';
export { CompanyWorld, World } from './world.ts';
export type { ChurnChange, WorldCompanies, WorldSnapshot } from './world.ts';
export type { UndeclaredField } from './company-data.ts';
export type * from './records.ts';
export { DEFAULT_SIZES, registerSimulatedStream, SIMULATED_STREAMS, simulatedStream, STREAM_NAMES } from './streams/index.ts';
export type { RecordOf, SimulatedStream, StreamName, StreamRecords, StreamSizes } from './streams/index.ts';

/** Options of `startSimulator`; every member has a default. */
export interface SimulatorOptions {
  /** Default '127.0.0.1'. */
  host?: string;
  /** Default 0 (a random free port). */
  port?: number;
  /** Default 1; the same seed gives the same data. */
  seed?: number;
  /**
   * Company A's stream sizes by stream name; a stream left out takes its declaration's default
   * (`DEFAULT_SIZES`: 500 transactions, 200 deals, 40 onboardings, 100 customers, ...). Company B gets a tenth.
   */
  size?: Partial<StreamSizes>;
  /**
   * Per-company budget (spec §8): `limit` requests per fixed window of `windowMs`, windows anchored
   * at `anchorMs` (default: the simulator's start; 0 aligns them to epoch multiples), `X-RateLimit-Reset`
   * in whole seconds rounded up (the spec's format; `resetPrecision: 'exact'` for the fractional end).
   * Default { limit: 60, windowMs: 60000 }; false disables the limit and its headers.
   */
  rateLimit?: RateLimitSettings | false;
  /** Random churn every `intervalMs`, `perTick` changes each (default 1). Default false. */
  churn?: { intervalMs: number; perTick?: number } | false;
  /** Added to every API response, in ms. Default 0. */
  latencyMs?: number;
  /** ms epoch source for createdAt/updatedAt and the Date header. Default Date.now. */
  clock?: () => number;
  /**
   * How far the records' clock lags the `Date` header, ms: createdAt/updatedAt are stamped with
   * `clock() - recordClockLagMs` while `Date` says `clock()` (a database clock behind the web
   * server's). Default 0; negative puts the records' clock ahead.
   */
  recordClockLagMs?: number;
  /**
   * ms epoch the seed data is anchored to (records are created in the year before it). Default: the
   * clock at start truncated to the UTC day, so two simulators started the same day with the same
   * seed hold identical data.
   */
  anchor?: number;
  /**
   * Creates stream records in bursts of this mean size sharing one createdAt (ties under
   * `sortBy=createdAt`; pair with the `unstable-order` fault). Default: no bursts.
   */
  createdInBursts?: number;
  /**
   * Extra companies beyond A and B (default 0): companies C1..CN, each with its own seeded data
   * (`extraCompanySizes`), one admin token with every scope (`sim-company-<k>-token`, k = 1..N), its
   * own rate budget (the same `rateLimit`), and its own admin surface (`/__admin/...?company=C<k>`).
   * Companies A and B are the same with or without them. 20 companies of 10,000 transactions build
   * in about 1-2 s.
   */
  companies?: number;
  /** Stream sizes of each extra company; a missing member defaults to company B's (a tenth of A's, at least 5). */
  extraCompanySizes?: Partial<StreamSizes>;
}

/** One extra company of a running simulator (the `companies` option). */
export interface SimulatedCompany {
  /** 1-based index k. */
  k: number;
  /** Its company key in the world, the request log and `?company=` of the admin surface: `C<k>`. */
  key: ExtraCompanyKey;
  /** Its admin bearer token (every scope): `sim-company-<k>-token`. */
  token: string;
  /** Its company id as the API reports it (`GET /test-token` content.companyId). */
  id: string;
  /** Its ground truth, mutable by tests (same methods as `simulator.world`). */
  world: CompanyWorld;
}

/** A started simulator: its base URL, tokens, ground truth, fault injector and request log. */
export interface RunningSimulator {
  /** The {base_url}, e.g. http://127.0.0.1:40123 (API paths add /api/public/v1). */
  url: string;
  tokens: SimulatorTokens;
  /** The ground truth, mutable by tests. */
  world: World;
  faults: FaultInjector;
  /** Every API request received (admin requests excluded), in arrival order. */
  requests: RequestLogEntry[];
  /** The extra companies C1..CN in order (`companies[k - 1]` is company k); empty without the `companies` option. */
  companies: SimulatedCompany[];
  /** Extra company k (1-based). @throws RangeError when there is no company k */
  company(k: number): SimulatedCompany;
  /**
   * The request log counted per company key (`A`, `B`, `C1`..; every company present): requests,
   * 429s, requests counted against the budget, responses by status. Also `GET /__admin/request-counts`.
   */
  requestCounts(): Record<string, CompanyRequestCounts>;
  /**
   * Closes the port: new connections are refused (ECONNREFUSED) and open ones destroyed, while the
   * world (and churn) goes on, until `acceptConnections()`. For an API that is down.
   */
  refuseConnections(): Promise<void>;
  /** Listens again on the same port after `refuseConnections()` (nothing when listening). */
  acceptConnections(): Promise<void>;
  /** Stops churn, closes every socket and the server. */
  close(): Promise<void>;
}

/** The members of `sizes` that are set (a member left out or undefined keeps its default). */
function definedMembers(sizes: Partial<StreamSizes> | undefined): Partial<StreamSizes> {
  return Object.fromEntries(Object.entries(sizes ?? {}).filter(([, value]) => value !== undefined));
}

/**
 * Starts a simulator listening on `host:port`.
 * @throws Error when the port cannot be bound or an option is invalid (e.g. rateLimit.limit < 1)
 */
export async function startSimulator(options: SimulatorOptions = {}): Promise<RunningSimulator> {
  const clock = options.clock ?? Date.now;
  const anchor = options.anchor ?? Math.floor(clock() / 86_400_000) * 86_400_000;
  const extraCount = options.companies ?? 0;
  if (!Number.isInteger(extraCount) || extraCount < 0) throw new Error(`companies must be a non-negative integer, got ${String(extraCount)}`);
  const sizes: StreamSizes = { ...DEFAULT_SIZES, ...definedMembers(options.size) };
  for (const [name, value] of Object.entries(sizes)) {
    if (!STREAM_NAMES.includes(name as StreamName)) throw new Error(`size.${name} is not a simulated stream; expected one of ${STREAM_NAMES.join(', ')}`);
    if (!Number.isInteger(value) || value < 0) throw new Error(`size.${name} must be a non-negative integer, got ${String(value)}`);
  }
  // A member left out (or undefined) keeps company B's size.
  const extraCompanySizes: StreamSizes = { ...companyBSizes(sizes), ...definedMembers(options.extraCompanySizes) };
  for (const [name, value] of Object.entries(extraCompanySizes)) {
    if (!Number.isInteger(value) || value < 0) throw new Error(`extraCompanySizes.${name} must be a non-negative integer, got ${String(value)}`);
  }
  const world = new World({
    seed: options.seed ?? 1,
    sizes,
    anchorMs: anchor,
    clock: options.recordClockLagMs ? () => clock() - (options.recordClockLagMs ?? 0) : clock,
    createdInBursts: options.createdInBursts,
    extraCompanies: extraCount,
    extraCompanySizes,
  });
  const extraTokens = extraCompanyTokens(extraCount);
  const companies: SimulatedCompany[] = extraTokens.map((definition, index) => {
    const company = world.company(definition.company);
    return { k: index + 1, key: definition.company as ExtraCompanyKey, token: definition.token, id: company.data.id, world: company };
  });
  const faults = new FaultInjector();
  const requests: RequestLogEntry[] = [];
  const rateLimit = options.rateLimit === undefined ? { limit: 60, windowMs: 60_000 } : options.rateLimit;
  const limiter = rateLimit === false ? null : new FixedWindowRateLimiter(rateLimit);
  const router = new Router(ROUTES);
  const apiDependencies = { world, tokens: tokenLookup(extraCount), faults, limiter, router, requests, latencyMs: options.latencyMs ?? 0, clock };

  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', 'http://simulator.local');
    if (url.pathname === '/__admin' || url.pathname.startsWith('/__admin/')) {
      void handleAdminRequest(request, response, url, { world, faults, requests, extraTokens });
    } else if (url.pathname === API_PREFIX || url.pathname.startsWith(`${API_PREFIX}/`)) {
      void handleApiRequest(request, response, url, apiDependencies).catch((error: unknown) => {
        if (!response.headersSent) sendJson(response, 500, { message: 'Internal simulator error', err: String(error) }, {}, clock);
      });
    } else {
      sendJson(response, 404, { message: `Not found: paths start with ${API_PREFIX}` }, {}, clock);
    }
  });
  server.keepAliveTimeout = 10_000;
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, options.host ?? '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen(options.port ?? 0);
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  let churnTimer: NodeJS.Timeout | undefined;
  if (options.churn) {
    const { intervalMs, perTick = 1 } = options.churn;
    churnTimer = setInterval(() => world.churnTick(perTick), intervalMs);
    churnTimer.unref();
  }

  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${address.port}`,
    tokens: { ...SIMULATOR_TOKENS },
    world,
    faults,
    requests,
    companies,
    company(k: number) {
      const company = companies[k - 1];
      if (!company || !Number.isInteger(k)) {
        throw new RangeError(companies.length === 0 ? `company ${k}: this simulator has no extra companies (start it with the companies option)` : `company k must be an integer from 1 to ${companies.length}, got ${k}`);
      }
      return company;
    },
    requestCounts: () => countRequestsByCompany(requests, Object.keys(world.companies)),
    async refuseConnections() {
      if (!server.listening) return;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      for (const socket of sockets) socket.destroy();
      await closed;
    },
    async acceptConnections() {
      if (server.listening || closing) return;
      await listen(address.port);
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        if (churnTimer) clearInterval(churnTimer);
        if (server.listening) server.close(() => resolve());
        else resolve();
        server.closeAllConnections();
        for (const socket of sockets) socket.destroy();
      });
      return closing;
    },
  };
}
