/** `bizops-sync changes [--since SEQ] [--follow]`: the changelog as JSON lines, for downstream tails. */
import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import { openMirror } from '../../src/mirror/database.ts';
import { followChanges, formatChangeLine, readChanges } from '../../src/notify/changelog.ts';
import { UsageError } from '../program.ts';
import { mirrorPath, shutdownOnSignals } from '../shared.ts';

export function registerChangesCommand(program: Command): void {
  program
    .command('changes')
    .description('print changelog events as JSON lines (seq, event_id, type, stream, record_id, occurred_at, data)')
    .option('--since <seq>', 'only events after this seq (exclusive); default 0, from the start', '0')
    .option('--follow', 'keep printing new events as they are recorded, until Ctrl-C')
    .option('--type <pattern...>', 'only these event types: deal.won, deal.*, ... (repeatable)')
    .option('--db <path>', 'the mirror file (default: BIZOPS_DB or ./data/mirror.db)')
    .addHelpText('after', '\nA consumer that remembers the last seq it processed resumes exactly: bizops-sync changes --since 1234 --follow')
    .action(async (options: { since: string; follow?: boolean; type?: string[]; db?: string }) => {
      if (!/^\d+$/.test(options.since)) throw new UsageError(`--since: must be a whole number (a changelog seq), got "${options.since}"`);
      const dbPath = mirrorPath(options.db);
      if (!existsSync(dbPath)) throw new UsageError(`no mirror at ${dbPath} yet: run \`bizops-sync backfill\` first`, 1);
      const db = openMirror(dbPath, { readonly: true });
      const types = options.type;
      try {
        let since = Number(options.since);
        if (options.follow) {
          const shutdown = shutdownOnSignals();
          try {
            for await (const event of followChanges(db, { sinceSeq: since, signal: shutdown.signal, types })) {
              process.stdout.write(`${formatChangeLine(event)}\n`);
            }
          } finally {
            shutdown.dispose();
          }
          return;
        }
        for (;;) {
          const events = readChanges(db, { sinceSeq: since, limit: 1000, types });
          for (const event of events) process.stdout.write(`${formatChangeLine(event)}\n`);
          if (events.length < 1000) break;
          since = events.at(-1)!.seq;
        }
      } finally {
        db.close();
      }
    });
}
