import { defineConfig } from 'vitest/config';

// One run for every package: `*.test.ts` need nothing, `*.int.test.ts` need Redis (see
// tests/support/redis.ts for how a server is found or started).
export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts', 'tests/**/*.test.ts'],
    globalSetup: ['tests/support/global-setup.ts'],
    setupFiles: ['tests/support/quiet-warnings.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
  },
});
