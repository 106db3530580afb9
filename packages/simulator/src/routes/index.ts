/** Every endpoint of the simulated API (spec §4), plus the assumed GET /deals and GET /customers. */
import { analyticsRoutes } from './analytics.ts';
import { calendarRoutes } from './calendar.ts';
import { campaignRoutes } from './campaigns.ts';
import { conversationRoutes } from './conversations.ts';
import { dealRoutes } from './deals.ts';
import { domainRoutes } from './domains.ts';
import { emailRoutes } from './email.ts';
import { hrRoutes } from './hr.ts';
import { listRoutes } from './lists.ts';
import { transactionRoutes } from './transactions.ts';
import type { Route } from './types.ts';
import { vaultRoutes } from './vault.ts';

/** The routes the simulator's Router matches, in order. */
export const ROUTES: readonly Route[] = [
  ...listRoutes,
  ...transactionRoutes,
  ...dealRoutes,
  ...vaultRoutes,
  ...calendarRoutes,
  ...emailRoutes,
  ...conversationRoutes,
  ...campaignRoutes,
  ...analyticsRoutes,
  ...domainRoutes,
  ...hrRoutes,
];
