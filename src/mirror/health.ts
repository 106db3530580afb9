/**
 * The mirror's health: SQLite's own consistency check (`PRAGMA quick_check`), run at daemon start
 * and by `status` (docs/operations.md "A damaged mirror"), so that a damaged page is reported before
 * anything is written next to it.
 */
import type { MirrorDatabase } from './database.ts';

/** At most this many problems are kept from `PRAGMA quick_check` (SQLite lists one per row). */
const MAX_PROBLEMS = 5;

/**
 * Runs `PRAGMA quick_check(N)` on `db` (O(size of the file): it reads every page, without the index
 * cross-checks of `integrity_check`).
 * @returns `ok`, or the problems SQLite reported, one line, `; `-joined (at most five)
 * @throws SqliteError when the file cannot be read at all (`file is not a database`)
 */
export function mirrorQuickCheck(db: MirrorDatabase): string {
  const rows = db.pragma(`quick_check(${MAX_PROBLEMS})`) as { quick_check: string }[];
  // A row may hold several lines ("*** in database main ***\nPage 8: ..."): one problem a line, so the
  // result fits the one-line messages it goes into.
  const problems = rows
    .flatMap((row) => row.quick_check.split('\n'))
    .map((line) => line.trim())
    .filter((line) => line !== '' && !/^\*\*\* in database \w+ \*\*\*$/.test(line));
  if (problems.length === 1 && problems[0] === 'ok') return 'ok';
  return problems.length > 0 ? problems.slice(0, MAX_PROBLEMS).join('; ') : 'damaged';
}
