/**
 * What bench/backfill.ts and bench/postgres.ts both measure: the commit path alone (validation,
 * change detection and the page commit of `MirrorStore`, no HTTP) over pages held in memory.
 */
import { transactionListItemSchema } from '../src/client/schemas.ts';
import { openMirrorConnection } from '../src/mirror/open.ts';
import { MirrorStore } from '../src/mirror/mirror-store.ts';
import { transactionsStream } from '../src/streams/definitions.ts';

/** Records per page, as the sync asks for them. */
export const PAGE = 100;

/** `records` as JSON text per page of 100, the way they arrive. */
export function jsonPages(records: readonly unknown[]): string[] {
  const pages: string[] = [];
  for (let offset = 0; offset < records.length; offset += PAGE) pages.push(JSON.stringify(records.slice(offset, offset + PAGE)));
  return pages;
}

/** One pass of the commit path: records per wall second, and this process's CPU time (user + system, ms). */
export interface CommitRun {
  perSecond: number;
  cpuMs: number;
}

/**
 * Records per second of validation, change detection and the page commit (records and checkpoint in
 * one transaction) into a fresh mirror at `location` (a SQLite file path or a PostgreSQL URL).
 */
export async function commitRate(pages: readonly string[], location: string): Promise<number> {
  return (await commitRun(pages, location)).perSecond;
}

/**
 * The commit path over `pages` into a fresh mirror at `location`, timed by the wall clock and by this
 * process's CPU (on SQLite all of the work is this process's: the figure a shared machine sways least).
 */
export async function commitRun(pages: readonly string[], location: string): Promise<CommitRun> {
  const connection = await openMirrorConnection(location, { streams: [transactionsStream] });
  try {
    const store = new MirrorStore(connection);
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    let offset = 0;
    for (const text of pages) {
      const items = (JSON.parse(text) as unknown[]).map((item) => transactionListItemSchema.parse(item));
      offset += items.length;
      await store.transaction(async (tx) => {
        await tx.applyRecords(transactionsStream, items, { scanNumber: 1 });
        await tx.saveRun('transactions', { mode: 'complete', reason: 'backfill', startedAt: '', offset, pages: 0, records: offset, changes: offset });
      });
    }
    const cpu = process.cpuUsage(cpuBefore);
    return { perSecond: offset / ((performance.now() - started) / 1000), cpuMs: (cpu.user + cpu.system) / 1000 };
  } finally {
    await connection.close();
  }
}
