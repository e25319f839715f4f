/**
 * TypeScript test modules (a flows module, a fault test's preload) compiled to JavaScript for the
 * processes a test starts: a `queueflow` process that loads a `.ts` module goes through tsx, whose
 * loader thread and transforms cost ~0.4 s of CPU per process, about half of what a short-lived
 * CLI process costs in all. The suite starts hundreds of them.
 *
 * The JavaScript is written beside its source (`x.ts` → `x.compiled.mjs`, ignored by git), so that
 * package imports resolve as they do from the source. It is one bundle of the module and the
 * local modules it imports; packages stay imports (`packages: 'external'`), so a preload patches
 * the very `@queueflow/worker` module the CLI then loads. Built once per test process, from the
 * sources as they are now: a stale file can never be loaded.
 *
 * The CLI's own loading of `.ts` modules through tsx keeps its tests (tests/cli/cli.int.test.ts).
 */
import { renameSync, writeFileSync } from 'node:fs';
import { buildSync } from 'esbuild';

/** Compiled paths by source path, for this process. */
const compiled = new Map<string, string>();

/**
 * The path of `path` compiled to JavaScript when it is a TypeScript module (built on the first
 * call in this process), else `path` itself.
 * @throws Error with esbuild's messages when the module does not compile.
 */
export function compiledModule(path: string): string {
  if (!/\.[cm]?ts$/.test(path)) return path;
  let out = compiled.get(path);
  if (out === undefined) {
    out = path.replace(/\.[cm]?ts$/, '.compiled.mjs');
    const { outputFiles } = buildSync({
      entryPoints: [path],
      bundle: true,
      packages: 'external',
      format: 'esm',
      platform: 'node',
      target: 'node20',
      sourcemap: 'inline',
      write: false,
      logLevel: 'silent',
    });
    // Written under a name of this process, then renamed: test files running at the same time
    // may compile the same module, and none may load a half-written file.
    const partial = `${out}.${process.pid}`;
    writeFileSync(partial, outputFiles[0]!.contents);
    renameSync(partial, out);
    compiled.set(path, out);
  }
  return out;
}
