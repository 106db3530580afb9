/**
 * Forward-only migrations, applied in order; `PRAGMA user_version` holds how many have run.
 * Add a migration by adding a file and one line here; never edit one that has shipped.
 */
import { sql as mirror } from './001_mirror.ts';
import { sql as webhooks } from './002_webhooks.ts';
import { sql as writes } from './003_writes.ts';
import { sql as scanOutcome } from './004_scan_outcome.ts';
import { sql as pageTrust } from './005_page_trust.ts';
import { sql as webhookFailures } from './006_webhook_failures.ts';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'mirror', sql: mirror },
  { version: 2, name: 'webhooks', sql: webhooks },
  { version: 3, name: 'writes', sql: writes },
  { version: 4, name: 'scan-outcome', sql: scanOutcome },
  { version: 5, name: 'page trust: rejected records, record clock', sql: pageTrust },
  { version: 6, name: 'webhook failures', sql: webhookFailures },
];
