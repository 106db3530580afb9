/**
 * Job: the changelog for `bizops-sync changes`, read from the mirror (a SQLite file or a PostgreSQL
 * schema; src/notify/changelog-reader.ts).
 */
// The notify face: the changelog reader, without the webhook sender (src/notify/webhooks/).
import { followChanges, iterateChanges, type ChangeEvent } from '../src/notify/index.ts';
import { openExistingMirror } from './open-mirror.ts';

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
 * Yields the changelog's events after `sinceSeq` in seq order (then, with `follow`, new ones as they
 * are recorded), read one query of 1000 rows at a time when the consumer asks for more (a slow
 * consumer holds the reading back; memory stays flat). Closes the mirror when the iteration ends.
 * @throws Error when the mirror does not exist, or an option is invalid
 */
export async function* changesJob(dbPath: string, options: ChangesJobOptions): AsyncGenerator<ChangeEvent, void, undefined> {
  const connection = await openExistingMirror(dbPath, { readonly: true });
  const types = options.types;
  try {
    if (options.follow) {
      yield* followChanges(connection, { sinceSeq: options.sinceSeq, signal: options.signal, types });
      return;
    }
    // One row decoded at a time: the footprint stays flat however long the changelog is.
    yield* iterateChanges(connection, { sinceSeq: options.sinceSeq, types });
  } finally {
    await connection.close();
  }
}
