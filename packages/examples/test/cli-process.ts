import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The examples package's folder: the working directory `npm run -w @queueflow/examples` gives. */
export const EXAMPLES_DIR = fileURLToPath(new URL('..', import.meta.url));

/** What a command line left: its exit code and output. */
export interface CliOutput {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A command line of this package running: its output so far, and its end. */
export interface CliProcess {
  output(): CliOutput;
  signal(signal: NodeJS.Signals): void;
  /** Resolves once it has exited. @throws Error with the output so far after `timeoutMs` (it is killed). */
  exited: Promise<CliOutput>;
}

export interface CliOptions {
  /** @defaultValue {@link EXAMPLES_DIR} */
  cwd?: string;
  /** Added to this process's environment, less `REDIS_URL`, `INIT_CWD` and the `OPENAI_*` variables. */
  env?: NodeJS.ProcessEnv;
  /** How long it may run before it is killed and the wait fails. @defaultValue 15000 (ms) */
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
  const child = spawn(process.execPath, [script, ...args], { cwd: options.cwd ?? EXAMPLES_DIR, stdio: ['ignore', 'pipe', 'pipe'], env });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timeoutMs = options.timeoutMs ?? 15_000;
  const exited = new Promise<CliOutput>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} ${args.join(' ')} did not exit within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? -1 : null), stdout, stderr });
    });
  });
  return { output: () => ({ code: child.exitCode, stdout, stderr }), signal: (signal) => child.kill(signal), exited };
}

/** Runs the built command line `name` to its end (see {@link startCli}). */
export function runCli(name: 'pipeline' | 'taboo', args: string[], options: CliOptions = {}): Promise<CliOutput> {
  return startCli(name, args, options).exited;
}

/** The lines of `text`, without the empty last one. */
export function linesOf(text: string): string[] {
  return text.split('\n').filter((line, i, all) => line !== '' || i < all.length - 1);
}
