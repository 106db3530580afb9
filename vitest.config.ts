import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // The workspace packages' own tests (packages/simulator/test) run with the product's.
    include: ['test/**/*.test.ts', 'packages/*/test/**/*.test.ts'],
    // A hang guard, not a speed check: a test that spawns the CLI several times took over 30 s on a
    // 2-core machine running five other busy processes (load average 10); none waits on time.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Test files start their own simulator on port 0 and their own SQLite files, so they can run in parallel;
    // two workers match the 2-core CI machine.
    pool: 'forks',
    maxWorkers: 2,
  },
});
