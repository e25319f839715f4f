import { defineConfig } from 'vitest/config';

// One run for every package: `*.test.ts` need nothing, `*.int.test.ts` need Redis (see
// tests/support/redis.ts for how a server is found or started).
export default defineConfig({
  test: {
    globalSetup: ['tests/support/global-setup.ts'],
    setupFiles: ['tests/support/quiet-warnings.ts'],
    // Generous: only a failing test waits this long, and a machine busy with other work must fail
    // none. Deadlines inside tests (a process's exit, a run's end) are shorter, so that a failure
    // says what it waited for and prints the process's output.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    fileParallelism: true,
    // More files than cores: most integration tests wait (on processes, lapses, failovers), and
    // with 2 workers the CPU sat ~40 % idle. Measured on this 2-core machine: a pass took 775 s
    // with 2 workers, 441 s with 6 (509 s with one core kept busy), every test passing.
    maxWorkers: 6,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['packages/*/test/**/*.test.ts', 'tests/**/*.test.ts'],
          exclude: ['**/*.int.test.ts', '**/node_modules/**'],
          // Unit test files share their worker process (each new process re-imports the packages:
          // ~0.6 s of CPU per file). They keep no state between files: the warning handler is
          // set again before each test (quiet-warnings.ts).
          isolate: false,
        },
      },
      {
        extends: true,
        // A process per file: integration tests mock modules (vi.mock) and start engines,
        // workers and servers that must not outlive their file.
        test: { name: 'integration', include: ['packages/*/test/**/*.int.test.ts', 'tests/**/*.int.test.ts'] },
      },
    ],
  },
});
