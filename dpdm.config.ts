// The import-cycle check of `npm run lint`: no import cycles, type imports included. `transform`
// stays off, so `import type` edges count: a cycle made only of type imports still ties the
// modules' declarations together and is a sign the shared types want a module of their own. Built output and dependencies are left out: a package reached through
// another's `@queueflow/*` import resolves to its dist/, which its own src/ entry already covers.
export default {
  files: ['packages/runtime/src/**/*.ts', 'packages/worker/src/**/*.ts', 'packages/examples/src/**/*.ts'],
  exclude: '/(node_modules|dist)/',
  transform: false,
  tree: false,
  warning: false,
  circular: true,
  progress: false,
  exitCode: 'circular:1',
};
