import { spawn } from 'node:child_process';

/** What a command line left: its exit code (-1 when killed by a signal) and output. */
export interface CliOutput {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A command line running: its output so far, and its end. */
export interface CliProcess {
  output(): CliOutput;
  signal(signal: NodeJS.Signals): void;
  /** Resolves once it has exited. @throws Error with the output so far after its deadline (it is killed). */
  exited: Promise<CliOutput>;
}

export interface ScriptOptions {
  /** Working directory. @defaultValue this process's */
  cwd?: string;
  /** The whole environment of the process. */
  env: NodeJS.ProcessEnv;
  /** How long it may run before it is killed and `exited` rejects, in ms. */
  timeoutMs: number;
}

/**
 * Runs the Node script `script` with `args` in a process of its own, as a user's shell would,
 * with a deadline: a command that hangs fails the test instead of blocking the suite.
 */
export function startScript(script: string, args: string[], options: ScriptOptions): CliProcess {
  return startCommand(process.execPath, [script, ...args], options);
}

/**
 * Runs `command` (an executable on PATH or a path, e.g. `npm`) with `args` in a process of its
 * own, no shell, with a deadline (see {@link startScript}).
 */
export function startCommand(command: string, args: string[], options: ScriptOptions): CliProcess {
  const child = spawn(command, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: options.env,
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<CliOutput>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `${command} ${args.join(' ')} did not exit within ${options.timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`,
        ),
      );
    }, options.timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? -1 : null), stdout, stderr });
    });
  });
  return { output: () => ({ code: child.exitCode, stdout, stderr }), signal: (signal) => child.kill(signal), exited };
}
