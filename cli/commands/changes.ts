/**
 * `bizops-sync changes [--since SEQ] [--follow] [--expand-created]`: the changelog as JSON lines, for
 * downstream tails, each row's `data` as stored (a created event's record once);
 * `bizops-sync changes prune --before DATE`: the changelog's retention by hand (jobs/changes.ts).
 * Downstream tails run it for a long time: it loads the changelog reader and SQLite when it runs, and
 * nothing of the worker (HTTP client, Redis, queues, metrics; docs/mirror.md "Reading the mirror downstream").
 */
import type { Command } from 'commander';
import type { StoredChange } from '../../src/notify/index.ts';
import { writeLines } from '../line-writer.ts';
import { UsageError } from '../usage-error.ts';
import { configFromEnvironment, CONNECTION_OPTION_HELP, exitCodeForSignal, mirrorPath, shutdownOnSignals } from '../shared.ts';

export function registerChangesCommand(program: Command): void {
  const changes = program
    .command('changes')
    .description('print changelog events as JSON lines (seq, event_id, type, stream, record_id, occurred_at, data)')
    .option('--since <seq>', 'only events after this seq (exclusive); default 0, from the start', '0')
    .option('--follow', 'keep printing new events as they are recorded, until Ctrl-C')
    .option('--type <pattern...>', 'only these event types: deal.won, deal.*, ... (repeatable)')
    .option('--expand-created', 'give created events their changes as every field { old: null, new } (version 1\'s form) instead of the record alone')
    .option('--db <path>', 'the mirror: a file, or a postgres:// URL (default: the connection\'s dbPath: BIZOPS_DB, the config file, or ./data/mirror.db)')
    .option('--connection <name>', CONNECTION_OPTION_HELP)
    .addHelpText('after', '\nA consumer that remembers the last seq it processed resumes exactly: bizops-sync changes --since 1234 --follow')
    .action(async (options: { since: string; follow?: boolean; type?: string[]; db?: string; connection?: string; expandCreated?: boolean }) => {
      if (!/^\d+$/.test(options.since)) throw new UsageError(`--since: must be a whole number (a changelog seq), got "${options.since}"`);
      const [{ changesJob }, { checkKnownEventPatterns, formatStoredChangeLine }] = await Promise.all([import('../../jobs/changes.ts'), import('../../src/notify/index.ts')]);
      // A pattern no event type has would print nothing for ever: refused, naming the known types.
      if (options.type) await checkKnownEventPatterns(options.type, '--type').catch((error: unknown) => Promise.reject(new UsageError((error as Error).message)));
      const shutdown = options.follow ? shutdownOnSignals() : undefined;
      try {
        const batches = changesJob(mirrorPath(options.db, options.connection), { sinceSeq: Number(options.since), types: options.type, follow: options.follow, signal: shutdown?.signal });
        const lineOptions = { expandCreated: options.expandCreated ?? false };
        // Backpressure: a slow consumer makes the reading wait instead of lines piling up in memory.
        await writeLines(process.stdout, mapBatches(batches, (row) => formatStoredChangeLine(row, lineOptions), options.follow ? 0 : 65_536), { chunkChars: options.follow ? 0 : undefined });
        // --follow ends on a signal: 0 after SIGTERM, 130 after Ctrl-C.
        const signalExit = exitCodeForSignal(shutdown?.received());
        if (signalExit !== undefined) process.exitCode = signalExit;
      } finally {
        shutdown?.dispose();
      }
    });

  changes
    .command('prune')
    .description('delete changelog events recorded before DATE, oldest first, never past what a webhook endpoint or a named consumer has not yet received')
    .requiredOption('--before <date>', 'an ISO 8601 date (2026-10-01, midnight UTC) or date-time with a zone (2026-10-01T12:00:00Z)')
    .option('--connection <name>', CONNECTION_OPTION_HELP)
    .addHelpText('after', '\nThe daemon prunes on its own every hour what is older than changes.retainDays (default 30; 0 keeps everything).')
    .action(async (options: { before: string; connection?: string }) => {
      const before = parseBefore(options.before);
      const config = configFromEnvironment({}, options.connection);
      const { pruneChangesJob } = await import('../../jobs/changes.ts');
      const result = await pruneChangesJob(config, before);
      process.stdout.write(
        `pruned ${result.rows} changes (${result.bytes} characters of text)${result.prunedThrough > 0 ? ` through seq ${result.prunedThrough}` : ''}; the changelog starts at seq ${result.oldestSeq}\n`,
      );
      if (result.heldBy) process.stdout.write(`stopped short of ${before.toISOString()}: ${result.heldBy} has not received the events after it\n`);
      if (result.attempts > 0) process.stdout.write(`pruned ${result.attempts} delivery attempts older than 7 days\n`);
    });
}

/** `--before`: a date (midnight UTC) or a date-time with a zone. @throws UsageError naming the option */
function parseBefore(text: string): Date {
  const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(text);
  const dateTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(text);
  const parsed = new Date(dateOnly ? `${text}T00:00:00Z` : text);
  if ((!dateOnly && !dateTime) || Number.isNaN(parsed.getTime())) {
    throw new UsageError(`--before: must be an ISO 8601 date (2026-10-01) or a date-time with a zone (2026-10-01T12:00:00Z), got "${text}"`);
  }
  return parsed;
}

/**
 * The rows' lines, gathered into texts of about `chunkChars` (lines joined by newlines; writeLines
 * ends each with one): one hand-over per chunk rather than per line. 0 yields each batch whole.
 */
async function* mapBatches(batches: AsyncIterable<StoredChange[]>, format: (row: StoredChange) => string, chunkChars: number): AsyncGenerator<string, void, undefined> {
  for await (const rows of batches) {
    let chunk = '';
    for (const row of rows) {
      chunk = chunk.length === 0 ? format(row) : `${chunk}\n${format(row)}`;
      if (chunkChars > 0 && chunk.length >= chunkChars) {
        yield chunk;
        chunk = '';
      }
    }
    if (chunk.length > 0) yield chunk;
  }
}
