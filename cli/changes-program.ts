/**
 * `bizops-sync changes` on its own: the program with only the changes command, so that a downstream
 * tail loads the changelog reader and SQLite, not the worker's libraries (HTTP client, Redis, queues,
 * metrics): about half the memory of the full program (docs/mirror.md "Reading the mirror
 * downstream"). main.ts chooses it when the first argument is `changes`.
 */
import { Command } from 'commander';
import { registerChangesCommand } from './commands/changes.ts';

/** The program with the changes command alone (its options and help as in the full program). */
export function buildChangesProgram(): Command {
  const program = new Command('bizops-sync').showHelpAfterError('(run with --help for usage)').exitOverride();
  registerChangesCommand(program);
  return program;
}
