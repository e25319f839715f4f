import { defineConfig } from 'vitest/config';

// One run for every package: `*.test.ts` need nothing, `*.int.test.ts` need Redis (see
// tests/support/redis.ts for how a server is found or started).
export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts', 'tests/**/*.test.ts'],
    globalSetup: ['tests/support/global-setup.ts'],
    setupFiles: ['tests/support/quiet-warnings.ts'],
    // Generous: only a failing test waits this long, and a machine busy with other work must fail
    // none. Deadlines inside tests (a process's exit, a run's end) are shorter, so that a failure
    // says what it waited for and prints the process's output.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
  },
});
