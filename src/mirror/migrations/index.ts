/**
 * Forward-only migrations, applied in order; `PRAGMA user_version` holds how many have run on
 * SQLite, the `schema_version` table on PostgreSQL (src/mirror/postgres-migrate.ts).
 * Each version has its SQLite text (`sql`) and its PostgreSQL text (`postgres`, in ./postgres/),
 * with the same meaning: the same tables, columns, keys, defaults and indexes, with TEXT -> text,
 * INTEGER -> bigint, REAL -> double precision (test/mirror/postgres-migrations.test.ts compares them).
 * Add a migration by adding both files and one line here; never edit one that has shipped.
 */
import { sql as mirror } from './001_mirror.ts';
import { sql as webhooks } from './002_webhooks.ts';
import { sql as writes } from './003_writes.ts';
import { sql as scanOutcome } from './004_scan_outcome.ts';
import { sql as pageTrust } from './005_page_trust.ts';
import { sql as webhookFailures } from './006_webhook_failures.ts';
import { sql as leases } from './007_leases.ts';
import { sql as webhookDelivery } from './008_webhook_delivery.ts';
import { sql as mirrorOnPostgres } from './postgres/001_mirror.ts';
import { sql as webhooksOnPostgres } from './postgres/002_webhooks.ts';
import { sql as writesOnPostgres } from './postgres/003_writes.ts';
import { sql as scanOutcomeOnPostgres } from './postgres/004_scan_outcome.ts';
import { sql as pageTrustOnPostgres } from './postgres/005_page_trust.ts';
import { sql as webhookFailuresOnPostgres } from './postgres/006_webhook_failures.ts';
import { sql as leasesOnPostgres } from './postgres/007_leases.ts';
import { sql as webhookDeliveryOnPostgres } from './postgres/008_webhook_delivery.ts';

export interface Migration {
  version: number;
  name: string;
  /** The migration on SQLite. */
  sql: string;
  /** The same migration on PostgreSQL. */
  postgres: string;
}

export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'mirror', sql: mirror, postgres: mirrorOnPostgres },
  { version: 2, name: 'webhooks', sql: webhooks, postgres: webhooksOnPostgres },
  { version: 3, name: 'writes', sql: writes, postgres: writesOnPostgres },
  { version: 4, name: 'scan-outcome', sql: scanOutcome, postgres: scanOutcomeOnPostgres },
  { version: 5, name: 'page trust: rejected records, record clock', sql: pageTrust, postgres: pageTrustOnPostgres },
  { version: 6, name: 'webhook failures', sql: webhookFailures, postgres: webhookFailuresOnPostgres },
  { version: 7, name: 'leases', sql: leases, postgres: leasesOnPostgres },
  { version: 8, name: 'webhook delivery by record: held events, attempts', sql: webhookDelivery, postgres: webhookDeliveryOnPostgres },
];
