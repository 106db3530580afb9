/**
 * The order test files start in (vitest.config.ts `sequence.sequencer`), so the workers finish
 * together: the files that took at least {@link LONG_MS} last time first, longest first, whatever
 * their project (vitest's own order runs the projects one after the other, which starts the long
 * daemon and CLI files of `sqlite` near the end of a run); then the others project by project,
 * longest first, so a worker that does not isolate files (`isolate: false`) goes on with the next
 * file of its project instead of being replaced (vitest reuses a worker only for the same project).
 * Durations are the last run's (vitest's results cache, node_modules/.vite/vitest). A fresh clone
 * (CI) has no cache: there test/durations.json stands in, each file's duration (ms) in one whole run,
 * scaled to a quiet 2-core machine (only the order matters; a stale figure costs nothing but order).
 * Files in neither (a new file) start first, larger files first, as vitest orders them.
 */
import { readFileSync, statSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** test/durations.json: repository-relative test file path -> ms. */
const RECORDED: Readonly<Record<string, number>> = (() => {
  try {
    return JSON.parse(readFileSync(new URL('./durations.json', import.meta.url), 'utf8')) as Record<string, number>;
  } catch {
    return {};
  }
})();

/** A file that ran at least this long last time (ms) starts before the short ones of every project. */
export const LONG_MS = 10_000;

/** Vitest's {@link BaseSequencer} with the order described above ({@link LongestFirstSequencer.sort}). */
export default class LongestFirstSequencer extends BaseSequencer {
  /**
   * @param files every test file of the run, of every project
   * @returns the same files: without a cached result (larger files first); then a file that failed
   *   last time; then those of at least {@link LONG_MS}, longest first; then the rest by project,
   *   longest first
   */
  override sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const cache = this.ctx.cache;
    const rank = (spec: TestSpecification): [number, string, number] => {
      const result = cache.getTestSpecificationResult(spec) ?? recorded(spec, this.ctx.config.root);
      if (!result) return [0, '', sizeOf(spec.moduleId)];
      if (result.failed) return [1, '', result.duration];
      if (result.duration >= LONG_MS) return [2, '', result.duration];
      return [3, spec.project.name, result.duration];
    };
    const ranks = new Map(files.map((spec) => [spec, rank(spec)]));
    return Promise.resolve(
      [...files].sort((a, b) => {
        const [groupA, projectA, weightA] = ranks.get(a)!;
        const [groupB, projectB, weightB] = ranks.get(b)!;
        return groupA - groupB || projectA.localeCompare(projectB) || weightB - weightA;
      }),
    );
  }
}

/** The file's duration from test/durations.json, as a cached result would give it; undefined when not there. */
function recorded(spec: TestSpecification, root: string): { failed: boolean; duration: number } | undefined {
  const duration = RECORDED[relative(root, spec.moduleId)];
  return duration === undefined ? undefined : { failed: false, duration };
}

/** The file's size in bytes (0 when it cannot be read). */
function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}
