import { defineConfig } from 'vitest/config';

// The client package's own tests, run alone (`npm test -w @bizops-sync/client`); the root config runs them
// too, as part of `npm test`. Each test starts its own simulator and daemon on port 0.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});
