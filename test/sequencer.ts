/**
 * The order test files start in (vitest.config.ts `sequence.sequencer`), so the workers finish
 * together: the files that took at least {@link LONG_MS} last time first, longest first, whatever
 * their project (vitest's own order runs the projects one after the other, which starts the long
 * daemon and CLI files of `sqlite` near the end of a run); then the others project by project,
 * longest first, so a worker that does not isolate files (`isolate: false`) goes on with the next
 * file of its project instead of being replaced (vitest reuses a worker only for the same project).
 * Durations are the last run's (vitest's results cache, node_modules/.vite/vitest); files without
 * one (a first run, a new file) start first, larger files first, as vitest orders them.
 */
import { statSync } from 'node:fs';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

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
      const result = cache.getTestSpecificationResult(spec);
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

/** The file's size in bytes (0 when it cannot be read). */
function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}
