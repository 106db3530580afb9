/**
 * Job: the changelog for `bizops-sync changes`, read from the mirror (a SQLite file or a PostgreSQL
 * schema; src/notify/changelog-reader.ts).
 */
// The notify face: the changelog reader, without the webhook sender (src/notify/webhooks/).
import type { Config } from '../src/config/index.ts';
import { followStoredChanges, iterateStoredChanges, pruneChangelog, type PruneResult, type StoredChange } from '../src/notify/index.ts';
import { damagedMirrorError, openExistingMirror } from './open-mirror.ts';

/** Options of `changesJob`: an exclusive seq cursor, a type filter, and whether to tail. */
export interface ChangesJobOptions {
  /** Events with seq greater than this. */
  sinceSeq: number;
  /** Event type patterns (`deal.won`, `deal.*`); all when absent. */
  types?: readonly string[];
  /** Keep yielding new events until `signal` aborts. */
  follow?: boolean;
  signal?: AbortSignal;
}

/**
 * Yields the changelog's rows after `sinceSeq` in seq order as stored (`data` undecoded: the
 * `changes` command prints it as it is), one query's rows at a time (then, with `follow`, new ones
 * as they are recorded); a query of 1000 rows runs when the consumer asks for more (a slow consumer
 * holds the reading back; memory stays flat). Closes the mirror when the iteration ends.
 * @throws Error when the mirror does not exist, or an option is invalid; MirrorDamagedError (naming the
 *   file and the remedy) when a page of the changelog cannot be read
 */
export async function* changesJob(dbPath: string, options: ChangesJobOptions): AsyncGenerator<StoredChange[], void, undefined> {
  const connection = await openExistingMirror(dbPath, { readonly: true });
  const types = options.types;
  try {
    if (options.follow) {
      yield* followStoredChanges(connection, { sinceSeq: options.sinceSeq, signal: options.signal, types });
      return;
    }
    // One query's rows in hand at a time: the footprint stays flat however long the changelog is.
    yield* iterateStoredChanges(connection, { sinceSeq: options.sinceSeq, types });
  } catch (error) {
    throw damagedMirrorError(dbPath, error) ?? error;
  } finally {
    await connection.close();
  }
}

/**
 * Prunes the changelog recorded before `before` (`bizops-sync changes prune --before DATE`), as the
 * daemon's retention does: oldest first, in small batches, never past a configured webhook
 * endpoint's or a named consumer's cursor; also the delivery attempts older than their retention.
 * @throws Error when the mirror does not exist
 */
export async function pruneChangesJob(config: Config, before: Date): Promise<PruneResult> {
  const connection = await openExistingMirror(config.dbPath, { hint: 'start `bizops-sync daemon` (or run `bizops-sync backfill`) first' });
  try {
    return await pruneChangelog(connection, { before, endpoints: [...config.webhooks.map((endpoint) => endpoint.name), ...config.sinks.map((sink) => sink.name)] });
  } finally {
    await connection.close();
  }
}
