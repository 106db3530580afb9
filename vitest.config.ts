import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // The workspace packages' own tests (packages/simulator/test) run with the product's.
    include: ['test/**/*.test.ts', 'packages/*/test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Test files start their own simulator on port 0 and their own SQLite files, so they can run in parallel;
    // two workers match the 2-core CI machine.
    pool: 'forks',
    maxWorkers: 2,
  },
});
