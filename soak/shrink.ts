/**
 * Shrinking a failing schedule (delta debugging over its steps): drop chunks of steps, halves first,
 * then smaller, keeping a candidate whenever it still fails the same check. Every try is a real run,
 * so shrinking has a time limit; what it has when the limit comes is printed.
 */
import type { ScheduleResult } from './harness.ts';
import type { Schedule } from './schedule.ts';

/** Runs a candidate schedule and says whether it fails the same way (a failure of check `check`). */
export type Reproduces = (candidate: Schedule) => Promise<ScheduleResult>;

/**
 * The smallest schedule found within `deadline` (ms epoch) that still fails check `check`.
 * @returns the schedule and how many runs it took
 */
export async function shrinkSchedule(schedule: Schedule, check: string, run: Reproduces, deadline: number, log: (line: string) => void): Promise<{ schedule: Schedule; runs: number }> {
  let best = schedule;
  let runs = 0;
  let chunk = Math.max(1, Math.ceil(best.steps.length / 2));
  while (chunk >= 1 && Date.now() < deadline) {
    let removedAny = false;
    for (let start = 0; start < best.steps.length && Date.now() < deadline; ) {
      const steps = [...best.steps.slice(0, start), ...best.steps.slice(start + chunk)];
      if (steps.length === best.steps.length) break;
      const candidate: Schedule = { ...best, steps };
      runs += 1;
      const result = await run(candidate);
      if (result.failures.some((failure) => failure.check === check)) {
        log(`shrink: ${steps.length} steps still fail ${check}`);
        best = candidate;
        removedAny = true;
      } else {
        start += chunk;
      }
    }
    if (!removedAny) chunk = Math.floor(chunk / 2);
  }
  return { schedule: best, runs };
}
