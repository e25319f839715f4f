import { defineConfig } from 'vitest/config';
import { SlowFirstSequencer } from './tests/support/slow-first-sequencer.js';

/** The packages' builds (`packages/<name>/dist/`), as vitest resolves their modules. */
const BUILT_PACKAGES = /\/packages\/[^/]+\/dist\//;

/** Test files that mock a module of a build (`vi.mock`): each runs in a process of its own. */
const MOCKING_FILES = ['tests/conformance/retry.int.test.ts'];

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
    // The longest files start first, so that none ends a pass alone (slow-first-sequencer.ts).
    sequence: { sequencer: SlowFirstSequencer },
    // The packages' builds are loaded by Node itself, not through vitest's module runner: the
    // runner transforms and evaluates each of their modules again in every test process.
    server: { deps: { external: [BUILT_PACKAGES] } },
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['packages/*/test/**/*.test.ts', 'tests/**/*.test.ts'],
          exclude: ['**/*.int.test.ts', '**/node_modules/**'],
          // Test files share their worker process (each new process re-imports the packages:
          // ~0.6 s of CPU per file). They keep no state between files: the warning handler is
          // set again before each test (quiet-warnings.ts), and each file closes the engines,
          // workers and servers it starts.
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['packages/*/test/**/*.int.test.ts', 'tests/**/*.int.test.ts'],
          exclude: [...MOCKING_FILES, '**/node_modules/**'],
          // As the unit tests: a process per file cost ~1 s of CPU each (imports, setup) and made
          // a pass take 674 s here; sharing them, 442 s (CPU 1,210 → 780 s).
          isolate: false,
        },
      },
      {
        extends: true,
        // A process per file, with the builds through the module runner: these files replace
        // modules of a build (vi.mock), which only the runner can do, and only for their file.
        test: {
          name: 'mocking',
          include: MOCKING_FILES,
          isolate: true,
          server: { deps: { inline: [BUILT_PACKAGES] } },
        },
      },
    ],
  },
});
