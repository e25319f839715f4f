/**
 * How the CLI tests run the `queueflow` command as a user runs it: the built CLI
 * (packages/worker/dist/cli.js) in a child process with a deadline, and what its output must be.
 */
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { compiledModule } from '../support/compiled-module.js';
import { startScript, type CliOutput, type CliProcess } from '../support/cli-process.js';
import { errorLine, queueflowProgram } from '../../packages/worker/dist/cli/program.js';
import { redisUrl } from '../support/test-redis.js';

const CLI = fileURLToPath(new URL('../../packages/worker/dist/cli.js', import.meta.url));
/** The CLI tests' flows module as a user writes it: loaded by the CLI through tsx. */
export const FLOWS_SOURCE = fileURLToPath(new URL('./cli-flows.ts', import.meta.url));
/** The same, compiled (tests/support/compiled-module.ts): what most commands load, without tsx. */
export const FLOWS = compiledModule(FLOWS_SOURCE);
/** A TypeScript module that exports no flow (loaded through tsx). */
export const NO_FLOWS = fileURLToPath(new URL('./no-flows.ts', import.meta.url));
export const MISSING_FLOWS = fileURLToPath(new URL('./no-such-flows.js', import.meta.url));

/** A run id as the engine makes them (nanoid). */
export const RUN_ID = /^[0-9A-Za-z]{21}$/; // letters and digits only: never read as an option

/**
 * How long a `queueflow` command may take before it is killed and its test fails with its
 * output, in ms: generous, so that a loaded machine (other tests, other work) fails no test;
 * a hang still fails, and each test's own timeout (120 s) is longer.
 */
const EXIT_DEADLINE_MS = 60_000;

/**
 * Starts `queueflow <args>` in a process of its own (no `--import tsx`: the CLI loads a `.ts`
 * flows module through tsx itself; FLOWS_SOURCE tests that), killed after `timeoutMs`.
 */
export function startQueueflow(
  args: string[],
  timeoutMs = EXIT_DEADLINE_MS,
  moreEnv: NodeJS.ProcessEnv = {},
): CliProcess {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_NO_WARNINGS: '1', ...moreEnv };
  delete env.REDIS_URL; // every command names its Redis with --redis
  return startScript(CLI, args, { env, timeoutMs });
}

type Program = ReturnType<typeof queueflowProgram>;

/**
 * What `queueflow <args>` prints and its exit code when its arguments are refused, found in this
 * process: the CLI's own program (cli/program.ts) parses them, up to where a command's action
 * would start. For checks of arguments and options, each of which would otherwise cost a process
 * (~0.4 s of CPU); what a real process does with the exit code and the error is tested with one.
 * @throws Error when the arguments are accepted: running the action takes a process of its own.
 */
export async function refusedArguments(args: string[]): Promise<CliOutput> {
  let stdout = '';
  let stderr = '';
  const captured = (command: Program): void => {
    // As on a pipe: no terminal width, no colours.
    command.exitOverride().configureOutput({
      writeOut: (text) => (stdout += text),
      writeErr: (text) => (stderr += text),
      getOutHelpWidth: () => 80,
      getErrHelpWidth: () => 80,
      getOutHasColors: () => false,
      getErrHasColors: () => false,
    });
    for (const sub of command.commands) captured(sub);
  };
  const program = queueflowProgram();
  captured(program);
  // After the program's own checks (hooks run in the order added): no action runs here.
  const accepted = new Error(`queueflow ${args.join(' ')}: arguments accepted, the action would run`);
  program.hook('preAction', () => {
    throw accepted;
  });
  try {
    await program.parseAsync(args, { from: 'user' });
  } catch (error) {
    if (error === accepted) throw error;
    // exitOverride's CommanderError: commander would have called process.exit with its code.
    const { code, exitCode } = error as { code?: unknown; exitCode?: unknown };
    if (typeof code === 'string' && code.startsWith('commander.') && typeof exitCode === 'number') {
      return { code: exitCode, stdout, stderr };
    }
    return { code: 1, stdout, stderr: `${stderr}${errorLine(error)}\n` }; // as cli.ts ends
  }
  throw accepted;
}

/** Runs `queueflow <args>` to its end. @throws Error with the output when it has not exited after `timeoutMs`. */
export function queueflow(args: string[], timeoutMs = EXIT_DEADLINE_MS): Promise<CliOutput> {
  return startQueueflow(args, timeoutMs).exited;
}

/** `--redis <suite Redis> --prefix <prefix>` */
export function at(prefix: string): string[] {
  return ['--redis', redisUrl(), '--prefix', prefix];
}

/** What the CLI prints for a JSON value. */
export function pretty(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** Stdout parsed as JSON; the whole output in the error when it is not. */
export function parsed<T>(out: CliOutput): T {
  try {
    return JSON.parse(out.stdout) as T;
  } catch {
    throw new Error(`expected JSON on stdout, got (exit ${out.code}):\nstdout: ${out.stdout}\nstderr: ${out.stderr}`);
  }
}

/** Stdout holds `value` as JSON and nothing else (that is: `value` printed as the CLI prints it). */
export function expectJsonOutput(out: CliOutput): void {
  expect(out.stdout).toBe(pretty(parsed(out)));
}

/** The first line of stderr (commander adds the command's usage after it). */
export function firstLine(text: string): string {
  return text.split('\n')[0]!;
}
