/**
 * Creating the directory a SQLite mirror file goes in, one level at a time.
 *
 * Node's `mkdirSync(dir, { recursive: true })` never returns for a directory under a pseudo file
 * system that refuses new entries with ENOENT (`/proc/nope`): its native loop creates the parent,
 * finds it there (EEXIST), tries the child again, gets ENOENT again, and so on, on the main thread,
 * so neither a timer nor SIGTERM ever runs again (the process spun at 50-70% CPU until killed). This
 * walk tries each missing level once and throws the first refusal: a path that cannot be created is
 * a configuration error, not something to try again (docs/operations.md "Start-up failures").
 */
import { mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Makes sure `directory` exists, creating each missing level once, from the deepest existing one.
 * @throws the `mkdirSync`/`statSync` error (`code` ENOENT, ENOTDIR, EACCES, EROFS, EEXIST...) of
 *   the first level that could not be created, or ENOTDIR when an existing level is not a
 *   directory (a file used as a directory)
 */
export function ensureMirrorDirectory(directory: string): void {
  const missing: string[] = [];
  let level = directory;
  for (;;) {
    const found = statSync(level, { throwIfNoEntry: false });
    if (found) {
      if (!found.isDirectory()) throw Object.assign(new Error(`ENOTDIR: ${level} is a file, not a directory`), { code: 'ENOTDIR', path: level });
      break;
    }
    missing.push(level);
    const parent = dirname(level);
    if (parent === level) break; // the root: nothing above it
    level = parent;
  }
  // Shallowest first; each level tried once. EEXIST from a directory another process just made is fine.
  for (const path of missing.reverse()) {
    try {
      mkdirSync(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST' && statSync(path, { throwIfNoEntry: false })?.isDirectory()) continue;
      throw error;
    }
  }
}
