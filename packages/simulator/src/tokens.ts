/**
 * The simulator's bearer tokens (spec §5): each acts as one employee of one company with a fixed set
 * of scopes. The strings are deterministic so tests, docs and the demo can name them.
 *
 * A missing or unknown token is answered with 401 `{ message }`. The spec leaves this "not shown"
 * (§7: "Status codes ... for a missing or invalid token: not shown"); 401 is what real servers send.
 */

import { SIMULATED_STREAMS } from './streams/index.ts';

/** Every scope named in spec §5.4. */
export const SPEC_SCOPES = [
  'employee:onboardings:read',
  'vault:admin',
  'calendar:write',
  'quality:actions:read',
  'email:messages:write',
  'deals:write',
  'transactions:write',
  'transactions:read',
  'internal:support:read',
  'campaigns:read',
  'analytics:read',
  'threads:read',
  'threads:admin',
  'domains:write',
  'domains:read',
  'hr:write',
  'locations:write',
] as const;

/**
 * The scopes of the simulated lists the spec does not name, from their declarations (`scope`,
 * src/streams/): GET /deals and GET /customers, whose scopes are "not shown", require `deals:read`
 * and `customers:read`; a new list's scope joins them by its declaration alone.
 */
export const ASSUMED_SCOPES: readonly string[] = [...new Set(SIMULATED_STREAMS.map((stream) => stream.scope))].filter((scope) => !(SPEC_SCOPES as readonly string[]).includes(scope));

/** Every scope the simulator knows: the spec's plus the assumed ones; what the `admin` token holds. */
export const ALL_SCOPES: readonly string[] = [...SPEC_SCOPES, ...ASSUMED_SCOPES];

/** The read-only scopes: what the `readOnly` token holds (every simulated list's scope among them). */
export const READ_SCOPES: readonly string[] = [
  ...new Set([
    'employee:onboardings:read',
    'quality:actions:read',
    'transactions:read',
    'internal:support:read',
    'campaigns:read',
    'analytics:read',
    'threads:read',
    'domains:read',
    ...SIMULATED_STREAMS.map((stream) => stream.scope),
  ]),
];

/** The names of the simulator's tokens (see `TOKEN_TABLE`). */
export type TokenName = 'admin' | 'hr' | 'employee' | 'readOnly' | 'noScopes' | 'otherCompany';

/** Token name -> bearer token string. */
export type SimulatorTokens = Record<TokenName, string>;

/**
 * Company keys of the simulated world: A is the main company, B a second one for isolation tests, and
 * `C1`..`CN` the extra companies of the `companies` option (for many-company syncs and benchmarks).
 */
export type CompanyKey = 'A' | 'B' | ExtraCompanyKey;

/** The key of extra company k (1-based): `C1`, `C2`, ... */
export type ExtraCompanyKey = `C${number}`;

/** The name of extra company k's admin token in the request log: `company-1`, `company-2`, ... */
export type ExtraTokenName = `company-${number}`;

/** The employee role a token acts as inside its company (see the world's employees). */
export type EmployeeRole = 'admin' | 'hr' | 'employee' | 'readOnly' | 'noScopes';

/** One simulator token: its bearer string, company, the employee role it acts as, and its scopes (spec §5). */
export interface TokenDefinition {
  name: TokenName | ExtraTokenName;
  token: string;
  company: CompanyKey;
  /** Which seeded employee of that company the token acts as (spec §5.2). */
  role: EmployeeRole;
  scopes: readonly string[];
  description: string;
}

/** The token table: tests, docs and the CLI list it. */
export const TOKEN_TABLE: readonly TokenDefinition[] = [
  {
    name: 'admin',
    token: 'sim-admin-token',
    company: 'A',
    role: 'admin',
    scopes: ALL_SCOPES,
    description:
      'Every scope; company A; a manager who owns email addresses, attends calendar events, is in the support rota and in vault folder 1 (not folder 2).',
  },
  {
    name: 'hr',
    token: 'sim-hr-token',
    company: 'A',
    role: 'hr',
    scopes: ['hr:write', 'employee:onboardings:read', 'threads:read'],
    description: 'hr:write (plus onboarding and thread reads); company A; an HR employee who may review anyone.',
  },
  {
    name: 'employee',
    token: 'sim-employee-token',
    company: 'A',
    role: 'employee',
    scopes: [
      'hr:write',
      'calendar:write',
      'email:messages:write',
      'threads:read',
      'transactions:read',
      'deals:read',
      'customers:read',
      'employee:onboardings:read',
      'analytics:read',
    ],
    description:
      'Company A; an ordinary employee (manager nor HR of anyone) with hr:write, calendar:write, email:messages:write and some reads.',
  },
  {
    name: 'readOnly',
    token: 'sim-read-only-token',
    company: 'A',
    role: 'readOnly',
    scopes: READ_SCOPES,
    description: 'Only read scopes; company A.',
  },
  {
    name: 'noScopes',
    token: 'sim-no-scopes-token',
    company: 'A',
    role: 'noScopes',
    scopes: [],
    description: 'No scopes at all; company A. Every endpoint answers 403.',
  },
  {
    name: 'otherCompany',
    token: 'sim-other-company-token',
    company: 'B',
    role: 'admin',
    scopes: ALL_SCOPES,
    description: 'Every scope; company B: its own data and its own rate budget.',
  },
];

/** The token strings by name. */
export const SIMULATOR_TOKENS: SimulatorTokens = Object.fromEntries(
  TOKEN_TABLE.map((definition) => [definition.name, definition.token]),
) as SimulatorTokens;

/** Looks a bearer token string up in `TOKEN_TABLE` (companies A and B only); undefined when unknown. */
export function findToken(token: string): TokenDefinition | undefined {
  return TOKEN_TABLE.find((definition) => definition.token === token);
}

/** The key of extra company k (1-based), e.g. `extraCompanyKey(3)` = `C3`. */
export function extraCompanyKey(k: number): ExtraCompanyKey {
  return `C${k}`;
}

/**
 * The bearer token of extra company k (1-based): `sim-company-<k>-token`, deterministic and documented
 * so tests, benchmarks and a deployment in another process can name it. It holds every scope and acts
 * as that company's admin employee.
 */
export function extraCompanyToken(k: number): string {
  return `sim-company-${k}-token`;
}

/** The token definitions of extra companies 1..count: one admin token with every scope each. */
export function extraCompanyTokens(count: number): TokenDefinition[] {
  return Array.from({ length: count }, (_, index) => ({
    name: `company-${index + 1}` as ExtraTokenName,
    token: extraCompanyToken(index + 1),
    company: extraCompanyKey(index + 1),
    role: 'admin' as const,
    scopes: ALL_SCOPES,
    description: `Every scope; extra company ${index + 1} (key ${extraCompanyKey(index + 1)}): its own data and its own rate budget.`,
  }));
}

/**
 * A bearer string -> definition map of `TOKEN_TABLE` plus the tokens of extra companies 1..extraCompanies
 * (what the server authenticates against; a Map so 20 companies cost one lookup, not a scan).
 */
export function tokenLookup(extraCompanies: number): ReadonlyMap<string, TokenDefinition> {
  return new Map([...TOKEN_TABLE, ...extraCompanyTokens(extraCompanies)].map((definition) => [definition.token, definition]));
}
