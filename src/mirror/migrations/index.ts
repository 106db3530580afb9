/**
 * Forward-only migrations, applied in order; `PRAGMA user_version` holds how many have run on
 * SQLite, the `schema_version` table on PostgreSQL (src/mirror/postgres-migrate.ts).
 *
 * Each version has one text (`sql`), written in the SQL both engines read with SQLite's type names
 * (TEXT, INTEGER, REAL); SQLite runs it as it is, and PostgreSQL runs its translation
 * (`postgresDdl`, src/mirror/sql/postgres-ddl.ts: the type map of src/mirror/sql/column-types.ts),
 * which refuses, naming the word, what PostgreSQL would read otherwise.
 * Add a migration as docs/mirror.md "How to add a migration" says: one file, one line here; never
 * edit one that has shipped.
 */
import { sql as mirror } from './001_mirror.ts';
import { sql as webhooks } from './002_webhooks.ts';
import { sql as writes } from './003_writes.ts';
import { sql as scanOutcome } from './004_scan_outcome.ts';
import { sql as pageTrust } from './005_page_trust.ts';
import { sql as webhookFailures } from './006_webhook_failures.ts';
import { sql as leases } from './007_leases.ts';
import { sql as writeClaims } from './008_write_claims.ts';
import { sql as webhookDelivery } from './009_webhook_delivery.ts';
import { sql as streamFields } from './010_stream_fields.ts';
import { sql as consumers } from './011_consumers.ts';
import { sql as deletionHoldClockProbe } from './012_deletion_hold_clock_probe.ts';
import { sql as verifyListed } from './013_verify_listed.ts';
import { sql as streamConditions } from './014_stream_conditions.ts';
import { sql as partitions } from './015_partitions.ts';
import { sql as partitionSources } from './016_partition_sources.ts';
import { sql as sinks } from './017_sinks.ts';
import { sql as recordClockPartitions } from './018_record_clock_partitions.ts';
import { sql as daemons } from './019_daemons.ts';
import { sql as attemptBatches } from './020_attempt_batches.ts';
import { postgres as textByteOrderPostgres, sql as textByteOrder } from './021_text_byte_order.ts';

/** One migration: its version (`PRAGMA user_version` / `schema_version.version`), a name, its one text. */
export interface Migration {
  version: number;
  name: string;
  /** The migration's text: SQLite runs it as it is, PostgreSQL its `postgresDdl` translation (unless `postgres` is given). */
  sql: string;
  /**
   * What PostgreSQL runs instead of the translation of `sql`, as it is: only for a change PostgreSQL
   * alone needs (`sql` then holds what SQLite runs, possibly nothing). Never a second copy of `sql`.
   */
  postgres?: string;
}

export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'mirror', sql: mirror },
  { version: 2, name: 'webhooks', sql: webhooks },
  { version: 3, name: 'writes', sql: writes },
  { version: 4, name: 'scan-outcome', sql: scanOutcome },
  { version: 5, name: 'page trust: rejected records, record clock', sql: pageTrust },
  { version: 6, name: 'webhook failures', sql: webhookFailures },
  { version: 7, name: 'leases', sql: leases },
  { version: 8, name: 'write claims', sql: writeClaims },
  { version: 9, name: 'webhook delivery by record: held events, attempts', sql: webhookDelivery },
  { version: 10, name: 'field registry', sql: streamFields },
  { version: 11, name: 'consumers, changelog retention', sql: consumers },
  { version: 12, name: 'deletion hold, record clock probe', sql: deletionHoldClockProbe },
  { version: 13, name: 'verify scratch list', sql: verifyListed },
  { version: 14, name: 'stream conditions', sql: streamConditions },
  { version: 15, name: 'partitions: sync state per partition', sql: partitions },
  { version: 16, name: 'partition sources, conditions per partition', sql: partitionSources },
  { version: 17, name: 'sinks, snapshots', sql: sinks },
  { version: 18, name: 'record clock per partition: window, unlisted records', sql: recordClockPartitions },
  { version: 19, name: 'daemons: where each answers, its parts', sql: daemons },
  { version: 20, name: 'attempt batches', sql: attemptBatches },
  { version: 21, name: 'text in byte order', sql: textByteOrder, postgres: textByteOrderPostgres },
];
