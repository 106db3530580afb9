/** Every endpoint of the simulated API (spec §4), plus the assumed GET /deals and GET /customers. */
import { listRoutes } from './lists.ts';
import type { Route } from './types.ts';

export const ROUTES: readonly Route[] = [...listRoutes];
