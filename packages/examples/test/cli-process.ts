import { fileURLToPath } from 'node:url';
import { startScript, type CliOutput, type CliProcess } from '../../../tests/support/cli-process.js';

/** The examples package's folder: the working directory `npm run -w @queueflow/examples` gives. */
const EXAMPLES_DIR = fileURLToPath(new URL('..', import.meta.url));

export type { CliOutput, CliProcess } from '../../../tests/support/cli-process.js';

export interface CliOptions {
  /** @defaultValue {@link EXAMPLES_DIR} */
  cwd?: string;
  /** Added to this process's environment, less `REDIS_URL`, `INIT_CWD` and the `OPENAI_*` variables. */
  env?: NodeJS.ProcessEnv;
  /**
   * How long it may run before it is killed and the wait fails with its output: generous, so a
   * loaded machine fails no test. @defaultValue 60000 (ms)
   */
  timeoutMs?: number;
}

/**
 * Starts the built command line `dist/cli/<name>.js` (run `npm run build` first, as `npm test`
 * does) as `npm run <name> -w @queueflow/examples` would: in the package's folder.
 */
export function startCli(name: 'pipeline' | 'taboo', args: string[], options: CliOptions = {}): CliProcess {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_NO_WARNINGS: '1' };
  for (const key of ['REDIS_URL', 'INIT_CWD', 'OPENAI_BASE_URL', 'OPENAI_API_KEY', 'OPENAI_MODEL']) delete env[key];
  Object.assign(env, options.env);
  const script = fileURLToPath(new URL(`../dist/cli/${name}.js`, import.meta.url));
  return startScript(script, args, { cwd: options.cwd ?? EXAMPLES_DIR, env, timeoutMs: options.timeoutMs ?? 60_000 });
}

/** Runs the built command line `name` to its end (see {@link startCli}). */
export function runCli(name: 'pipeline' | 'taboo', args: string[], options: CliOptions = {}): Promise<CliOutput> {
  return startCli(name, args, options).exited;
}

/** The lines of `text`, without the empty last one. */
export function linesOf(text: string): string[] {
  return text.split('\n').filter((line, i, all) => line !== '' || i < all.length - 1);
}
